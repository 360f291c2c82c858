package acphost

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStreamEventsInOrderEmitNeverAfterReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Demo(), ACPOptions{})
		var types []string
		returned := false
		resp, err := c.GenerateStream(context.Background(), Request{Prompt: "x"}, func(ev StreamEvent) {
			if returned {
				t.Error("emit after GenerateStream returned")
			}
			types = append(types, ev.Type)
		})
		returned = true
		require.NoError(t, err)
		assert.Equal(t, "picked allow", resp.Text)
		assert.Equal(t, []string{EventThought, EventToolCall, EventPermission, EventPermissionAnswer, EventToolUpdate, EventToolResult, EventPlan, EventText, EventDone}, types)
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
		for ev, err := range c.Stream(context.Background(), Request{Prompt: "long"}) {
			require.NoError(t, err)
			n++
			if ev.Type == EventText {
				break
			}
		}
		assert.Equal(t, 1, n)
		assert.Len(t, received(fa.Agent, "session/cancel"), 1, "breaking out of the loop cancels the turn")
		var last StreamEvent
		for ev := range c.Stream(context.Background(), Request{Prompt: "again"}) {
			last = ev
		}
		assert.Equal(t, EventDone, last.Type, "the loop ended after the cancellation finished; the next turn runs")
	})
}
