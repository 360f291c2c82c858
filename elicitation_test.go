package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// colorSchema is the shape Claude's adapter sends for AskUserQuestion.
var colorSchema = raw(`{"type":"object","properties":{
 "question_0":{"type":"string","title":"Color","oneOf":[{"const":"Red","title":"Red","description":"warm"},{"const":"Blue","title":"Blue"}]},
 "question_0_custom":{"type":"string","title":"Other","description":"free text"},
 "count":{"type":"integer","minimum":1,"maximum":3,"default":2}},
 "required":["question_0"]}`)

// elicitTurn is a script whose one turn elicits with these params, then
// ends.
func elicitTurn(params json.RawMessage) fakeagent.Script {
	return fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Elicit(params)}}}}
}

// elicitAnswer runs one turn and returns the client's answer to the
// agent's elicitation/create (result or error).
func elicitAnswer(t *testing.T, script fakeagent.Script, opts ACPOptions) fakeagent.Message {
	t.Helper()
	var ans fakeagent.Message
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, script, opts)
		_, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		rs := responses(fa.Agent)
		require.NotEmpty(t, rs)
		ans = rs[len(rs)-1]
	})
	return ans
}

func TestElicitNoHookAnswersInvalidParams(t *testing.T) {
	// The spec: "Requests using a mode the Client has not advertised
	// produce JSON-RPC -32602 (Invalid params)."
	ans := elicitAnswer(t, elicitTurn(fakeagent.FormElicitation("pick", colorSchema)), ACPOptions{})
	assert.JSONEq(t, `{"code":-32602,"message":"elicitation mode \"form\" was not advertised"}`, string(ans.Error))
}

func TestElicitForeignSessionRefused(t *testing.T) {
	params := raw(`{"sessionId":"not-mine","mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}`)
	ans := elicitAnswer(t, elicitTurn(params), ACPOptions{})
	assert.JSONEq(t, `{"code":-32602,"message":"unknown session: \"not-mine\""}`, string(ans.Error))
}

// elicitRun runs one turn as a stream and returns its elicitation events
// and the agent's last response from the client.
func elicitRun(t *testing.T, script fakeagent.Script, opts ACPOptions) (events []StreamEvent, ans fakeagent.Message) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, script, opts)
		_, err := c.GenerateStream(context.Background(), Request{Prompt: "x"}, func(ev StreamEvent) {
			if ev.Type == EventElicitation || ev.Type == EventElicitationAnswer {
				events = append(events, ev)
			}
		})
		require.NoError(t, err)
		synctest.Wait()
		rs := responses(fa.Agent)
		require.NotEmpty(t, rs)
		ans = rs[len(rs)-1]
	})
	return events, ans
}

func answerWith(ans ElicitationAnswer, err error) ElicitationFunc {
	return func(context.Context, *acp.ElicitationRequest) (ElicitationAnswer, error) { return ans, err }
}

func TestElicitFormAcceptedReachesTheAgent(t *testing.T) {
	var seen *acp.ElicitationRequest
	hook := func(_ context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
		seen = req
		return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"question_0": "Red", "count": 3, "question_0_custom": "a note"}}, nil
	}
	events, ans := elicitRun(t, elicitTurn(fakeagent.FormElicitation("Which color?", colorSchema)), ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}})
	assert.JSONEq(t, `{"action":"accept","content":{"question_0":"Red","count":3,"question_0_custom":"a note"}}`, string(ans.Result))

	require.NotNil(t, seen)
	assert.Equal(t, acp.ModeForm, seen.Mode)
	assert.Equal(t, "Which color?", seen.Message)
	assert.Equal(t, "s1", seen.SessionID)
	assert.Equal(t, acp.ScopeSession, seen.Scope)
	assert.Empty(t, seen.Method)
	require.Len(t, seen.Form.Fields, 3)
	q := seen.Form.Fields[0] // in the order sent
	assert.Equal(t, "question_0", q.Name)
	assert.Equal(t, acp.FormEnum, q.Kind)
	assert.True(t, q.Required)
	assert.Equal(t, []acp.FormChoice{{Value: "Red", Title: "Red", Description: "warm"}, {Value: "Blue", Title: "Blue"}}, q.Choices)
	custom := seen.Form.Fields[1]
	assert.Equal(t, acp.FormString, custom.Kind)
	assert.False(t, custom.Required)
	n := seen.Form.Field("count")
	assert.Equal(t, acp.FormInteger, n.Kind)
	assert.Equal(t, int64(2), n.Default)
	assert.Equal(t, 1.0, *n.Minimum)
	assert.Equal(t, 3.0, *n.Maximum)

	require.Len(t, events, 2)
	assert.Equal(t, EventElicitation, events[0].Type)
	assert.Same(t, seen, events[0].Elicitation)
	assert.Equal(t, EventElicitationAnswer, events[1].Type)
	assert.Equal(t, acp.ElicitAccept, events[1].ElicitationAnswer.Action)
	assert.Equal(t, ReasonHook, events[1].ElicitationAnswer.Reason)
}

func TestElicitInvalidContentNeverSent(t *testing.T) {
	cases := map[string]map[string]any{
		"not a choice":      {"question_0": "Green"},
		"required missing":  {"count": 2},
		"unknown field":     {"question_0": "Red", "admin": true},
		"wrong type":        {"question_0": "Red", "count": "3"},
		"out of range":      {"question_0": "Red", "count": 4},
		"not an integer":    {"question_0": "Red", "count": 2.5},
		"string for a bool": {"question_0": 1},
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			hook := answerWith(ElicitationAnswer{Action: acp.ElicitAccept, Content: content}, nil)
			events, ans := elicitRun(t, elicitTurn(fakeagent.FormElicitation("m", colorSchema)), ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}})
			assert.JSONEq(t, `{"action":"cancel"}`, string(ans.Result))
			require.Len(t, events, 2)
			a := events[1].ElicitationAnswer
			assert.Equal(t, ReasonInvalid, a.Reason)
			assert.ErrorIs(t, a.Err, acp.ErrElicitationContent)
			var ce *acp.FormContentError
			assert.True(t, errors.As(a.Err, &ce))
		})
	}
}

func TestElicitDeclineErrorAndPanic(t *testing.T) {
	cases := []struct {
		name string
		hook ElicitationFunc
		want string
	}{
		{"decline", answerWith(ElicitationAnswer{Action: acp.ElicitDecline, Content: map[string]any{"x": 1}}, nil), `{"action":"decline"}`},
		{"cancel", answerWith(ElicitationAnswer{Action: acp.ElicitCancel}, nil), `{"action":"cancel"}`},
		{"error", answerWith(ElicitationAnswer{Action: acp.ElicitAccept}, errors.New("ui gone")), `{"action":"cancel"}`},
		{"unknown action", answerWith(ElicitationAnswer{Action: "maybe"}, nil), `{"action":"cancel"}`},
		{"panic", func(context.Context, *acp.ElicitationRequest) (ElicitationAnswer, error) { panic("boom") }, `{"action":"cancel"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ans := elicitAnswer(t, elicitTurn(fakeagent.FormElicitation("m", colorSchema)), ACPOptions{Elicitation: ElicitationOptions{OnRequest: tc.hook}})
			assert.JSONEq(t, tc.want, string(ans.Result))
		})
	}
}

// blockingHook signals when it is asked and reports why its ctx ended.
func blockingHook(asked chan<- struct{}, ended chan<- error) ElicitationFunc {
	return func(ctx context.Context, _ *acp.ElicitationRequest) (ElicitationAnswer, error) {
		close(asked)
		<-ctx.Done()
		ended <- ctx.Err()
		return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"question_0": "Red"}}, nil
	}
}

func TestElicitCancelledWithTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, ended := make(chan struct{}), make(chan error, 1)
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			{Request: fakeagent.Elicit(fakeagent.FormElicitation("m", colorSchema)).Request, NoWait: true},
			{WaitCancel: true},
		}}}}
		c, fa := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: blockingHook(asked, ended)}})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-asked; cancel() }()
		resp, err := c.GenerateCtx(ctx, Request{Prompt: "x"})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, acp.StopCancelled, resp.StopReason)
		synctest.Wait()
		assert.ErrorIs(t, <-ended, context.Canceled)
		rs := responses(fa.Agent)
		var got []string
		for _, r := range rs {
			if r.Result != nil && strings.Contains(string(r.Result), "action") {
				got = append(got, string(r.Result))
			}
		}
		assert.Equal(t, []string{`{"action":"cancel"}`}, got)
	})
}

func TestElicitWithdrawnByCancelRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, ended := make(chan struct{}), make(chan error, 1)
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			{Request: fakeagent.Elicit(fakeagent.FormElicitation("m", colorSchema)).Request, NoWait: true},
			{Delay: "1s"}, // fake time: the hook is asked meanwhile
			{CancelRequest: true},
		}}}}
		c, fa := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: blockingHook(asked, ended)}})
		_, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		select {
		case <-asked:
		default:
			t.Fatal("the hook was never asked")
		}
		assert.ErrorIs(t, <-ended, context.Canceled)
		rs := responses(fa.Agent)
		require.NotEmpty(t, rs)
		assert.JSONEq(t, `{"code":-32800,"message":"request cancelled"}`, string(rs[len(rs)-1].Error))
	})
}

func TestElicitTimeout(t *testing.T) {
	asked, ended := make(chan struct{}), make(chan error, 1)
	events, ans := elicitRun(t, elicitTurn(fakeagent.FormElicitation("m", colorSchema)), ACPOptions{Elicitation: ElicitationOptions{OnRequest: blockingHook(asked, ended), Timeout: time.Minute}})
	assert.JSONEq(t, `{"action":"cancel"}`, string(ans.Result))
	require.Len(t, events, 2)
	assert.Equal(t, ReasonTimeout, events[1].ElicitationAnswer.Reason)
	assert.ErrorIs(t, <-ended, context.DeadlineExceeded)
}

func TestElicitURLAndComplete(t *testing.T) {
	var completed []acp.ElicitationComplete
	var seen *acp.ElicitationRequest
	hook := func(_ context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
		seen = req
		return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"ignored": 1}}, nil
	}
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.ElicitationComplete("e1"), // before it was asked: unknown
		fakeagent.Elicit(fakeagent.URLElicitation("e1", "https://example.com/auth?x=1", "Log in")),
		fakeagent.ElicitationComplete("other"),
		fakeagent.ElicitationComplete("e1"),
		fakeagent.ElicitationComplete("e1"), // completed already
	}}}}
	var ans fakeagent.Message
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook, OnComplete: func(c acp.ElicitationComplete) { completed = append(completed, c) }}})
		_, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		rs := responses(fa.Agent)
		ans = rs[len(rs)-1]
	})
	assert.JSONEq(t, `{"action":"accept"}`, string(ans.Result))
	require.NotNil(t, seen)
	assert.Equal(t, acp.ModeURL, seen.Mode)
	assert.Equal(t, "https://example.com/auth?x=1", seen.URL)
	assert.Equal(t, "e1", seen.ElicitationID)
	assert.Equal(t, []acp.ElicitationComplete{{ElicitationID: "e1", SessionID: "s1"}}, completed)
}

func TestElicitModeNotAdvertised(t *testing.T) {
	hook := answerWith(ElicitationAnswer{Action: acp.ElicitAccept}, nil)
	ans := elicitAnswer(t, elicitTurn(fakeagent.URLElicitation("e1", "https://example.com/", "m")), ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook, Modes: []acp.ElicitationMode{acp.ModeForm}}})
	assert.JSONEq(t, `{"code":-32602,"message":"elicitation mode \"url\" was not advertised"}`, string(ans.Error))
	ans = elicitAnswer(t, elicitTurn(raw(`{"mode":"_vendor","message":"m"}`)), ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}})
	assert.JSONEq(t, `{"code":-32602,"message":"elicitation mode \"_vendor\" was not advertised"}`, string(ans.Error))
}

func TestElicitMalformedRequestRefused(t *testing.T) {
	hook := answerWith(ElicitationAnswer{Action: acp.ElicitAccept}, nil)
	for name, params := range map[string]string{
		"no message":          `{"mode":"form","requestedSchema":{"type":"object","properties":{}}}`,
		"no schema":           `{"mode":"form","message":"m"}`,
		"schema not object":   `{"mode":"form","message":"m","requestedSchema":{"type":"string"}}`,
		"schema not JSON obj": `{"mode":"form","message":"m","requestedSchema":[1]}`,
		"duplicate property":  `{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"number"}}}}`,
		"required not a prop": `{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{},"required":["x"]}}`,
		"url not absolute":    `{"mode":"url","message":"m","elicitationId":"e","url":"/relative"}`,
		"url without id":      `{"mode":"url","message":"m","url":"https://example.com"}`,
	} {
		t.Run(name, func(t *testing.T) {
			ans := elicitAnswer(t, elicitTurn(raw(params)), ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}})
			assert.Contains(t, string(ans.Error), `"code":-32602`)
		})
	}
}

func TestElicitCapabilityOnlyWithHook(t *testing.T) {
	hook := answerWith(ElicitationAnswer{Action: acp.ElicitDecline}, nil)
	caps := func(opts ACPOptions) map[string]json.RawMessage {
		var got map[string]json.RawMessage
		synctest.Test(t, func(t *testing.T) {
			_, fa := connectFake(t, fakeagent.Script{}, opts)
			var p struct {
				ClientCapabilities map[string]json.RawMessage `json:"clientCapabilities"`
			}
			require.NoError(t, json.Unmarshal(received(fa.Agent, "initialize")[0], &p))
			got = p.ClientCapabilities
		})
		return got
	}
	_, ok := caps(ACPOptions{})["elicitation"]
	assert.False(t, ok, "advertised without a hook")
	assert.JSONEq(t, `{"form":{},"url":{}}`, string(caps(ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}})["elicitation"]))
	assert.JSONEq(t, `{"form":{}}`, string(caps(ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook, Modes: []acp.ElicitationMode{acp.ModeForm}}})["elicitation"]))
}

func TestElicitSessionHookOverrides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, elicitTurn(fakeagent.FormElicitation("m", colorSchema)), ACPOptions{Elicitation: ElicitationOptions{OnRequest: answerWith(ElicitationAnswer{Action: acp.ElicitCancel}, nil)}})
		s, err := c.NewSession(context.Background(), SessionOptions{OnElicitation: answerWith(ElicitationAnswer{Action: acp.ElicitDecline}, nil)})
		require.NoError(t, err)
		_, err = s.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		rs := responses(fa.Agent)
		assert.JSONEq(t, `{"action":"decline"}`, string(rs[len(rs)-1].Result))
	})
}

func TestFormSchemaWithoutTypeIsAnObject(t *testing.T) {
	f, err := acp.ParseFormSchema(raw(`{"properties":{"a":{"type":"boolean"}}}`))
	require.NoError(t, err)
	assert.Equal(t, acp.FormBoolean, f.Fields[0].Kind)
}

func TestFormValidate(t *testing.T) {
	schema := raw(`{"type":"object","properties":{
	 "email":{"type":"string","format":"email"},
	 "site":{"type":"string","format":"uri"},
	 "day":{"type":"string","format":"date"},
	 "at":{"type":"string","format":"date-time"},
	 "code":{"type":"string","pattern":"^[A-Z]{3}$","minLength":3,"maxLength":3},
	 "name":{"type":"string","minLength":2,"maxLength":4},
	 "ratio":{"type":"number","minimum":0,"maximum":1},
	 "ok":{"type":"boolean","default":false},
	 "tags":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b","c"]}},
	 "size":{"type":"string","enum":["s","m"],"enumNames":["Small","Medium"]},
	 "blob":{"type":"object"}}}`)
	f, err := acp.ParseFormSchema(schema)
	require.NoError(t, err)
	assert.Equal(t, []acp.FormChoice{{Value: "s", Title: "Small"}, {Value: "m", Title: "Medium"}}, f.Field("size").Choices)
	assert.Equal(t, acp.FormMultiSelect, f.Field("tags").Kind)
	assert.Equal(t, acp.FormOther, f.Field("blob").Kind)
	assert.Equal(t, false, f.Field("ok").Default)
	good := map[string]any{"email": "a@b.example", "site": "https://x.example/p", "day": "2026-12-01", "at": "2026-12-01T10:00:00Z",
		"code": "ABC", "name": "héé", "ratio": json.Number("0.5"), "ok": true, "tags": []string{"a", "c"}, "size": "m"}
	out, err := f.Validate(good)
	require.NoError(t, err)
	assert.Equal(t, 0.5, out["ratio"])
	for name, bad := range map[string]map[string]any{
		"email":         {"email": "not an address"},
		"uri":           {"site": "relative/path"},
		"date":          {"day": "01/12/2026"},
		"date-time":     {"at": "2026-12-01"},
		"pattern":       {"code": "abc"},
		"too short":     {"name": "x"},
		"too long":      {"name": "xxxxx"},
		"number range":  {"ratio": 1.5},
		"NaN":           {"ratio": math.NaN()},
		"tags empty":    {"tags": []string{}},
		"tags too many": {"tags": []string{"a", "b", "c"}},
		"tag unknown":   {"tags": []string{"z"}},
		"tags type":     {"tags": []any{"a"}},
		"enum":          {"size": "Small"},
		"other kind":    {"blob": map[string]any{}},
		"bad utf8":      {"name": "\xff\xfe"},
	} {
		_, err := f.Validate(bad)
		assert.ErrorIs(t, err, acp.ErrElicitationContent, name)
	}
}

func TestElicitCloseEndsTheHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, ended := make(chan struct{}), make(chan error, 1)
		c, _ := connectFake(t, elicitTurn(fakeagent.FormElicitation("m", colorSchema)), ACPOptions{Elicitation: ElicitationOptions{OnRequest: blockingHook(asked, ended)}})
		done := make(chan error, 1)
		go func() { _, err := c.Generate(Request{Prompt: "x"}); done <- err }()
		<-asked
		require.NoError(t, c.Close())
		assert.ErrorIs(t, <-ended, context.Canceled)
		assert.Error(t, <-done)
	})
}

func TestElicitWithdrawnBeforeTheHookIsAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var asked atomic.Bool
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.Text("hold the dispatcher")),
			{Request: fakeagent.Elicit(fakeagent.FormElicitation("m", colorSchema)).Request, NoWait: true},
			{CancelRequest: true},
		}}}}
		hook := func(context.Context, *acp.ElicitationRequest) (ElicitationAnswer, error) {
			asked.Store(true)
			return ElicitationAnswer{Action: acp.ElicitDecline}, nil
		}
		c, fa := connectFake(t, script, ACPOptions{OnUpdate: func(acp.Update) { <-release }, Elicitation: ElicitationOptions{OnRequest: hook}})
		done := make(chan error, 1)
		go func() { _, err := c.Generate(Request{Prompt: "x"}); done <- err }()
		synctest.Wait() // OnUpdate holds the dispatcher; $/cancel_request has been read
		close(release)
		require.NoError(t, <-done)
		assert.False(t, asked.Load(), "a withdrawn request reached the hook")
		rs := responses(fa.Agent)
		assert.JSONEq(t, `{"code":-32800,"message":"request cancelled"}`, string(rs[len(rs)-1].Error))
	})
}

func TestAttackElicitationFloodIsBounded(t *testing.T) {
	base := runtime.NumGoroutine()
	var asked, ended atomic.Int64
	hook := func(ctx context.Context, _ *acp.ElicitationRequest) (ElicitationAnswer, error) {
		asked.Add(1)
		<-ctx.Done() // nobody ever answers
		ended.Add(1)
		return ElicitationAnswer{Action: acp.ElicitDecline}, nil
	}
	c, h := connectHostile(t, ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}, Timeouts: Timeouts{CancelGrace: 200 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, done := startTurn(t, ctx, c.Session(), h, Request{Prompt: "go"})
	const n = 5000
	sent, finished := flood(h, n, func(i int) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"elicitation/create","params":{"sessionId":"s1","mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}}`+"\n", 1000+i)
	})
	waitPaused(t, "elicitations", finished, sent, func() bool { return c.agent().requests.full() })
	grown := runtime.NumGoroutine() - base
	require.Less(t, grown, defaultMaxPendingRequests+32, "goroutines after %d elicitations were read", sent.Load())
	require.Less(t, sent.Load(), int64(defaultMaxPendingRequests+16), "elicitations read while none could be answered")

	cancel() // the stop button answers them all "cancel", and those still coming
	<-done
	<-finished
	require.NoError(t, c.Close())
	assert.Equal(t, asked.Load(), ended.Load(), "a hook outlived Close")
}

func TestElicitStreamEventsInWireOrder(t *testing.T) {
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("before")),
		fakeagent.Elicit(fakeagent.FormElicitation("m", colorSchema)),
		fakeagent.Say(fakeagent.Text("after")),
	}}}}
	var types []EventType
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: answerWith(ElicitationAnswer{Action: acp.ElicitDecline}, nil)}})
		_, err := c.GenerateStream(context.Background(), Request{Prompt: "x"}, func(ev StreamEvent) { types = append(types, ev.Type) })
		require.NoError(t, err)
	})
	assert.Equal(t, []EventType{EventText, EventElicitation, EventElicitationAnswer, EventText, EventDone}, types)
}
