package acphost

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A watched GenerateCtx turn shows OnTurn the events a stream would get
// (the permission's answer too), then its Response; the prompt carries
// the watch's _meta.
func TestOnTurnWatchesAnUnstreamedTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var infos []TurnInfo
		var types []EventType
		var answer *PermissionAnswer
		var ended *Response
		opts := ACPOptions{OnPermission: AllowAll()}
		opts.Debug.OnTurn = func(_ context.Context, ti TurnInfo) TurnWatch {
			infos = append(infos, ti)
			return TurnWatch{
				Meta: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
				Event: func(ev StreamEvent) {
					types = append(types, ev.Type)
					if ev.Type == EventPermissionAnswer {
						answer = ev.Answer
					}
				},
				End: func(r Response, err error) {
					require.NoError(t, err)
					ended = &r
				},
			}
		}
		c, fa := connectFake(t, fakeagent.Demo(), opts)
		resp, err := c.GenerateCtx(context.Background(), Request{Prompt: "x"})
		require.NoError(t, err)
		require.Len(t, infos, 1)
		assert.Equal(t, c.Session(), infos[0].Session)
		assert.Equal(t, c.AgentInfo(), infos[0].Agent)
		assert.Equal(t, []EventType{EventThought, EventToolCall, EventPermission, EventPermissionAnswer, EventToolUpdate, EventToolResult, EventPlan, EventText, EventDone}, types)
		require.NotNil(t, answer)
		assert.Equal(t, ReasonHook, answer.Reason)
		require.NotNil(t, ended)
		assert.Equal(t, resp.Text, ended.Text)
		prompts := received(fa.Agent, "session/prompt")
		require.Len(t, prompts, 1)
		var p struct {
			Meta map[string]string `json:"_meta"`
		}
		require.NoError(t, json.Unmarshal(prompts[0], &p))
		assert.Equal(t, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", p.Meta["traceparent"])
	})
}

// A panic in OnTurn or its Event leaves the turn and its stream whole.
func TestOnTurnPanicsLeaveTheTurnAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := ACPOptions{}
		calls := 0
		opts.Debug.OnTurn = func(context.Context, TurnInfo) TurnWatch {
			calls++
			if calls == 1 {
				panic("hook")
			}
			return TurnWatch{Event: func(StreamEvent) { panic("event") }}
		}
		script := fakeagent.Demo()
		script.Turns = append(script.Turns, script.Turns[0])
		c, _ := connectFake(t, script, opts)
		for range 2 {
			var types []EventType
			resp, err := c.GenerateStream(context.Background(), Request{Prompt: "x"}, func(ev StreamEvent) { types = append(types, ev.Type) })
			require.NoError(t, err)
			assert.Equal(t, "picked allow", resp.Text)
			assert.Contains(t, types, EventDone)
		}
		assert.Equal(t, 2, calls)
	})
}

func TestStatsCountSessionsAndQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Demo(), ACPOptions{})
		synctest.Wait() // what the agent sent at the open has been dispatched
		st := c.Stats()
		assert.Equal(t, 1, st.Sessions)
		assert.Zero(t, st.Queued)
		s, err := c.NewSession(context.Background(), SessionOptions{})
		require.NoError(t, err)
		assert.Equal(t, 2, c.Stats().Sessions)
		require.NoError(t, s.Close(context.Background()))
		assert.Equal(t, 1, c.Stats().Sessions)
		require.NoError(t, c.Close())
		assert.Zero(t, c.Stats().Sessions)
	})
}
