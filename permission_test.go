package acphost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneAsk is a script whose turn asks once with these options and then says
// which option it got.
func oneAsk(kind string, options ...fakeagent.Option) fakeagent.Script {
	return fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Ask(fakeagent.PermissionParams("t1", "do it", kind, options...)),
		fakeagent.Say(fakeagent.Text("{{answer}}")),
	}}}}
}

var (
	alwaysFirst = []fakeagent.Option{{ID: "always", Name: "Always", Kind: "allow_always"}, {ID: "once", Name: "Once", Kind: "allow_once"}, {ID: "no", Name: "No", Kind: "reject_once"}}
	noReject    = []fakeagent.Option{{ID: "yes", Name: "Yes", Kind: "allow_once"}}
)

func answerOf(t *testing.T, script fakeagent.Script, opts acphost.ACPOptions) string {
	t.Helper()
	var got string
	synctest.Test(t, func(t *testing.T) {
		c, _ := acphost.ConnectFake(t, script, opts)
		resp, err := c.Generate(acphost.Request{Prompt: "x"})
		require.NoError(t, err)
		got = resp.Text
	})
	return got
}

func TestPermissionAnswers(t *testing.T) {
	hook := func(id string, err error) func(context.Context, *acp.PermissionRequest) (string, error) {
		return func(context.Context, *acp.PermissionRequest) (string, error) { return id, err }
	}
	cases := []struct {
		name    string
		options []fakeagent.Option
		hook    func(context.Context, *acp.PermissionRequest) (string, error)
		want    string
	}{
		{"default prefers allow_once over allow_always", alwaysFirst, nil, "once"},
		{"default takes allow_always when no allow_once", []fakeagent.Option{{ID: "a", Kind: "allow_always"}, {ID: "r", Kind: "reject_once"}}, nil, "a"},
		{"hook choice", alwaysFirst, hook("always", nil), "always"},
		{"an id not offered is never sent", alwaysFirst, hook("yolo", nil), "no"},
		{"empty id rejects", alwaysFirst, hook("", nil), "no"},
		{"error rejects", alwaysFirst, hook("once", errors.New("ui gone")), "no"},
		{"panic rejects", alwaysFirst, func(context.Context, *acp.PermissionRequest) (string, error) { panic("boom") }, "no"},
		{"error without a reject option cancels", noReject, hook("", errors.New("x")), "cancelled"},
		{"byte-exact ids", []fakeagent.Option{{ID: "apply_network_policy_amendment:0", Kind: "allow_always"}}, nil, "apply_network_policy_amendment:0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, answerOf(t, oneAsk("execute", tc.options...), acphost.ACPOptions{OnPermission: tc.hook}))
		})
	}
}

func TestPermissionTimeoutRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []acphost.StreamEvent
		hookEnded := make(chan error, 1)
		slow := func(ctx context.Context, _ *acp.PermissionRequest) (string, error) {
			<-ctx.Done()
			hookEnded <- ctx.Err()
			return "once", nil
		}
		c, _ := acphost.ConnectFake(t, oneAsk("edit", alwaysFirst...), acphost.ACPOptions{OnPermission: slow, PermissionTimeout: 30 * time.Second})
		resp, err := c.GenerateStream(context.Background(), acphost.Request{Prompt: "x"}, func(ev acphost.StreamEvent) { events = append(events, ev) })
		require.NoError(t, err, "a permission timeout ends the wait, not the turn")
		assert.Equal(t, "no", resp.Text, "a timeout answers a reject option, never cancelled")
		assert.ErrorIs(t, <-hookEnded, context.DeadlineExceeded)
		var ans *acphost.PermissionAnswer
		for _, ev := range events {
			if ev.Type == acphost.EventPermissionAnswer {
				ans = ev.Answer
			}
		}
		require.NotNil(t, ans)
		assert.Equal(t, acphost.ReasonTimeout, ans.Reason)
		assert.Equal(t, "no", ans.OptionID)
	})
}

func TestPermissionSeesToolCallFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen atomic.Bool
		var sawFirst bool
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Say(acphost.Raw(`{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Write a.txt","kind":"edit","status":"pending","rawInput":{"path":"a.txt"},"locations":[{"path":"/w/a.txt"}]}`)),
			fakeagent.Ask(acphost.Raw(`{"toolCall":{"toolCallId":"t1"},"options":[{"optionId":"ok","name":"OK","kind":"allow_once"}]}`)),
		}}}}
		var got *acp.PermissionRequest
		c, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{
			OnUpdate: func(u acp.Update) {
				time.Sleep(time.Second) // slow UI: the request must still wait for it
				seen.Store(true)
			},
			OnPermission: func(_ context.Context, req *acp.PermissionRequest) (string, error) {
				sawFirst = seen.Load()
				got = req
				return "ok", nil
			},
		})
		_, err := c.Generate(acphost.Request{Prompt: "x"})
		require.NoError(t, err)
		assert.True(t, sawFirst, "OnPermission ran before the tool_call was delivered")
		assert.Equal(t, "Write a.txt", got.ToolCall.Title, "the request's tool call is merged with the earlier tool_call")
		assert.Equal(t, acp.ToolEdit, got.ToolCall.Kind)
		assert.Equal(t, []acp.ToolLocation{{Path: "/w/a.txt"}}, got.ToolCall.Locations)
	})
}

func TestPermissionForUnannouncedToolCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []acphost.StreamEvent
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Ask(fakeagent.PermissionParams("call_9", "git push", "execute", fakeagent.StdOptions...)),
			fakeagent.Say(acphost.Raw(`{"sessionUpdate":"tool_call_update","toolCallId":"call_9","status":"in_progress"}`)),
			fakeagent.Say(acphost.Raw(`{"sessionUpdate":"tool_call_update","toolCallId":"call_9","status":"completed","rawOutput":{"ok":true}}`)),
			fakeagent.Say(acphost.Raw(`{"sessionUpdate":"tool_call_update","toolCallId":"call_9","status":"completed"}`)),
		}}}}
		c, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{})
		resp, err := c.GenerateStream(context.Background(), acphost.Request{Prompt: "x"}, func(ev acphost.StreamEvent) { events = append(events, ev) })
		require.NoError(t, err)
		var tools []string
		for _, ev := range events {
			switch ev.Type {
			case acphost.EventToolCall, acphost.EventToolUpdate, acphost.EventToolResult:
				tools = append(tools, fmt.Sprintf("%s:%s:%s:%s", ev.Type, ev.Name, ev.Status, ev.Via))
			}
		}
		assert.Equal(t, []string{
			"tool_call:git push:pending:acp",
			"tool_update:git push:in_progress:acp",
			"tool_update:git push:completed:acp",
			"tool_result:git push:completed:acp",
			"tool_update:git push:completed:acp",
		}, tools, "one tool_call and one tool_result per id, whatever the agent repeats")
		require.Len(t, resp.ToolCalls, 1)
		assert.JSONEq(t, `{"ok":true}`, string(resp.ToolCalls[0].RawOutput))
	})
}

func TestManyConcurrentPermissionsAnsweredOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 50
		var steps []fakeagent.Step
		for i := range n {
			s := fakeagent.Ask(fakeagent.PermissionParams(fmt.Sprint("t", i), "cmd", "execute", fakeagent.StdOptions...))
			s.NoWait = true
			steps = append(steps, s)
		}
		steps = append(steps, fakeagent.Step{WaitAll: true})
		var mu sync.Mutex
		asked := map[string]int{}
		hook := func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
			mu.Lock()
			asked[req.ToolCall.ID]++
			mu.Unlock()
			time.Sleep(time.Second) // concurrent humans
			if req.ToolCall.ID == "t7" {
				return "reject", nil
			}
			return "allow", nil
		}
		c, fa := acphost.ConnectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: steps}}}, acphost.ACPOptions{OnPermission: hook})
		start := time.Now()
		_, err := c.Generate(acphost.Request{Prompt: "x"})
		require.NoError(t, err)
		assert.Less(t, time.Since(start), 5*time.Second, "requests are decided concurrently")
		answers := acphost.PermissionAnswers(fa.Agent)
		assert.Len(t, answers, n, "each request answered exactly once")
		ids := map[string]bool{}
		for _, m := range acphost.Responses(fa.Agent) {
			ids[string(m.ID)] = true
		}
		assert.Len(t, ids, n)
		for i := range n {
			assert.Equal(t, 1, asked[fmt.Sprint("t", i)])
		}
	})
}

func TestMalformedPermissionRequestGetsInvalidParams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Ask(acphost.Raw(`{"toolCall":{"toolCallId":"t"}}`)),
			fakeagent.Say(fakeagent.Text("{{answer}}")),
		}}}}
		c, fa := acphost.ConnectFake(t, script, acphost.ACPOptions{})
		resp, err := c.Generate(acphost.Request{Prompt: "x"})
		require.NoError(t, err)
		assert.Equal(t, "error", resp.Text)
		res := acphost.Responses(fa.Agent)
		require.Len(t, res, 1)
		var e struct{ Code int }
		require.NoError(t, json.Unmarshal(res[0].Error, &e))
		assert.Equal(t, acp.CodeInvalidParams, e.Code)
	})
}

// TestPermissionWaitsForTheUpdateBeingDelivered: a permission request read
// while OnUpdate still runs for an update before it is not opened on the
// read loop (dispatcher.openNow) but queued behind it: OnPermission runs
// only once that OnUpdate has returned (wire order).
func TestPermissionWaitsForTheUpdateBeingDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var delivered, askedEarly atomic.Bool
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.Text("first")),
			fakeagent.Ask(fakeagent.PermissionParams("t1", "do it", "execute", alwaysFirst...)),
			fakeagent.Say(fakeagent.Text("{{answer}}")),
		}}}}
		c, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{
			OnUpdate: func(u acp.Update) {
				if m, ok := u.(*acp.MessageChunk); ok && m.Content.Text == "first" {
					<-release
					delivered.Store(true)
				}
			},
			OnPermission: func(context.Context, *acp.PermissionRequest) (string, error) {
				if !delivered.Load() {
					askedEarly.Store(true)
				}
				return "once", nil
			},
		})
		done := make(chan acphost.Response, 1)
		go func() {
			resp, err := c.Generate(acphost.Request{Prompt: "x"})
			assert.NoError(t, err)
			done <- resp
		}()
		synctest.Wait() // OnUpdate holds "first"; the request has been read
		assert.False(t, askedEarly.Load(), "OnPermission ran before the update before it was delivered")
		close(release)
		resp := <-done
		assert.False(t, askedEarly.Load())
		assert.Equal(t, "firstonce", resp.Text)
	})
}
