//go:build linux

package acphost

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/confine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A confined command writes in the session's roots and in Writable, and
// nowhere else, whatever it tries: the kernel refuses.
func TestConfinedTerminalWritesOnlyInsideItsRoots(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	dir, cache, outside := t.TempDir(), t.TempDir(), t.TempDir()
	script := `read -r p _ _ _ _ sid _ </proc/self/stat; echo $p $sid > ids; echo in > inside; echo cached > "$CACHE/c"; echo out > "$OUT/x"; ln -s "$OUT" esc; echo out > esc/y; sh -c 'echo out > "$OUT/z"'; exit 0`
	create := `{"command":"sh","args":["-c",` + strconv.Quote(script) + `],"env":[{"name":"CACHE","value":` + strconv.Quote(cache) + `},{"name":"OUT","value":` + strconv.Quote(outside) + `}]}`
	res := serviceCalls(t, ACPOptions{Dir: dir, Terminal: &TerminalOptions{Confine: true, Writable: []string{cache}}},
		fakeagent.Call{Method: "terminal/create", Params: raw(create)},
		fakeagent.Call{Method: "terminal/wait_for_exit", Params: raw(`{"terminalId":"term-1"}`)},
		fakeagent.Call{Method: "terminal/output", Params: raw(`{"terminalId":"term-1"}`)},
	)
	var out struct{ Output string }
	require.NoError(t, jsonUnmarshal(res[2].Result, &out))
	assert.Contains(t, out.Output, "Permission denied")
	for _, f := range []string{filepath.Join(dir, "inside"), filepath.Join(cache, "c")} {
		_, err := os.Stat(f)
		assert.NoError(t, err, "%s was written", f)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written outside")
	ids, err := os.ReadFile(filepath.Join(dir, "ids"))
	require.NoError(t, err)
	pidAndSid := strings.Fields(string(ids))
	require.Len(t, pidAndSid, 2)
	assert.Equal(t, pidAndSid[0], pidAndSid[1], "the command leads a session of its own")
}

func TestConfinedTerminalOptionsAreChecked(t *testing.T) {
	_, err := Start(t.Context(), ACPOptions{Command: "true", Dir: t.TempDir(), Terminal: &TerminalOptions{Confine: true, Writable: []string{"relative"}}})
	require.ErrorContains(t, err, "not absolute")
}

// A confined agent, and whatever it runs, changes files only in its
// Writable directories, from a session of its own; the commands the host
// runs for it are confined the same way; the host still writes for it
// (fs/write_text_file) where the session's roots allow.
func TestConfinedAgentWritesOnlyWhereAllowed(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	dir, state := t.TempDir(), t.TempDir()
	proposal, hostWrite := filepath.Join(dir, "proposal.txt"), filepath.Join(state, "host-write.txt")
	viaTerminal := `{"command":"sh","args":["-c","echo x > ` + filepath.Join(dir, "via-terminal") + `; echo x > ` + filepath.Join(state, "terminal-state") + `"]}`
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: raw(`{"path":` + strconv.Quote(proposal) + `,"content":"via the host"}`)}},
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: raw(`{"path":` + strconv.Quote(hostWrite) + `,"content":"via the host"}`)}},
		{Request: &fakeagent.Call{Method: "terminal/create", Params: raw(viaTerminal)}},
		{Request: &fakeagent.Call{Method: "terminal/wait_for_exit", Params: raw(`{"terminalId":"term-1"}`)}},
		fakeagent.Say(fakeagent.Text("done")),
	}}}}
	path, args, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	// The agent's own first acts: a write to the project, one to its state
	// with its pid and session id.
	wrapper := `echo x > "$PROJECT/direct" 2>/dev/null; read -r p _ _ _ _ sid _ </proc/self/stat; echo $p $sid > "$STATE/ids"; exec "$@"`
	c, err := Start(t.Context(), ACPOptions{
		Command: "/bin/sh", Args: append([]string{"-c", wrapper, "sh", path}, args...),
		Dir:      dir,
		FS:       &FSOptions{Write: true, AdditionalDirs: []string{state}},
		Terminal: &TerminalOptions{}, // confined with the agent, though not asked
		Process:  ProcessOptions{Env: append(env, "PROJECT="+dir, "STATE="+state), Confine: &Confinement{Writable: []string{state}}},
	})
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.Generate(Request{Prompt: "go"})
	require.NoError(t, err)
	assert.Equal(t, "done", resp.Text)
	for _, f := range []string{"direct", "via-terminal", "proposal.txt"} {
		_, err = os.Stat(filepath.Join(dir, f))
		assert.ErrorIs(t, err, os.ErrNotExist, "%s: the agent could not write to the project", f)
	}
	_, err = os.Stat(filepath.Join(state, "terminal-state"))
	assert.NoError(t, err, "a terminal command wrote the agent's state")
	ids, err := os.ReadFile(filepath.Join(state, "ids"))
	require.NoError(t, err, "the agent wrote its state")
	pidAndSid := strings.Fields(string(ids))
	require.Len(t, pidAndSid, 2)
	assert.Equal(t, pidAndSid[0], pidAndSid[1], "the agent leads a session of its own")
	// The host writes for the agent only where the agent may write itself.
	got, err := os.ReadFile(hostWrite)
	require.NoError(t, err)
	assert.Equal(t, "via the host", string(got))

	require.NoError(t, c.Close())
	eventually(t, "no thread of the host to carry the restriction", func() bool {
		restricted, err := confine.RestrictedThreads()
		return errors.Is(err, confine.ErrInheritedNoNewPrivs) || err == nil && len(restricted) == 0
	})
}

func TestConfinementOnlyForSpawnedAgents(t *testing.T) {
	_, err := Start(t.Context(), ACPOptions{Transport: &StreamTransport{}, Process: ProcessOptions{Confine: &Confinement{}}})
	require.ErrorIs(t, err, ErrUnsupported)
}
