package acphost

import (
	"context"
	"encoding/json"
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

// TestResponseTextSeparatesMessages: the Response's text (what --json's
// result line and the session history keep) joins the chunks of one
// message as sent, and starts another message — text after a tool call
// or a thought, or a new messageId — after a blank line, where it was
// once glued to the last word ("Let me look.Found it.").
func TestResponseTextSeparatesMessages(t *testing.T) {
	t.Parallel()
	msg := func(id, text string) json.RawMessage {
		return json.RawMessage(`{"sessionUpdate":"agent_message_chunk","messageId":"` + id + `","content":{"type":"text","text":"` + text + `"}}`)
	}
	c, _ := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("Let me ")),
		fakeagent.Say(fakeagent.Text("look.")),
		fakeagent.Say(fakeagent.ToolCall("t1", "ls", "execute")),
		fakeagent.Say(fakeagent.ToolUpdate("t1", "completed")),
		fakeagent.Say(fakeagent.Text("Found it.")),
		fakeagent.Say(fakeagent.Thought("checking")),
		fakeagent.Say(fakeagent.Text("Checked.\n")),
		fakeagent.Say(msg("m1", "One")),
		fakeagent.Say(msg("m1", " message.")),
		fakeagent.Say(msg("m2", "Another.")),
	}}}}, ACPOptions{})
	resp, err := c.Generate(Request{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Let me look.\n\nFound it.\n\nChecked.\nOne message.\n\nAnother."; resp.Text != want {
		t.Errorf("Text = %q, want %q", resp.Text, want)
	}
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
