package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/require"
)

// claudeLike offers Claude's modes and starts, as the current adapter does,
// in auto, where it runs its tools without asking; its plan mode changes
// nothing.
func claudeLike(turns ...fakeagent.Turn) fakeagent.Script {
	return fakeagent.Script{
		Name: "@agentclientprotocol/claude-agent-acp",
		NewSessionResult: raw(`{"modes":{"currentModeId":"auto","availableModes":[
			{"id":"default","name":"Manual"},{"id":"acceptEdits","name":"Accept edits"},
			{"id":"plan","name":"Plan"},{"id":"auto","name":"Auto"},{"id":"bypassPermissions","name":"Bypass permissions"}]}}`),
		ReadOnlyModes: []string{"plan"},
		Turns:         turns,
	}
}

// writeTurn runs a shell command that writes file, unasked, as an agent's
// own tool does.
func writeTurn(file string) fakeagent.Turn {
	return fakeagent.Turn{Steps: []fakeagent.Step{{Run: []string{"sh", "-c", "echo hi > " + file}}, fakeagent.Say(fakeagent.Text("done"))}}
}

var allowEverything = AllowAll()

func turnCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func requireNoFile(t *testing.T, path string) {
	t.Helper()
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "%s was written", path)
}

func modesSet(a *fakeagent.Agent) []string {
	var ids []string
	for _, p := range received(a, "session/set_mode") {
		var v struct {
			ModeID string `json:"modeId"`
		}
		_ = json.Unmarshal(p, &v)
		ids = append(ids, v.ModeID)
	}
	return ids
}

// An agent that starts in a mode that never asks (Claude's auto) is put in
// its own plan mode when the session opens, so its tool never runs.
func TestPlanModePutsTheAgentInItsPlanMode(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	c, err := startFake(t, claudeLike(writeTurn(out)), ACPOptions{Dir: dir, PlanMode: true, OnPermission: allowEverything})
	require.NoError(t, err)
	e := c.Session().Enforcement()
	require.Equal(t, "claude", e.Profile)
	require.Equal(t, "plan", e.PlanModeID)
	require.True(t, e.AgentMode, "%+v", e)
	require.Equal(t, "plan", e.Mode)
	require.Equal(t, ModeReadOnly, e.ModeKind)
	require.True(t, e.Detection)
	require.False(t, e.Kernel)
	require.Contains(t, e.KernelReason, "Confine")

	_, err = c.GenerateCtx(turnCtx(t), Request{Prompt: "write out.txt"})
	require.NoError(t, err)
	requireNoFile(t, out)
}

// The same agent in a connection the library opens sessions on: every
// session, not only the default one, is put in plan mode.
func TestPlanModeHoldsForEverySession(t *testing.T) {
	c, a := connectFake(t, claudeLike(), ACPOptions{PlanMode: true})
	s, err := c.NewSession(turnCtx(t), SessionOptions{})
	require.NoError(t, err)
	require.True(t, s.Enforcement().AgentMode)
	require.Equal(t, []string{"plan", "plan"}, modesSet(a.Agent))
}

// An agent that leaves its plan mode by itself (a current_mode_update of
// its own) is put back before the next prompt; plan mode turned off puts
// it back in the mode plan mode found it in.
func TestPlanModePutsBackAModeTheAgentLeft(t *testing.T) {
	script := claudeLike(fakeagent.Turn{Steps: []fakeagent.Step{
		fakeagent.Say(raw(`{"sessionUpdate":"current_mode_update","currentModeId":"bypassPermissions"}`)),
		fakeagent.Say(fakeagent.Text("left")),
	}})
	c, a := connectFake(t, script, ACPOptions{PlanMode: true})
	ctx := turnCtx(t)
	_, err := c.GenerateCtx(ctx, Request{Prompt: "one"})
	require.NoError(t, err)
	require.Equal(t, "bypassPermissions", c.Session().Enforcement().Mode)
	require.False(t, c.Session().Enforcement().AgentMode)
	_, err = c.GenerateCtx(ctx, Request{Prompt: "two"})
	require.NoError(t, err)
	require.Equal(t, []string{"plan", "plan"}, modesSet(a.Agent))

	c.SetPlanMode(false)
	_, err = c.GenerateCtx(ctx, Request{Prompt: "three"})
	require.NoError(t, err)
	require.Equal(t, []string{"plan", "plan", "auto"}, modesSet(a.Agent), "back to the mode plan mode found")
	require.Equal(t, ModeUnasked, c.Session().Enforcement().ModeKind)
	require.True(t, c.Session().Enforcement().ActsUnasked)
}

// opencode offers its modes only as a config option of category "mode":
// plan mode sets that.
func TestPlanModeSetsAModeConfigOption(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	script := fakeagent.Script{
		Name: "opencode",
		NewSessionResult: raw(`{"configOptions":[{"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"build",
			"options":[{"value":"build","name":"build"},{"value":"plan","name":"plan"}]}]}`),
		ReadOnlyModes: []string{"plan"},
		Turns:         []fakeagent.Turn{writeTurn(out)},
	}
	c, err := startFake(t, script, ACPOptions{Dir: dir, PlanMode: true, OnPermission: allowEverything})
	require.NoError(t, err)
	e := c.Session().Enforcement()
	require.Equal(t, "plan", e.PlanModeID)
	require.True(t, e.AgentMode, "%+v", e)
	_, err = c.GenerateCtx(turnCtx(t), Request{Prompt: "write"})
	require.NoError(t, err)
	requireNoFile(t, out)
}

// An agent that offers no restrictive mode and reports a change it made
// without asking: the turn is cancelled at once with ErrPlanModeBypassed,
// and the report says the agent offers no plan mode.
func TestPlanModeStopsAReportedUnaskedEdit(t *testing.T) {
	edit := raw(`{"sessionUpdate":"tool_call","toolCallId":"e1","title":"Write main.go","kind":"edit","status":"completed",
		"content":[{"type":"diff","path":"/work/main.go","oldText":null,"newText":"package main\n"}]}`)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(edit), {WaitCancel: true}}}}}
	c, _ := connectFake(t, script, ACPOptions{PlanMode: true})
	resp, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "fix it"})
	require.ErrorIs(t, err, ErrPlanModeBypassed)
	require.ErrorIs(t, err, ErrUnaskedChange)
	var uc *UnaskedChangeError
	require.True(t, errors.As(err, &uc))
	require.Equal(t, "e1", uc.ToolCall.ID)
	require.True(t, uc.PlanMode)
	require.Equal(t, acp.StopCancelled, resp.StopReason)
	e := c.Session().Enforcement()
	require.Equal(t, "", e.PlanModeID, "the agent offers none")
	require.False(t, e.AgentMode)
	require.Equal(t, 1, e.Unasked)
	require.True(t, e.ActsUnasked)
}

// A change asked about and rejected in plan mode, then reported done
// anyway, is a bypass too.
func TestPlanModeStopsAChangeDoneAfterItsRejection(t *testing.T) {
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.ToolCall("x1", "rm -rf build", "execute")),
		fakeagent.Ask(fakeagent.PermissionParams("x1", "rm -rf build", "execute")),
		fakeagent.Say(fakeagent.ToolUpdate("x1", "completed")),
		{WaitCancel: true},
	}}}}
	c, _ := connectFake(t, script, ACPOptions{PlanMode: true, OnPermission: allowEverything})
	_, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "clean"})
	require.ErrorIs(t, err, ErrPlanModeBypassed)
}

// What does not count: a read, a command in the agent's own read-only
// mode, an edit of the agent's own state (Claude writes its plan file
// there), a change still in progress (opencode and Codex say so before
// they ask).
func TestPlanModeLetsTheAgentsOwnJudgementStand(t *testing.T) {
	home := t.TempDir()
	plan := filepath.Join(home, ".claude", "plans", "p.md")
	script := claudeLike(fakeagent.Turn{Steps: []fakeagent.Step{
		fakeagent.Say(raw(`{"sessionUpdate":"tool_call","toolCallId":"r1","title":"Read a.go","kind":"read","status":"completed"}`)),
		fakeagent.Say(raw(`{"sessionUpdate":"tool_call","toolCallId":"x1","title":"ls","kind":"execute","status":"completed"}`)),
		fakeagent.Say(raw(`{"sessionUpdate":"tool_call","toolCallId":"p1","title":"Write plan","kind":"edit","status":"completed",
			"locations":[{"path":` + string(mustMarshal(plan)) + `}]}`)),
		fakeagent.Say(raw(`{"sessionUpdate":"tool_call","toolCallId":"e2","title":"Edit a.go","kind":"edit","status":"in_progress"}`)),
		fakeagent.Say(fakeagent.Text("planned")),
	}})
	c, _ := connectFake(t, script, ACPOptions{PlanMode: true, Profile: withHome(home), Process: ProcessOptions{Env: nil}})
	resp, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "plan"})
	require.NoError(t, err)
	require.Equal(t, "planned", resp.Text)
	require.Equal(t, 0, c.Session().Enforcement().Unasked)
}

// withHome is the claude profile with its state under home.
func withHome(home string) *AgentProfile {
	p := *recogniseProfile("claude")
	p.StateDirs = []string{filepath.Join(home, ".claude")}
	return &p
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// An agent that refuses to change its mode and runs its command unasked:
// the write happens (no kernel layer here), but the turn stops at once and
// says so.
func TestPlanModeStopsAnAgentThatKeepsItsMode(t *testing.T) {
	dir := t.TempDir()
	script := claudeLike(fakeagent.Turn{Steps: []fakeagent.Step{{Run: []string{"true"}}, {WaitCancel: true}}})
	script.SetModeFails = true
	c, err := startFake(t, script, ACPOptions{Dir: dir, PlanMode: true})
	require.NoError(t, err)
	require.False(t, c.Session().Enforcement().AgentMode)
	require.Equal(t, ModeUnasked, c.Session().Enforcement().ModeKind)
	_, err = c.GenerateCtx(turnCtx(t), Request{Prompt: "run"})
	require.ErrorIs(t, err, ErrPlanModeBypassed)
	var uc *UnaskedChangeError
	require.True(t, errors.As(err, &uc))
	require.Equal(t, "auto", uc.Mode)
	require.Equal(t, []string{"default"}, uc.AskingModes)
}

// RequireAsking moves an agent off a mode that acts unasked into its
// asking mode, and stops a turn at the first change the agent reports
// making without asking; an asked and allowed one is fine.
func TestRequireAsking(t *testing.T) {
	script := claudeLike(
		fakeagent.Turn{Prompt: "asked", Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.ToolCall("a1", "make", "execute")),
			fakeagent.Ask(fakeagent.PermissionParams("a1", "make", "execute")),
			fakeagent.Say(fakeagent.ToolUpdate("a1", "completed")),
		}},
		fakeagent.Turn{Prompt: "silent", Steps: []fakeagent.Step{
			fakeagent.Say(raw(`{"sessionUpdate":"tool_call","toolCallId":"u1","title":"Edit a.go","kind":"edit","status":"completed"}`)),
			{WaitCancel: true},
		}},
	)
	c, a := connectFake(t, script, ACPOptions{RequireAsking: true, OnPermission: allowEverything})
	require.Equal(t, []string{"default"}, modesSet(a.Agent))
	e := c.Session().Enforcement()
	require.Equal(t, ModeAsks, e.ModeKind)
	require.True(t, e.Detection)
	require.False(t, e.PlanMode)
	ctx := turnCtx(t)
	_, err := c.GenerateCtx(ctx, Request{Prompt: "asked"})
	require.NoError(t, err)
	_, err = c.GenerateCtx(ctx, Request{Prompt: "silent"})
	require.ErrorIs(t, err, ErrUnaskedChange)
	require.NotErrorIs(t, err, ErrPlanModeBypassed)
}

// Without plan mode or RequireAsking the agent's mode is its own and
// nothing is stopped: no call is spent on it.
func TestNoPolicyLeavesTheModeAlone(t *testing.T) {
	script := claudeLike(fakeagent.Turn{Steps: []fakeagent.Step{
		fakeagent.Say(raw(`{"sessionUpdate":"tool_call","toolCallId":"u1","title":"Edit a.go","kind":"edit","status":"completed"}`)),
	}})
	c, a := connectFake(t, script, ACPOptions{})
	_, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "go"})
	require.NoError(t, err)
	require.Empty(t, modesSet(a.Agent))
	require.True(t, c.Session().Enforcement().ActsUnasked, "known from its mode")
	require.False(t, c.Session().Enforcement().Detection)
}

func TestModeKindsFromWords(t *testing.T) {
	var none *AgentProfile
	for _, tc := range []struct {
		id, name string
		want     ModeKind
	}{
		{"plan", "Plan", ModeReadOnly}, {"read-only", "", ModeReadOnly}, {"architect", "Read only", ModeReadOnly},
		{"yolo", "", ModeUnasked}, {"autoEdit", "", ModeUnasked}, {"x", "Full access", ModeUnasked},
		{"default", "", ModeAsks}, {"m", "Manual", ModeAsks}, {"build", "build", ModeUnknown},
	} {
		require.Equal(t, tc.want, none.kind(acp.SessionMode{ID: tc.id, Name: tc.name}), "%s %s", tc.id, tc.name)
	}
	codex := recogniseProfile("@agentclientprotocol/codex-acp")
	require.Equal(t, ModeUnasked, codex.kind(acp.SessionMode{ID: "agent", Name: "Auto review"}))
	require.Equal(t, "read-only", codex.planMode([]acp.SessionMode{{ID: "agent"}, {ID: "read-only"}}))
}

func TestProfileStateDirs(t *testing.T) {
	p := recogniseProfile("claude-agent-acp")
	got := p.stateDirs([]string{"HOME=/h", "CLAUDE_CONFIG_DIR=/cfg"})
	require.Equal(t, []string{"/cfg", "/h/.claude", "/h/.cache/claude", "/h/.local/state/claude", "/h/.local/share/claude"}, got)
	got = recogniseProfile("opencode").stateDirs([]string{"HOME=/h", "XDG_DATA_HOME=/d"})
	require.Contains(t, got, "/d/opencode")
	require.Contains(t, got, "/h/.local/share/opencode")
}

// An agent without a restrictive mode is put in one that asks, whose
// every ask plan mode rejects; the legacy Claude adapter's "plan" runs its
// tools unasked, so it is such an agent.
func TestPlanModeFallsBackToAnAskingMode(t *testing.T) {
	script := fakeagent.Script{
		Name:             "@zed-industries/claude-agent-acp",
		NewSessionResult: raw(`{"modes":{"currentModeId":"bypassPermissions","availableModes":[{"id":"default"},{"id":"plan"},{"id":"bypassPermissions"}]}}`),
	}
	c, a := connectFake(t, script, ACPOptions{PlanMode: true})
	require.Equal(t, []string{"default"}, modesSet(a.Agent))
	e := c.Session().Enforcement()
	require.Equal(t, "claude-legacy", e.Profile)
	require.True(t, e.AgentMode)
	require.Contains(t, e.String(), "agent mode default (asks)")
}

// An agent whose profile says it breaks in a PID namespace (Codex TS:
// its apply_patch never returned after approval as an unprivileged user)
// is never put in one by ContainAuto; a cgroup still may hold it.
func TestProfileKeepsAnAgentOutOfAPIDNamespace(t *testing.T) {
	p := recogniseProfile("env", "node", "/x/node_modules/@agentclientprotocol/codex-acp/dist/index.js")
	require.Equal(t, "codex-ts", p.Name)
	require.ErrorIs(t, p.namespaceRefused(), ErrUnsupported)
	require.NoError(t, recogniseProfile("codex-acp").namespaceRefused(), "the Rust adapter is fine there")
	plan, err := newContainment(ContainAuto, p.namespaceRefused())
	require.NoError(t, err)
	require.False(t, plan.namespace)
	if plan.group != nil {
		require.NoError(t, plan.group.Remove(time.Second))
	}
}

// An agent started through npx (as the CLI's named agents are) needs
// npm's cache writable before it runs: plan mode's kernel layer keeps it.
func TestPlanConfinementKeepsTheLaunchersCache(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	got := planConfinement(&Confinement{}, nil, "/usr/bin/npx", []string{"HOME=" + home}, dir, "/tmp/x")
	require.Contains(t, got, filepath.Join(home, ".npm"))
	require.Equal(t, []string{"/tmp/x"}, planConfinement(&Confinement{}, nil, "/opt/agent", []string{"HOME=" + home}, dir, "/tmp/x"))
}
