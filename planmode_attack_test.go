package acphost

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/require"
)

// Hostile and unusual agents against plan mode and RequireAsking (issue 24
// review). Each test failed before its fix.

// RequireAsking (the CLI's --permission reject and ask): an agent that
// asks, is rejected, and then reports the change done anyway made it
// without the host's consent. Asking is not consent; only an allow is.
func TestRequireAskingStopsAChangeDoneAfterItsRejection(t *testing.T) {
	for _, kind := range []string{"edit", "execute"} {
		t.Run(kind, func(t *testing.T) {
			script := claudeLike(fakeagent.Turn{Steps: []fakeagent.Step{
				fakeagent.Say(fakeagent.ToolCall("x1", "change it", kind)),
				fakeagent.Ask(fakeagent.PermissionParams("x1", "change it", kind)),
				fakeagent.Say(fakeagent.ToolUpdate("x1", "completed")),
				{WaitCancel: true},
			}})
			c, _ := connectFake(t, script, ACPOptions{RequireAsking: true, OnPermission: RejectAll()})
			_, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "go"})
			require.ErrorIs(t, err, ErrUnaskedChange)
			require.NotErrorIs(t, err, ErrPlanModeBypassed)
			require.Equal(t, 1, c.Session().Enforcement().Unasked)
		})
	}
}

// Plan mode: a command asked about in the agent's read-only mode (so
// rejected by the host), then reported done anyway, is no read-only
// judgement of the agent's: it asked, and ran it refused.
func TestPlanModeStopsACommandRunAfterItsRejectionInAReadOnlyMode(t *testing.T) {
	script := claudeLike(fakeagent.Turn{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.ToolCall("x1", "rm -rf build", "execute")),
		fakeagent.Ask(fakeagent.PermissionParams("x1", "rm -rf build", "execute")),
		fakeagent.Say(fakeagent.ToolUpdate("x1", "completed")),
		{WaitCancel: true},
	}})
	c, _ := connectFake(t, script, ACPOptions{PlanMode: true, OnPermission: allowEverything})
	require.Equal(t, ModeReadOnly, c.Session().Enforcement().ModeKind)
	_, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "clean"})
	require.ErrorIs(t, err, ErrPlanModeBypassed)
}

// A mode whose words say both "plan" and "auto" is no plan mode: picking
// it would put the agent in a mode that acts unasked, report "agent mode"
// as a layer that holds, and let its commands pass detection as read-only.
func TestPlanModeAttackDoesNotTakeAnAutoModeForAPlanMode(t *testing.T) {
	script := fakeagent.Script{
		NewSessionResult: raw(`{"modes":{"currentModeId":"manual","availableModes":[
			{"id":"manual","name":"Manual"},{"id":"autoplan","name":"Auto-plan: plans, then runs without asking"}]}}`),
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Say(raw(`{"sessionUpdate":"tool_call","toolCallId":"x1","title":"rm -rf build","kind":"execute","status":"completed"}`)),
			{WaitCancel: true},
		}}},
	}
	var none *AgentProfile
	require.Equal(t, ModeUnasked, none.kind(acp.SessionMode{ID: "autoplan", Name: "Auto-plan: plans, then runs without asking"}))
	c, a := connectFake(t, script, ACPOptions{PlanMode: true})
	e := c.Session().Enforcement()
	require.NotEqual(t, "autoplan", e.PlanModeID, "%+v", e)
	require.NotContains(t, modesSet(a.Agent), "autoplan")
	require.Equal(t, "manual", e.PlanModeID, "falls back to the mode that asks")
}

// A state directory that holds the project (a profile's "~/", a
// CLAUDE_CONFIG_DIR of "/" or of the home) would make every edit of the
// project the agent's "own state" to detection.
func TestPlanModeAttackStateDirHoldingTheProject(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "src", "proj")
	require.NoError(t, os.MkdirAll(proj, 0o755))
	for _, state := range []*AgentProfile{
		{Name: "tilde", StateDirs: []string{"~/"}},
		{Name: "root", StateDirs: []string{"$CLAUDE_CONFIG_DIR"}},
	} {
		t.Run(state.Name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("CLAUDE_CONFIG_DIR", "/")
			edit := raw(`{"sessionUpdate":"tool_call","toolCallId":"e1","title":"Write main.go","kind":"edit","status":"completed",
				"content":[{"type":"diff","path":` + string(mustMarshal(filepath.Join(proj, "main.go"))) + `,"oldText":null,"newText":"x"}]}`)
			script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(edit), {WaitCancel: true}}}}}
			c, _ := connectFake(t, script, ACPOptions{Dir: proj, PlanMode: true, Profile: state})
			_, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "fix"})
			require.ErrorIs(t, err, ErrPlanModeBypassed)
		})
	}
}

// A state directory that is a symlink into the project (planted by the
// agent on an earlier, unconfined run) is not the agent's own state.
func TestPlanModeAttackStateDirSymlinkedIntoTheProject(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(proj, "src"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(proj, "src"), filepath.Join(home, ".claude")))
	p := withHome(home)
	edit := raw(`{"sessionUpdate":"tool_call","toolCallId":"e1","title":"Write","kind":"edit","status":"completed",
		"locations":[{"path":` + string(mustMarshal(filepath.Join(home, ".claude", "main.go"))) + `}]}`)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(edit), {WaitCancel: true}}}}}
	c, _ := connectFake(t, script, ACPOptions{Dir: proj, PlanMode: true, Profile: p})
	_, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "fix"})
	require.ErrorIs(t, err, ErrPlanModeBypassed)
}

// opencode-like: set_config_option answered with configOptions that keep
// the old mode is a refusal. The host must not claim the agent is in plan
// mode.
func TestPlanModeAttackConfigOptionAnswerKeepsTheOldMode(t *testing.T) {
	opts := `[{"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"build",` +
		`"options":[{"value":"build","name":"build"},{"value":"plan","name":"plan"}]}]`
	c, _, err := tryConnectHostile(t, turnCtx(t), ACPOptions{PlanMode: true}, func(h *hostileAgent) {
		go func() {
			for call := range h.calls {
				switch call.Method {
				case "session/new":
					h.reply(call.ID, `{"sessionId":"s1","configOptions":`+opts+`}`)
				case "session/set_config_option":
					h.reply(call.ID, `{"configOptions":`+opts+`}`)
				}
			}
		}()
	}, "session/new", "session/set_config_option")
	require.NoError(t, err)
	e := c.Session().Enforcement()
	require.Equal(t, "build", e.Mode, "%+v", e)
	require.False(t, e.AgentMode, "%+v", e)
}

// Thousands of modes with huge hostile ids: the one-line report stays a
// line, whatever the agent offers.
func TestEnforcementStringIsBounded(t *testing.T) {
	var modes []string
	long := strings.Repeat("\x1b[31mask", 4096) // 32 KiB, an escape sequence in it
	for i := range 2000 {
		modes = append(modes, `{"id":`+string(mustMarshal(fmt.Sprintf("ask-%d-%s", i, long[:64])))+`}`)
	}
	modes = append(modes, `{"id":`+string(mustMarshal("auto"+long))+`}`)
	script := fakeagent.Script{NewSessionResult: raw(`{"modes":{"currentModeId":` + string(mustMarshal("auto"+long)) +
		`,"availableModes":[` + strings.Join(modes, ",") + `]}}`)}
	c, _ := connectFake(t, script, ACPOptions{Limits: Limits{MaxResponseBytes: 8 << 20}})
	e := c.Session().Enforcement()
	require.True(t, e.ActsUnasked)
	require.LessOrEqual(t, len(e.AskingModes), maxNamedModes)
	s := e.String()
	require.Less(t, len(s), 1024, "%.200s…", s)
	require.NotContains(t, s, "\x1b")
	c.SetPlanMode(true)
	require.Less(t, len(c.Session().Enforcement().String()), 1024)
}

// Plan mode toggled while turns run and reports are read: no race.
func TestPlanModeToggledDuringTurnsIsNotARace(t *testing.T) {
	var turns []fakeagent.Turn
	for range 20 {
		turns = append(turns, fakeagent.Turn{Steps: []fakeagent.Step{
			fakeagent.Say(raw(`{"sessionUpdate":"current_mode_update","currentModeId":"auto"}`)),
			fakeagent.Say(fakeagent.Text("ok")),
		}})
	}
	c, _ := connectFake(t, claudeLike(turns...), ACPOptions{RequireAsking: true})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for on := true; ; on = !on {
			select {
			case <-stop:
				return
			default:
			}
			c.SetPlanMode(on)
			_ = c.Session().Enforcement().String()
		}
	}()
	ctx := turnCtx(t)
	for range 20 {
		_, err := c.GenerateCtx(ctx, Request{Prompt: "go"})
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
}

// Many modes cost the host once per prompt (askingModes, modeOffer): not
// quadratic in what the agent offers.
func BenchmarkAskingModesManyModes(b *testing.B) {
	var offered []acp.SessionMode
	for i := range 20000 {
		offered = append(offered, acp.SessionMode{ID: fmt.Sprintf("ask-%d", i)})
	}
	var none *AgentProfile
	b.ResetTimer()
	for range b.N {
		_ = none.askingModes(offered, -1)
	}
}

var _ = json.Marshal

// The agent's words in an UnaskedChangeError's message (which the Logger
// gets too) are quoted where they are not plain text: an unknown tool kind
// with a diff, an asking mode's id with a newline and an escape sequence.
func TestUnaskedChangeErrorQuotesTheAgentsWords(t *testing.T) {
	edit := raw(`{"sessionUpdate":"tool_call","toolCallId":"e1","title":"Write","kind":"other\n\u001b[2Jlevel=INFO","status":"completed",
		"content":[{"type":"diff","path":"/work/main.go","oldText":null,"newText":"x"}]}`)
	script := fakeagent.Script{
		NewSessionResult: raw(`{"modes":{"currentModeId":"yolo","availableModes":[{"id":"yolo"},{"id":"ask\n\u001b[31mlevel=INFO msg=fine"}]}}`),
		Turns:            []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(edit), {WaitCancel: true}}}},
	}
	c, _ := connectFake(t, script, ACPOptions{RequireAsking: true, OnPermission: RejectAll()})
	_, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "go"})
	require.ErrorIs(t, err, ErrUnaskedChange)
	msg := err.Error()
	require.NotContains(t, msg, "\n")
	require.NotContains(t, msg, "\x1b")
}

// An agent that answers set_mode with success but reports another mode
// while it answers (flapping): the host believes the agent's report, not
// its own request, so it never claims the agent mode layer for a session
// the agent says is in auto. The agent answers only once its report was
// delivered, the order the dispatcher may take whichever side of the
// answer the report was sent.
func TestPlanModeAttackSetModeAnsweredWithAnotherMode(t *testing.T) {
	delivered := make(chan struct{}, 1)
	opts := ACPOptions{OnUpdate: func(u acp.Update) {
		if _, ok := u.(*acp.CurrentModeUpdate); ok {
			delivered <- struct{}{}
		}
	}}
	c, h, err := tryConnectHostile(t, turnCtx(t), opts, func(h *hostileAgent) {
		go func() {
			for call := range h.calls {
				switch call.Method {
				case "session/new":
					h.reply(call.ID, `{"sessionId":"s1","modes":{"currentModeId":"auto","availableModes":[{"id":"auto","name":"Auto"},{"id":"plan","name":"Plan"}]}}`)
				case "session/set_mode":
					h.update("s1", `{"sessionUpdate":"current_mode_update","currentModeId":"auto"}`)
					<-delivered
					h.reply(call.ID, `{}`)
				}
			}
		}()
	}, "session/new", "session/set_mode")
	require.NoError(t, err)
	c.SetPlanMode(true)
	h.endPrompts.Store(true)
	_, err = c.GenerateCtx(turnCtx(t), Request{Prompt: "plan"})
	require.NoError(t, err)
	e := c.Session().Enforcement()
	require.Equal(t, "auto", e.Mode, "%v", e)
	require.False(t, e.AgentMode, "%v", e)
}

// A command's locations do not bound what it changes: an execute the agent
// reports done with its location in the agent's state directory (its cwd
// there, say) is no edit of its own state.
func TestPlanModeAttackCommandLocatedInTheStateDir(t *testing.T) {
	home := t.TempDir()
	loc := string(mustMarshal(filepath.Join(home, ".claude", "plans")))
	run := raw(`{"sessionUpdate":"tool_call","toolCallId":"x1","title":"rm -rf ../../proj","kind":"execute","status":"completed",
		"locations":[{"path":` + loc + `}]}`)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(run), {WaitCancel: true}}}}}
	c, _ := connectFake(t, script, ACPOptions{PlanMode: true, Profile: withHome(home)})
	_, err := c.GenerateCtx(turnCtx(t), Request{Prompt: "plan"})
	require.ErrorIs(t, err, ErrPlanModeBypassed)
}

// A set_config_option answer with malformed configOptions does not wipe
// what the host knows of the session's modes (so plan mode off can still
// put the session back in the mode it found).
func TestPlanModeAttackMalformedConfigOptionAnswer(t *testing.T) {
	opts := `[{"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"build",` +
		`"options":[{"value":"build","name":"build"},{"value":"plan","name":"plan"}]}]`
	sets := make(chan string, 4)
	c, h, err := tryConnectHostile(t, turnCtx(t), ACPOptions{PlanMode: true}, func(h *hostileAgent) {
		go func() {
			for call := range h.calls {
				switch call.Method {
				case "session/new":
					h.reply(call.ID, `{"sessionId":"s1","configOptions":`+opts+`}`)
				case "session/set_config_option":
					sets <- call.Method
					h.reply(call.ID, `{"configOptions":[1,"x",null]}`)
				}
			}
		}()
	}, "session/new", "session/set_config_option")
	require.NoError(t, err)
	<-sets
	e := c.Session().Enforcement()
	require.Equal(t, "plan", e.PlanModeID, "%v", e)
	c.SetPlanMode(false)
	h.endPrompts.Store(true)
	_, err = c.GenerateCtx(turnCtx(t), Request{Prompt: "go"})
	require.NoError(t, err)
	require.Len(t, sets, 1, "plan mode off set the mode back")
}
