package acphost

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStreamEventsInOrderEmitNeverAfterReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Demo()
		script.Turns[0].After = []fakeagent.Step{fakeagent.Say(fakeagent.Text("late"))}
		rec := &recorder{}
		c, _ := connectFake(t, script, ACPOptions{OnUpdate: rec.onUpdate})
		var types []EventType
		var returned atomic.Bool
		var lateEmits atomic.Int64
		resp, err := c.GenerateStream(context.Background(), Request{Prompt: "x"}, func(ev StreamEvent) {
			if returned.Load() {
				lateEmits.Add(1)
				return
			}
			types = append(types, ev.Type)
		})
		returned.Store(true)
		require.NoError(t, err)
		// The late update and a whole second turn pass through the dispatcher:
		// none of it may reach the first turn's emit.
		eventually(t, "the late update", func() bool { return rec.len() == 6 })
		_, err = c.Generate(Request{Prompt: "y"})
		require.NoError(t, err)
		assert.Zero(t, lateEmits.Load(), "emit called after GenerateStream returned")
		assert.Equal(t, "picked allow", resp.Text)
		assert.Equal(t, []EventType{EventThought, EventToolCall, EventPermission, EventPermissionAnswer, EventToolUpdate, EventToolResult, EventPlan, EventText, EventDone}, types)
	})
}

func TestStreamBreakCancelsTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{Turns: []fakeagent.Turn{
			{Prompt: "long", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("a")), {WaitCancel: true}, fakeagent.Say(fakeagent.Text("never"))}},
			{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("next"))}},
		}}
		c, fa := connectFake(t, script, ACPOptions{})
		n := 0
		for ev, err := range c.Session().Stream(context.Background(), Request{Prompt: "long"}) {
			require.NoError(t, err)
			n++
			if ev.Type == EventText {
				break
			}
		}
		assert.Equal(t, 1, n)
		assert.Len(t, received(fa.Agent, "session/cancel"), 1, "breaking out of the loop cancels the turn")
		var last StreamEvent
		for ev := range c.Session().Stream(context.Background(), Request{Prompt: "again"}) {
			last = ev
		}
		assert.Equal(t, EventDone, last.Type, "the loop ended after the cancellation finished; the next turn runs")
	})
}

// Every event of a turn names its session, the end event and the Response
// too, also for a turn that fails before it runs: a script that keeps
// nothing else learns which session to continue.
func TestStreamEventsCarryTheSessionID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Demo()
		script.SessionID = "sess-7"
		c, _ := connectFake(t, script, ACPOptions{})
		second, err := c.NewSession(context.Background(), SessionOptions{})
		require.NoError(t, err)
		for _, s := range []*Session{c.Session(), second} {
			n := 0
			for ev, err := range s.Stream(context.Background(), Request{Prompt: "x"}) {
				require.NoError(t, err)
				assert.Equal(t, s.ID(), ev.SessionID, "event %s", ev.Type)
				n++
			}
			assert.Greater(t, n, 3)
		}
		require.NoError(t, second.Close(context.Background()))
		resp, err := second.Generate(Request{Prompt: "y"})
		require.ErrorIs(t, err, ErrClosed)
		assert.Equal(t, "sess-7-2", resp.SessionID, "a turn that could not run still names its session")
		var end StreamEvent
		_, _ = second.GenerateStream(context.Background(), Request{Prompt: "z"}, func(ev StreamEvent) { end = ev })
		assert.Equal(t, EventError, end.Type)
		assert.Equal(t, "sess-7-2", end.SessionID)
	})
}
