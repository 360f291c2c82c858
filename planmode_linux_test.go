package acphost

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acphost/acphost/acp"
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
	c, err := startFake(t, script, ACPOptions{Dir: dir, PlanMode: true, Process: ProcessOptions{Confine: &Confinement{Writable: []string{dir}}}})
	require.NoError(t, err)
	e := c.Session().Enforcement()
	require.True(t, e.Kernel, "%+v", e)
	require.Empty(t, e.KernelReason)
	resp, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "write"})
	require.NoError(t, err)
	requireNoFile(t, out)
	require.Len(t, resp.ToolCalls, 2)
	require.Contains(t, toolText(resp.ToolCalls[0]), "tmp-written", "its TMPDIR is writable")
	require.Regexp(t, "denied|Read-only file system", toolText(resp.ToolCalls[1]))

	c.SetPlanMode(false)
	resp, err = c.GenerateCtx(turnCtx(t), Request{Prompt: "write"})
	require.NoError(t, err)
	require.NotNil(t, resp.Restarted, "restarted under the other confinement")
	require.ErrorIs(t, resp.Restarted.Reason, errPlanConfinement)
	require.False(t, c.Session().Enforcement().Kernel)
	_, err = os.Stat(out)
	require.NoError(t, err, "outside plan mode Writable holds again")
	require.NoError(t, c.Close())
}

// A launcher under the kernel layer: a script that gives the agent a home
// of its own (outside the project, a place the host knows nothing of) and
// writes its settings there, then execs the agent. It starts, its state is
// written in its private copy of that place, and the project stays
// read-only; nothing of it lands for real.
func TestPlanModeKernelLayerLetsALauncherMakeItsHome(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	root := t.TempDir()
	project, home := filepath.Join(root, "project"), filepath.Join(root, "launcher-home")
	require.NoError(t, os.Mkdir(project, 0o755))
	out := filepath.Join(project, "out.txt")
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Run: []string{"sh", "-c", `cat "$HOME/settings.json" && echo log >> "$HOME/agent.log" && echo state-written; exit 1`}},
		{Run: []string{"sh", "-c", "echo hi > " + out + " && echo project-written; exit 1"}},
	}}}}
	path, args, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	launch := filepath.Join(root, "launch.sh")
	require.NoError(t, os.WriteFile(launch, []byte(`#!/bin/sh
set -e
export HOME="$1"
shift
mkdir -p "$HOME"
echo '{"theme":"dark"}' > "$HOME/settings.json"
exec "$@"
`), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Start(ctx, ACPOptions{Command: "/bin/sh", Args: append([]string{launch, home, path}, args...),
		Dir: project, PlanMode: true,
		Process: ProcessOptions{Env: env, Confine: &Confinement{PlanOnly: true}},
	})
	require.NoError(t, err, "the launcher could not make its home under the kernel layer")
	t.Cleanup(func() { c.Close() })
	e := c.Session().Enforcement()
	require.True(t, e.Kernel && e.View, "%+v", e)
	require.NotContains(t, e.String(), "Landlock only")
	resp, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "write"})
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 2)
	require.Contains(t, toolText(resp.ToolCalls[0]), "state-written")
	require.Contains(t, toolText(resp.ToolCalls[0]), `"theme"`)
	require.Regexp(t, "denied|Read-only file system", toolText(resp.ToolCalls[1]))
	requireNoFile(t, out)
	requireNoFile(t, home)
}

// Without the private view the report says the kernel layer is Landlock
// alone, and why.
func TestPlanModeKernelLayerSaysWhenItHasNoView(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	c, err := startFake(t, fakeagent.Script{}, ACPOptions{PlanMode: true, Process: ProcessOptions{Confine: &Confinement{PlanOnly: true, NoPlanView: true}}})
	require.NoError(t, err)
	e := c.Session().Enforcement()
	require.True(t, e.Kernel, "%+v", e)
	require.False(t, e.View)
	require.Contains(t, e.ViewReason, "NoPlanView")
	require.Contains(t, e.String(), "kernel (Landlock only: Confinement.NoPlanView is set)")
}

// Where the private view cannot be had, an agent that dies of the kernel
// layer says so, and what to do.
func TestPlanModeKernelLayerNamesItselfWhenTheAgentDies(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	root := t.TempDir()
	project, home := filepath.Join(root, "project"), filepath.Join(root, "launcher-home")
	require.NoError(t, os.Mkdir(project, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Start(ctx, ACPOptions{Command: "/bin/sh", Args: []string{"-c", `mkdir "$0"`, home},
		Dir: project, PlanMode: true,
		Process: ProcessOptions{Confine: &Confinement{PlanOnly: true, NoPlanView: true}},
	})
	var exit *ExitError
	require.ErrorAs(t, err, &exit)
	require.Contains(t, exit.PlanKernel, "plan mode's kernel layer")
	require.Contains(t, err.Error(), "--writable")
}

func toolText(tc acp.ToolCall) string {
	var s string
	for _, c := range tc.Content {
		if c.Content != nil {
			s += c.Content.Text
		}
	}
	return s
}
