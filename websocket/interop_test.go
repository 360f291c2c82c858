//go:build unix

package websocket

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// The TypeScript SDK's own WebSocket client against our Bridge. Opt in
// with ACPHOST_WS_INTEROP=1 after interop/wsclient/install.sh; opted in,
// a missing node or package fails the test rather than skipping it.
func TestInteropTypeScriptClient(t *testing.T) {
	if os.Getenv("ACPHOST_WS_INTEROP") != "1" {
		t.Skip("SKIPPED: the TypeScript SDK interop test runs only with ACPHOST_WS_INTEROP=1 (after interop/wsclient/install.sh)")
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "ACPHOST_WS_INTEROP=1 but node is not on PATH")
	dir, err := filepath.Abs("../interop/wsclient")
	require.NoError(t, err)
	for _, p := range []string{"@agentclientprotocol/sdk", "ws", "zod"} {
		_, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json"))
		require.NoError(t, err, "ACPHOST_WS_INTEROP=1 but %s is not installed: run interop/wsclient/install.sh", p)
	}
	s := serveFake(t, fakeagent.Script{Turns: []fakeagent.Turn{turn(
		fakeagent.Ask(fakeagent.PermissionParams("t1", "Run a command", "execute",
			fakeagent.Option{ID: "allow", Name: "Allow", Kind: "allow_once"},
			fakeagent.Option{ID: "deny", Name: "Deny", Kind: "reject_once"})),
		fakeagent.Say(fakeagent.Text("hello from fakeagent, answer={{answer}}")),
	)}}, nil)

	run := func(token string) ([]byte, []byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "client.mjs", s.url(), token, "hi")
		cmd.Dir = dir
		var stderr testutil.SyncBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return out, []byte(stderr.String()), err
	}
	out, stderr, err := run(testToken)
	require.NoError(t, err, "node client.mjs: %s", stderr)
	var got struct {
		Initialize struct {
			ProtocolVersion int `json:"protocolVersion"`
		} `json:"initialize"`
		SessionID string `json:"sessionId"`
		Result    struct {
			StopReason string `json:"stopReason"`
		} `json:"result"`
		Updates []struct {
			SessionUpdate string `json:"sessionUpdate"`
			Content       struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"updates"`
		Permissions []string `json:"permissions"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	assert.Equal(t, 1, got.Initialize.ProtocolVersion)
	assert.Equal(t, "s1", got.SessionID)
	assert.Equal(t, "end_turn", got.Result.StopReason)
	assert.Equal(t, []string{"Run a command"}, got.Permissions)
	require.NotEmpty(t, got.Updates)
	last := got.Updates[len(got.Updates)-1]
	assert.Equal(t, "agent_message_chunk", last.SessionUpdate)
	assert.Equal(t, "hello from fakeagent, answer=allow", last.Content.Text)

	_, stderr, err = run("wrong")
	require.Error(t, err, "a wrong token fails the TypeScript client")
	assert.Contains(t, string(stderr), "401")
	eventually(t, "the bridge to stop the client's agent", func() bool { return len(s.b.pids()) == 0 })
}
