//go:build linux

package acphost

import (
	"os"
	"path/filepath"
	"strconv"
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
	script := `echo in > inside; echo cached > "$CACHE/c"; echo out > "$OUT/x"; ln -s "$OUT" esc; echo out > esc/y; sh -c 'echo out > "$OUT/z"'; exit 0`
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
}

func TestConfinedTerminalOptionsAreChecked(t *testing.T) {
	_, err := Start(t.Context(), ACPOptions{Command: "true", Dir: t.TempDir(), Terminal: &TerminalOptions{Confine: true, Writable: []string{"relative"}}})
	require.ErrorContains(t, err, "not absolute")
}

// A confined agent, and whatever it runs, changes files only in its
// Writable directories; the host still writes for it (fs/write_text_file)
// where the session's roots allow.
func TestConfinedAgentWritesOnlyWhereAllowed(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	dir, state := t.TempDir(), t.TempDir()
	proposal := filepath.Join(dir, "proposal.txt")
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: raw(`{"path":` + strconv.Quote(proposal) + `,"content":"via the host"}`)}},
		fakeagent.Say(fakeagent.Text("done")),
	}}}}
	path, args, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	// The agent's own first acts: a write to the project, one to its state.
	wrapper := `echo x > "$PROJECT/direct" 2>/dev/null; echo ok > "$STATE/state"; exec "$@"`
	c, err := Start(t.Context(), ACPOptions{
		Command: "/bin/sh", Args: append([]string{"-c", wrapper, "sh", path}, args...),
		Env:     append(env, "PROJECT="+dir, "STATE="+state),
		Dir:     dir,
		FS:      &FSOptions{Write: true},
		Confine: &Confinement{Writable: []string{state}},
	})
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.Generate(Request{Prompt: "go"})
	require.NoError(t, err)
	assert.Equal(t, "done", resp.Text)
	_, err = os.Stat(filepath.Join(dir, "direct"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the agent could not write to the project itself")
	_, err = os.Stat(filepath.Join(state, "state"))
	assert.NoError(t, err, "the agent wrote its state")
	got, err := os.ReadFile(proposal)
	require.NoError(t, err)
	assert.Equal(t, "via the host", string(got))
}

func TestConfinementOnlyForSpawnedAgents(t *testing.T) {
	_, err := Connect(t.Context(), nil, nil, nil, ACPOptions{Confine: &Confinement{}})
	require.ErrorIs(t, err, ErrUnsupported)
}
