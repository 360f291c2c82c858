package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/fakeagent"
)

// Each part of an error is said once: a step wrapping an *RPCError that
// names the same method, or any error with the package's prefix.
func TestErrorsSayEachPartOnce(t *testing.T) {
	t.Parallel()
	_, _, err := tryConnectFake(t, fakeagent.Script{SetModeFails: true}, ACPOptions{Mode: "code"})
	require.Error(t, err)
	msg := err.Error()
	assert.Equal(t, 1, strings.Count(msg, "acphost:"), msg)
	var rpc *RPCError
	assert.True(t, errors.As(err, &rpc), "the chain is kept")

	wrapped := wrapOp("initialize", &RPCError{Method: "initialize", Code: -32601, Message: "Method not found"})
	assert.Equal(t, "acphost: initialize: agent error -32601: Method not found", wrapped.Error())
	assert.Equal(t, "acphost: restarting the agent: context canceled", wrapOp("restarting the agent", context.Canceled).Error())
}

func TestARefusedModeNamesTheAgentsModes(t *testing.T) {
	t.Parallel()
	modes := raw(`{"modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]}}`)
	c, _ := connectFake(t, fakeagent.Script{NewSessionResult: modes, SetModeFails: true}, ACPOptions{})
	err := c.Session().SetMode(context.Background(), "bogus")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the agent's modes: ask, code")
	var rpc *RPCError
	assert.True(t, errors.As(err, &rpc))
}

// TestAttackRPCErrorMessageIsBounded: an agent's error message and data
// reach Error() cut short and without control characters (an escape
// sequence, a newline that fakes a log line); the fields keep them whole.
func TestAttackRPCErrorMessageIsBounded(t *testing.T) {
	msg := "\x1b]0;pwned\x07line one\nfake: log line " + strings.Repeat("m", 1<<20)
	data := json.RawMessage(`{"d":"` + strings.Repeat("x", 1<<20) + `"}`)
	e := &RPCError{Code: -32000, Message: msg, Data: data, Method: "session/new"}
	s := e.Error()
	if len(s) > 2048 {
		t.Errorf("Error() is %d bytes", len(s))
	}
	if strings.ContainsAny(s, "\x1b\x07\n") {
		t.Errorf("Error() carries control characters: %q", s[:200])
	}
	if !strings.HasPrefix(s, "acphost: session/new: agent error -32000: ") {
		t.Errorf("Error() = %.80q", s)
	}
	if e.Message != msg || len(e.Data) != len(data) {
		t.Error("the fields were cut")
	}
	plain := &RPCError{Code: -32601, Message: "Method not found"}
	if got := plain.Error(); got != "acphost: agent error -32601: Method not found" {
		t.Errorf("a plain message changed: %q", got)
	}
}

// TestAttackStderrLineInErrorsIsBounded: the stderr line an ExitError or
// ProtocolError shows is the agent's words: bounded, without control
// characters; Stderr keeps the tail whole.
func TestAttackStderrLineInErrorsIsBounded(t *testing.T) {
	tail := "earlier\n\x1b[2J\x1b]0;pwned\x07" + strings.Repeat("s", 8<<10) + "\n"
	for _, err := range []error{&ExitError{ExitCode: 1, Stderr: tail}, &ProtocolError{Msg: "bad", Stderr: tail}} {
		s := err.Error()
		if len(s) > 1024 || strings.ContainsAny(s, "\x1b\x07") {
			t.Errorf("%T: %d bytes: %.120q", err, len(s), s)
		}
	}
	if got := (&ExitError{ExitCode: 3, Stderr: "boom\n"}).Error(); got != "acphost: agent exited with status 3: boom" {
		t.Errorf("a plain line changed: %q", got)
	}
}

// An agent that exits before it reads anything is reported by its exit
// (status and stderr), not by the broken pipe its start-up call met.
// So is one that answers initialize and exits before it reads session/new.
func TestAgentDeadAtStartReportsItsExit(t *testing.T) {
	const initializedThenGone = `IFS= read -r line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}\n' "$id"
echo gone >&2; exit 3`
	for name, script := range map[string]string{"before initialize": "echo gone >&2; exit 3", "after initialize": initializedThenGone} {
		t.Run(name, func(t *testing.T) {
			for range 50 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := Start(ctx, ACPOptions{Command: "/bin/sh", Args: []string{"-c", script}})
				cancel()
				var exit *ExitError
				require.ErrorAs(t, err, &exit)
				require.Equal(t, 3, exit.ExitCode)
				require.Contains(t, err.Error(), "gone")
			}
		})
	}
}
