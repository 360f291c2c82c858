package acphost

import (
	"os"
	"strconv"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/testutil"

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
	killedBy := "SIGTERM"
	if autoContainment(t) == ContainPIDNamespace {
		killedBy = "SIGKILL" // a namespace's PID 1 ignores a SIGTERM it does not handle (SPEC.md, known limits)
	}
	assert.Contains(t, string(res[5].Result), `"signal":"`+killedBy+`"`)
	assert.Equal(t, acp.CodeResourceNotFound, errorCode(t, res[7]), "a released terminal is gone")
}

func TestTerminalCwdMustBeInsideRoots(t *testing.T) {
	res := serviceCalls(t, ACPOptions{Dir: t.TempDir(), Terminal: &TerminalOptions{}},
		fakeagent.Call{Method: "terminal/create", Params: raw(`{"command":"ls","cwd":` + strconv.Quote(t.TempDir()) + `}`)})
	assert.Equal(t, acp.CodeInvalidParams, errorCode(t, res[0]))
}

func TestTerminalsKilledOnClose(t *testing.T) {
	dir := t.TempDir()
	pidFile := dir + "/pid"
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Request: &fakeagent.Call{Method: "terminal/create", Params: raw(`{"command":"sh","args":["-c","echo \"$$ $(readlink /proc/self/ns/pid)\" > ` + pidFile + `; exec sleep 100"]}`)}},
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
		pid, err = testutil.HostPID(string(b))
		return err == nil && pid > 0
	})
	require.True(t, groupAlive(pid))
	require.NoError(t, c.Close())
	eventually(t, "the terminal's process to end", func() bool { return !processRunning(pid) })
}

// An agent asking for no output limit (0) still gets the host's: it cannot
// make the host keep a flood.
func TestTerminalOutputIsCappedByTheHost(t *testing.T) {
	flood := `{"command":"sh","args":["-c","head -c 5000000 /dev/zero | tr '\\000' a"],"outputByteLimit":0}`
	huge := `{"command":"sh","args":["-c","head -c 3000 /dev/zero | tr '\\000' b"],"outputByteLimit":1000000000}`
	res := serviceCalls(t, ACPOptions{Dir: t.TempDir(), Terminal: &TerminalOptions{MaxOutputBytes: 2000}},
		fakeagent.Call{Method: "terminal/create", Params: raw(flood)},
		fakeagent.Call{Method: "terminal/wait_for_exit", Params: raw(`{"terminalId":"term-1"}`)},
		fakeagent.Call{Method: "terminal/output", Params: raw(`{"terminalId":"term-1"}`)},
		fakeagent.Call{Method: "terminal/create", Params: raw(huge)},
		fakeagent.Call{Method: "terminal/wait_for_exit", Params: raw(`{"terminalId":"term-2"}`)},
		fakeagent.Call{Method: "terminal/output", Params: raw(`{"terminalId":"term-2"}`)},
	)
	for _, r := range []fakeagent.Message{res[2], res[5]} {
		var out struct {
			Output    string
			Truncated bool
		}
		require.NoError(t, jsonUnmarshal(r.Result, &out))
		assert.True(t, out.Truncated)
		assert.Equal(t, 2000, len(out.Output), "the host's cap holds")
	}
}

// The host's default cap is 1 MiB.
func TestTerminalOutputDefaultCap(t *testing.T) {
	flood := `{"command":"sh","args":["-c","head -c 3000000 /dev/zero | tr '\\000' a"]}`
	res := serviceCalls(t, ACPOptions{Dir: t.TempDir(), Terminal: &TerminalOptions{}},
		fakeagent.Call{Method: "terminal/create", Params: raw(flood)},
		fakeagent.Call{Method: "terminal/wait_for_exit", Params: raw(`{"terminalId":"term-1"}`)},
		fakeagent.Call{Method: "terminal/output", Params: raw(`{"terminalId":"term-1"}`)},
	)
	var out struct {
		Output    string
		Truncated bool
	}
	require.NoError(t, jsonUnmarshal(res[2].Result, &out))
	assert.True(t, out.Truncated)
	assert.Equal(t, 1<<20, len(out.Output))
}

// An agent creating terminals without end is refused past MaxTerminals
// live ones, with an error it sees; a released terminal does not count.
func TestTerminalCountIsCapped(t *testing.T) {
	var calls []fakeagent.Call
	for range 5 {
		calls = append(calls, fakeagent.Call{Method: "terminal/create", Params: raw(`{"command":"sleep","args":["100"]}`)})
	}
	calls = append(calls,
		fakeagent.Call{Method: "terminal/release", Params: raw(`{"terminalId":"term-1"}`)},
		fakeagent.Call{Method: "terminal/create", Params: raw(`{"command":"true"}`)},
	)
	res := serviceCalls(t, ACPOptions{Dir: t.TempDir(), Terminal: &TerminalOptions{MaxTerminals: 4}}, calls...)
	for i := range 4 {
		assert.Empty(t, res[i].Error, "terminal %d", i+1)
	}
	assert.Equal(t, acp.CodeInvalidParams, errorCode(t, res[4]))
	assert.Contains(t, string(res[4].Error), "4 terminals")
	assert.Empty(t, res[5].Error)
	assert.Empty(t, res[6].Error, "the released terminal's slot is free")
}
