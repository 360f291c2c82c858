package acphost

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sessionCaps = `{"loadSession":true,"sessionCapabilities":{"resume":{},"list":{},"close":{}}}`

func TestTwoSessionsInterleavedReachTheirOwnHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{Turns: []fakeagent.Turn{
			{Prompt: "A", Steps: []fakeagent.Step{{Updates: 300, UpdatesNumbered: true}}},
			{Prompt: "B", Steps: []fakeagent.Step{
				fakeagent.Ask(fakeagent.PermissionParams("tb", "edit b", "edit", fakeagent.StdOptions...)),
				{Updates: 300, UpdatesNumbered: true},
			}},
		}}
		recA, recB := &recorder{}, &recorder{}
		var mu sync.Mutex
		askedBy := map[string]int{}
		perm := func(who string) PermissionFunc {
			return func(_ context.Context, req *acp.PermissionRequest) (string, error) {
				mu.Lock()
				askedBy[who+":"+req.SessionID]++
				mu.Unlock()
				return "reject", nil
			}
		}
		c, _ := connectFake(t, script, ACPOptions{OnUpdate: recA.onUpdate, OnPermission: perm("A")})
		b, err := c.NewSession(context.Background(), SessionOptions{OnUpdate: recB.onUpdate, OnPermission: perm("B")})
		require.NoError(t, err)
		require.NotEqual(t, c.Session().ID(), b.ID())

		var wg sync.WaitGroup
		var respA, respB Response
		var errA, errB error
		wg.Go(func() { respA, errA = c.Generate(Request{Prompt: "A"}) })
		wg.Go(func() { respB, errB = b.Generate(Request{Prompt: "B"}) })
		wg.Wait()
		require.NoError(t, errA)
		require.NoError(t, errB)
		assert.True(t, strings.HasPrefix(respA.Text, "0123"), "A's answer is its own updates, in order")
		assert.Equal(t, respA.Text, respB.Text, "both sessions streamed the same numbered text")
		for _, u := range recA.updates {
			assert.Equal(t, c.Session().ID(), u.SessionID())
		}
		for _, u := range recB.updates {
			assert.Equal(t, b.ID(), u.SessionID())
		}
		assert.Equal(t, 300, recA.len())
		assert.Equal(t, 300, recB.len())
		assert.Equal(t, map[string]int{"B:" + b.ID(): 1}, askedBy, "B's permission reached only B's hook")
	})
}

func TestLoadSessionReplaysHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{AgentCapabilities: raw(sessionCaps), Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.Thought("hmm")), fakeagent.Say(fakeagent.Text("hello")),
		}}}}
		c, _ := connectFake(t, script, ACPOptions{})
		_, err := c.Generate(Request{Prompt: "hi"})
		require.NoError(t, err)

		rec := &recorder{}
		s, err := c.LoadSession(context.Background(), c.Session().ID(), SessionOptions{OnUpdate: rec.onUpdate})
		require.NoError(t, err)
		assert.Equal(t, c.Session().ID(), s.ID())
		require.Equal(t, []string{string(acp.KindUserMessageChunk), string(acp.KindAgentThoughtChunk), string(acp.KindAgentMessageChunk)}, rec.kinds(),
			"the replay (the prompt, then what the agent said) is delivered before LoadSession returns")
		for _, u := range rec.updates {
			assert.True(t, u.Replay())
		}
		resp, err := s.Generate(Request{Prompt: "again"})
		require.NoError(t, err)
		assert.Equal(t, "hello", resp.Text)
		assert.False(t, rec.updates[len(rec.updates)-1].Replay(), "live updates are not marked replay")

		res, err := c.ResumeSession(context.Background(), c.Session().ID(), SessionOptions{})
		require.NoError(t, err)
		assert.Equal(t, c.Session().ID(), res.ID())

		list, err := c.ListSessions(context.Background(), "")
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, c.Session().ID(), list[0].SessionID)

		other, err := c.NewSession(context.Background(), SessionOptions{})
		require.NoError(t, err)
		require.NoError(t, other.Close(context.Background()))
	})
}

func TestSessionMethodsNeedCapabilities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Script{}, ACPOptions{})
		_, err := c.LoadSession(context.Background(), "x", SessionOptions{})
		assert.ErrorIs(t, err, ErrUnsupported)
		_, err = c.ResumeSession(context.Background(), "x", SessionOptions{})
		assert.ErrorIs(t, err, ErrUnsupported)
		_, err = c.ListSessions(context.Background(), "")
		assert.ErrorIs(t, err, ErrUnsupported)
	})
}

func TestDeleteSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		caps := `{"sessionCapabilities":{"list":{},"delete":{}}}`
		c, fa := connectFake(t, fakeagent.Script{AgentCapabilities: raw(caps)}, ACPOptions{})
		other, err := c.NewSession(context.Background(), SessionOptions{})
		require.NoError(t, err)
		require.NoError(t, c.DeleteSession(context.Background(), other.ID()))
		assert.JSONEq(t, `{"sessionId":"`+other.ID()+`"}`, string(received(fa.Agent, "session/delete")[0]))
		list, err := c.ListSessions(context.Background(), "")
		require.NoError(t, err)
		require.Len(t, list, 1, "the deleted session is no longer listed")
		assert.Equal(t, c.Session().ID(), list[0].SessionID)
	})
}

func TestDeleteSessionNeedsTheCapability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, fakeagent.Script{AgentCapabilities: raw(sessionCaps)}, ACPOptions{})
		require.ErrorIs(t, c.DeleteSession(context.Background(), c.Session().ID()), ErrUnsupported)
		assert.Empty(t, received(fa.Agent, "session/delete"), "not sent to an agent that did not advertise it")
	})
}

func TestSetConfigOptionReturnsAgentState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, fakeagent.Script{}, ACPOptions{})
		opts, err := c.Session().SetConfigOption(context.Background(), "model", "fast")
		require.NoError(t, err)
		assert.Empty(t, opts)
		assert.JSONEq(t, `{"sessionId":"s1","configId":"model","value":"fast"}`, string(received(fa.Agent, "session/set_config_option")[0]))
	})
}

// crashing is a script whose "crash" prompt kills the agent mid-turn.
func crashing(caps, history string) fakeagent.Script {
	code := 9
	return fakeagent.Script{AgentCapabilities: raw(caps), HistoryFile: history, Turns: []fakeagent.Turn{
		{Prompt: "crash", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("partial")), {Stderr: "panic: boom"}, {Exit: &code}}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}},
	}}
}

func TestCrashRecoveryReattachesByLoad(t *testing.T) {
	t.Parallel()
	history := filepath.Join(t.TempDir(), "history.ndjson")
	rec := &recorder{}
	c, err := startFake(t, crashing(sessionCaps, history), ACPOptions{OnUpdate: rec.onUpdate, Recover: &RecoverOptions{Backoff: time.Millisecond}})
	require.NoError(t, err)
	_, err = c.Generate(Request{Prompt: "hello"})
	require.NoError(t, err)
	sid, pid := c.Session().ID(), c.PID()

	_, err = c.Generate(Request{Prompt: "crash"})
	var ee *ExitError
	require.ErrorAs(t, err, &ee, "a crash fails the turn at once with the exit")
	assert.Equal(t, 9, ee.ExitCode)
	assert.True(t, ee.DuringTurn)
	assert.Contains(t, ee.Error(), "panic: boom")

	before := rec.len()
	resp, err := c.Generate(Request{Prompt: "after"})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Text)
	require.NotNil(t, resp.Restarted)
	assert.Equal(t, "load", resp.Restarted.How)
	assert.False(t, resp.Restarted.ContextLost)
	assert.ErrorIs(t, resp.Restarted, ErrAgentExited)
	assert.Equal(t, sid, c.Session().ID(), "the same session, re-attached")
	assert.NotEqual(t, pid, c.PID())
	rec.mu.Lock()
	replayed := 0
	for _, u := range rec.updates[before:] {
		if u.Replay() {
			replayed++
		}
	}
	rec.mu.Unlock()
	assert.Equal(t, 4, replayed, "the conversation (each prompt, ok, partial) was replayed by load")
}

func TestCrashRecoveryWithoutLoadReportsLostContext(t *testing.T) {
	t.Parallel()
	c, err := startFake(t, crashing(`{}`, ""), ACPOptions{Recover: &RecoverOptions{Backoff: time.Millisecond}})
	require.NoError(t, err)
	sid := c.Session().ID()
	_, err = c.Generate(Request{Prompt: "crash"})
	require.ErrorIs(t, err, ErrAgentExited)
	_, err = c.Generate(Request{Prompt: "after"})
	require.ErrorIs(t, err, ErrContextLost, "never a silently fresh session")
	var re *RestartError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, sid, re.OldSessionID)
	resp, err := c.Generate(Request{Prompt: "after"})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Text)
	assert.Equal(t, re.NewSessionID, c.Session().ID())
}

func TestCrashLoopStopsRestarting(t *testing.T) {
	t.Parallel()
	code := 1
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Exit: &code}}}}}
	c, err := startFake(t, script, ACPOptions{Recover: &RecoverOptions{MaxRestarts: 2, Backoff: time.Millisecond}})
	require.NoError(t, err)
	var loop *CrashLoopError
	for i := 0; i < 10; i++ {
		_, err = c.Generate(Request{Prompt: "x"})
		if errorsAs(err, &loop) {
			break
		}
	}
	require.NotNil(t, loop, "recovery gave up: %v", err)
	assert.Equal(t, 2, loop.Restarts)
	assert.ErrorIs(t, err, ErrAgentExited)
	_, err = c.Generate(Request{Prompt: "x"})
	assert.ErrorAs(t, err, &loop, "and stays given up")
}

func TestWithoutRecoverADeadAgentStaysDead(t *testing.T) {
	t.Parallel()
	c, err := startFake(t, crashing(`{}`, ""), ACPOptions{})
	require.NoError(t, err)
	_, err = c.Generate(Request{Prompt: "crash"})
	require.ErrorIs(t, err, ErrAgentExited)
	_, err = c.Generate(Request{Prompt: "after"})
	require.ErrorIs(t, err, ErrAgentExited)
}

func TestClosedSessionCanBeLoadedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{AgentCapabilities: raw(sessionCaps), Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hi"))}}}}
		c, _ := connectFake(t, script, ACPOptions{})
		first := &recorder{}
		s, err := c.NewSession(context.Background(), SessionOptions{OnUpdate: first.onUpdate})
		require.NoError(t, err)
		_, err = s.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		require.NoError(t, s.Close(context.Background()))

		second := &recorder{}
		again, err := c.LoadSession(context.Background(), s.ID(), SessionOptions{OnUpdate: second.onUpdate})
		require.NoError(t, err)
		assert.Equal(t, 2, second.len(), "the replay (prompt, answer) reaches the new handle's hook")
		_, err = again.Generate(Request{Prompt: "y"})
		require.NoError(t, err)
		assert.Equal(t, 3, second.len())
		assert.Equal(t, 1, first.len(), "the closed handle hears nothing more")
	})
}

func TestAdditionalDirectoriesAreSentWhenAdvertised(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		caps := `{"loadSession":true,"sessionCapabilities":{"resume":{},"list":{},"additionalDirectories":{}}}`
		c, fa := connectFake(t, fakeagent.Script{AgentCapabilities: raw(caps)}, ACPOptions{})
		dirs := []string{filepath.Join(t.TempDir(), "lib"), filepath.Join(t.TempDir(), "docs")}
		want, err := json.Marshal(dirs)
		require.NoError(t, err)
		opts := SessionOptions{AdditionalDirectories: dirs}
		other, err := c.NewSession(context.Background(), opts)
		require.NoError(t, err)
		list, err := c.ListSessions(context.Background(), "")
		require.NoError(t, err)
		require.Len(t, list, 2)
		assert.Empty(t, list[0].AdditionalDirectories)
		assert.Equal(t, other.ID(), list[1].SessionID)
		assert.Equal(t, dirs, list[1].AdditionalDirectories, "session/list reports them")
		_, err = c.LoadSession(context.Background(), "stored", opts)
		require.NoError(t, err)
		_, err = c.ResumeSession(context.Background(), "stored-2", opts)
		require.NoError(t, err)
		news := received(fa.Agent, "session/new")
		require.Len(t, news, 2)
		assert.NotContains(t, string(news[0]), "additionalDirectories", "none given: none sent")
		for _, p := range []json.RawMessage{news[1], received(fa.Agent, "session/load")[0], received(fa.Agent, "session/resume")[0]} {
			var got struct {
				AdditionalDirectories json.RawMessage `json:"additionalDirectories"`
			}
			require.NoError(t, json.Unmarshal(p, &got))
			assert.JSONEq(t, string(want), string(got.AdditionalDirectories), string(p))
		}
	})
}

func TestAdditionalDirectoriesNeedTheCapability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, fakeagent.Script{AgentCapabilities: raw(sessionCaps)}, ACPOptions{})
		opts := SessionOptions{AdditionalDirectories: []string{t.TempDir()}}
		_, err := c.NewSession(context.Background(), opts)
		assert.ErrorIs(t, err, ErrUnsupported)
		_, err = c.LoadSession(context.Background(), "stored", opts)
		assert.ErrorIs(t, err, ErrUnsupported)
		_, err = c.ResumeSession(context.Background(), "stored", opts)
		assert.ErrorIs(t, err, ErrUnsupported)
		assert.Len(t, received(fa.Agent, "session/new"), 1, "only the default session was opened")
		assert.Empty(t, received(fa.Agent, "session/load"))
		assert.Empty(t, received(fa.Agent, "session/resume"))

		advertised := `{"sessionCapabilities":{"additionalDirectories":{}}}`
		c2, fa2 := connectFake(t, fakeagent.Script{AgentCapabilities: raw(advertised)}, ACPOptions{})
		_, err = c2.NewSession(context.Background(), SessionOptions{AdditionalDirectories: []string{"relative/dir"}})
		assert.ErrorContains(t, err, "absolute")
		assert.Len(t, received(fa2.Agent, "session/new"), 1, "a relative directory is never sent")
	})
}

// An agent that offers session/load but refuses it for the session it
// lost (as Gemini does for one it never persisted) gets a fresh session,
// reported as lost context, instead of a failed restart.
func TestRecoveryFallsBackWhenTheAgentRefusesToLoad(t *testing.T) {
	t.Parallel()
	script := crashing(sessionCaps, "")
	script.ForgetSessions = true
	c, err := startFake(t, script, ACPOptions{Recover: &RecoverOptions{Backoff: time.Millisecond}})
	require.NoError(t, err)
	sid := c.Session().ID()
	_, err = c.Generate(Request{Prompt: "crash"})
	require.ErrorIs(t, err, ErrAgentExited)
	_, err = c.Generate(Request{Prompt: "after"})
	require.ErrorIs(t, err, ErrContextLost, "a refused load is lost context, not a failed restart")
	var re *RestartError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "new", re.How)
	assert.Equal(t, sid, re.OldSessionID)
	var rpc *RPCError
	require.ErrorAs(t, re.Refused, &rpc, "the agent's refusals are kept")
	resp, err := c.Generate(Request{Prompt: "after"})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Text)
}

// Start can continue a stored session instead of opening a new one.
func TestStartReattachesAStoredSession(t *testing.T) {
	t.Parallel()
	history := filepath.Join(t.TempDir(), "history.ndjson")
	script := fakeagent.Script{AgentCapabilities: raw(sessionCaps), HistoryFile: history, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("first answer"))}}}}
	c, err := startFake(t, script, ACPOptions{})
	require.NoError(t, err)
	_, err = c.Generate(Request{Prompt: "hello"})
	require.NoError(t, err)
	sid := c.Session().ID()
	require.NoError(t, c.Close())

	rec := &recorder{}
	c, err = startFake(t, script, ACPOptions{SessionID: sid, OnUpdate: rec.onUpdate})
	require.NoError(t, err)
	assert.Equal(t, sid, c.Session().ID(), "the stored session is the default one")
	rec.mu.Lock()
	replayed := len(rec.updates) > 0 && rec.updates[0].Replay()
	rec.mu.Unlock()
	assert.True(t, replayed, "its history was replayed by session/load")

	_, err = startFake(t, fakeagent.Script{}, ACPOptions{SessionID: sid})
	require.ErrorIs(t, err, ErrUnsupported, "an agent that can neither load nor resume")
}

// A mode set on a running session survives a restart: the fresh session
// the recovery opens is put in it again.
func TestARestartKeepsTheModeSetSinceStart(t *testing.T) {
	t.Parallel()
	modes := raw(`{"modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"plan","name":"Plan"}]}}`)
	script := crashing(`{}`, "")
	script.NewSessionResult = modes
	record := filepath.Join(t.TempDir(), "record.ndjson")
	script.RecordFile = record
	c, err := startFake(t, script, ACPOptions{Recover: &RecoverOptions{Backoff: time.Millisecond}})
	require.NoError(t, err)
	require.NoError(t, c.Session().SetMode(context.Background(), "plan"))
	_, err = c.Generate(Request{Prompt: "crash"})
	require.ErrorIs(t, err, ErrAgentExited)
	_, err = c.Generate(Request{Prompt: "after"})
	require.ErrorIs(t, err, ErrContextLost)
	msgs, err := fakeagent.ReadRecord(record)
	require.NoError(t, err)
	var set []string
	for _, m := range msgs {
		if m.Method == "session/set_mode" {
			var p struct {
				ModeID string `json:"modeId"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			set = append(set, p.ModeID)
		}
	}
	assert.Equal(t, []string{"plan", "plan"}, set, "set once by the host, once more on the restarted agent's fresh session")
}
