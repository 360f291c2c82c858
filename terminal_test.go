package acphost

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTerminalLifecycle(t *testing.T) {
	dir := t.TempDir()
	opts := ACPOptions{Dir: dir, Terminal: &TerminalOptions{}}
	res := serviceCalls(t, opts,
		fakeagent.Call{Method: "terminal/create", Params: raw(`{"command":"sh","args":["-c","printf 'héllo'; pwd; exit 3"],"outputByteLimit":7}`)},
		fakeagent.Call{Method: "terminal/wait_for_exit", Params: raw(`{"terminalId":"term-1"}`)},
		fakeagent.Call{Method: "terminal/output", Params: raw(`{"terminalId":"term-1"}`)},
		fakeagent.Call{Method: "terminal/create", Params: raw(`{"command":"sleep","args":["100"]}`)},
		fakeagent.Call{Method: "terminal/kill", Params: raw(`{"terminalId":"term-2"}`)},
		fakeagent.Call{Method: "terminal/wait_for_exit", Params: raw(`{"terminalId":"term-2"}`)},
		fakeagent.Call{Method: "terminal/release", Params: raw(`{"terminalId":"term-2"}`)},
		fakeagent.Call{Method: "terminal/output", Params: raw(`{"terminalId":"term-2"}`)},
	)
	assert.JSONEq(t, `{"terminalId":"term-1"}`, string(res[0].Result))
	assert.JSONEq(t, `{"exitCode":3,"signal":null}`, string(res[1].Result))
	var out struct {
		Output     string
		Truncated  bool
		ExitStatus *struct{ ExitCode int }
	}
	require.NoError(t, jsonUnmarshal(res[2].Result, &out))
	assert.True(t, out.Truncated)
	assert.Equal(t, dir[len(dir)-6:]+"\n", out.Output, "the tail of the output, in the session dir")
	require.NotNil(t, out.ExitStatus)
	assert.Equal(t, 3, out.ExitStatus.ExitCode)
	assert.Contains(t, string(res[5].Result), `"signal":"SIGTERM"`)
	assert.Equal(t, CodeResourceNotFound, errorCode(t, res[7]), "a released terminal is gone")
}

func TestTerminalCwdMustBeInsideRoots(t *testing.T) {
	res := serviceCalls(t, ACPOptions{Dir: t.TempDir(), Terminal: &TerminalOptions{}},
		fakeagent.Call{Method: "terminal/create", Params: raw(`{"command":"ls","cwd":` + strconv.Quote(t.TempDir()) + `}`)})
	assert.Equal(t, CodeInvalidParams, errorCode(t, res[0]))
}

func TestTerminalsKilledOnClose(t *testing.T) {
	dir := t.TempDir()
	pidFile := dir + "/pid"
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Request: &fakeagent.Call{Method: "terminal/create", Params: raw(`{"command":"sh","args":["-c","echo $$ > ` + pidFile + `; exec sleep 100"]}`)}},
	}}}}
	c, err := startFake(t, script, ACPOptions{Dir: dir, Terminal: &TerminalOptions{}})
	require.NoError(t, err)
	_, err = c.Generate(Request{Prompt: "x"})
	require.NoError(t, err)
	var pid int
	eventually(t, "the command to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	require.True(t, groupAlive(pid))
	require.NoError(t, c.Close())
	eventually(t, "the terminal's process to end", func() bool { return !processRunning(pid) })
}
