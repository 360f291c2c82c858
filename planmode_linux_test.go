package acphost

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/confine"
	"github.com/stretchr/testify/require"
)

// The kernel layer: an agent that offers no mode and reports nothing still
// cannot write the project in plan mode under Confine; its private TMPDIR
// it can. Plan mode turned off restarts it (its session re-attached by
// session/load) with the project writable again.
func TestPlanModeKernelLayerHoldsForASilentAgent(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	// Not under the temporary directory, which may be writable.
	dir, err := os.MkdirTemp(".", ".plan-kernel-")
	require.NoError(t, err)
	dir, _ = filepath.Abs(dir)
	t.Cleanup(func() { os.RemoveAll(dir) })
	out := filepath.Join(dir, "out.txt")
	script := fakeagent.Script{
		AgentCapabilities: raw(`{"loadSession":true}`),
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			// Each reports failing (exit 1), which detection does not
			// count: only the kernel stands in the way of its write.
			{Run: []string{"sh", "-c", `echo tmp > "$TMPDIR/t" && echo tmp-written; exit 1`}},
			{Run: []string{"sh", "-c", "echo hi > " + out + " && echo project-written; exit 1"}},
		}}},
	}
	c, err := startFake(t, script, ACPOptions{Dir: dir, PlanMode: true, Confine: &Confinement{Writable: []string{dir}}})
	require.NoError(t, err)
	e := c.Enforcement()
	require.True(t, e.Kernel, "%+v", e)
	require.Empty(t, e.KernelReason)
	resp, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "write"})
	require.NoError(t, err)
	requireNoFile(t, out)
	require.Len(t, resp.ToolCalls, 2)
	require.Contains(t, toolText(resp.ToolCalls[0]), "tmp-written", "its TMPDIR is writable")
	require.Contains(t, toolText(resp.ToolCalls[1]), "denied")

	c.SetPlanMode(false)
	resp, err = c.GenerateCtx(turnCtx(t), Request{Prompt: "write"})
	require.NoError(t, err)
	require.NotNil(t, resp.Restarted, "restarted under the other confinement")
	require.ErrorIs(t, resp.Restarted.Reason, errPlanConfinement)
	require.False(t, c.Enforcement().Kernel)
	_, err = os.Stat(out)
	require.NoError(t, err, "outside plan mode Writable holds again")
	require.NoError(t, c.Close())
}

func toolText(tc ToolCall) string {
	var s string
	for _, c := range tc.Content {
		if c.Content != nil {
			s += c.Content.Text
		}
	}
	return s
}
