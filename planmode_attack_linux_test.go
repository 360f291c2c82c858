package acphost_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/confine"
	"github.com/stretchr/testify/require"
)

// The kernel layer against state directories that hold the project: a
// CLAUDE_CONFIG_DIR of "/", a profile's "~/" whose home holds the project,
// a state directory the agent made a symlink to the project on an earlier,
// unconfined run. Each would leave the project writable to a silent agent.
func TestPlanModeAttackKernelStateDirHoldingTheProject(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	for _, tc := range []struct {
		name  string
		state func(home, proj string) (*acphost.AgentProfile, []string)
	}{
		{"config-dir-root", func(home, proj string) (*acphost.AgentProfile, []string) {
			return &acphost.AgentProfile{Name: "x", StateDirs: []string{"$CLAUDE_CONFIG_DIR"}}, []string{"CLAUDE_CONFIG_DIR=/"}
		}},
		{"home", func(home, proj string) (*acphost.AgentProfile, []string) {
			return &acphost.AgentProfile{Name: "x", StateDirs: []string{"~/"}}, []string{"HOME=" + home}
		}},
		{"symlink", func(home, proj string) (*acphost.AgentProfile, []string) {
			require.NoError(t, os.Symlink(proj, filepath.Join(home, ".claude")))
			return &acphost.AgentProfile{Name: "x", StateDirs: []string{"~/.claude"}}, []string{"HOME=" + home}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Not under the temporary directory, which may be writable.
			home, err := os.MkdirTemp(".", ".plan-attack-")
			require.NoError(t, err)
			home, _ = filepath.Abs(home)
			t.Cleanup(func() { os.RemoveAll(home) })
			proj := filepath.Join(home, "proj")
			require.NoError(t, os.Mkdir(proj, 0o755))
			out := filepath.Join(proj, "out.txt")
			profile, env := tc.state(home, proj)
			script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
				{Run: []string{"sh", "-c", "echo hi > " + out + "; exit 1"}},
			}}}}
			c, err := acphost.StartFake(t, script, acphost.ACPOptions{Dir: proj, PlanMode: true, Profile: profile,
				Process: acphost.ProcessOptions{Env: env, Confine: &acphost.Confinement{PlanOnly: true}},
			})
			require.NoError(t, err)
			require.True(t, c.Session().Enforcement().Kernel)
			_, err = c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "write"})
			require.NoError(t, err)
			acphost.RequireNoFile(t, out)
		})
	}
}

// Plan mode turned on, after a first prompt, for an agent started outside
// it that cannot re-attach its session: it is not restarted (its
// conversation would be lost), and the report must not say it will be.
// (Before the first prompt it is: TestPlanModeRestartsAnAgentWithoutLoadBeforeTheFirstPrompt.)
func TestPlanModeAttackKernelReasonForAnAgentThatCannotReattach(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}}}}
	c, err := acphost.StartFake(t, script, acphost.ACPOptions{Process: acphost.ProcessOptions{Confine: &acphost.Confinement{PlanOnly: true}}})
	require.NoError(t, err)
	_, err = c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "first"})
	require.NoError(t, err)
	c.SetPlanMode(true)
	resp, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "go"})
	require.NoError(t, err)
	require.Nil(t, resp.Restarted)
	e := c.Session().Enforcement()
	require.False(t, e.Kernel)
	require.NotContains(t, e.KernelReason, "restarted under it before the next turn", "it cannot be")
	require.Contains(t, e.KernelReason, "re-attach")
}
