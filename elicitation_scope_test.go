package acphost

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Request-scoped elicitations: elicitation/create with a requestId naming
// one of the client's requests outside a session (SPEC.md, Elicitation).

// formParams is a form elicitation's params with the given scope members
// (a JSON object's inside, such as `"requestId":2`), its message label.
func formParams(scope, label string) string {
	params := `{"mode":"form","message":` + strconv.Quote(label) + `,"requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}`
	if scope != "" {
		params += "," + scope
	}
	return params + "}"
}

// labelHook records the message of every elicitation it is asked and
// accepts it.
type labelHook struct {
	mu    sync.Mutex
	asked []string
	reqs  []*acp.ElicitationRequest
}

func (l *labelHook) hook(_ context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, req.Message)
	l.reqs = append(l.reqs, req)
	return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"a": "yes"}}, nil
}

func (l *labelHook) labels() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.asked...)
}

// answersByID reads the client's responses from h until it has n of them,
// by id.
func answersByID(t testing.TB, h *hostileAgent, n int) map[string]json.RawMessage {
	got := map[string]json.RawMessage{}
	for len(got) < n {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		line := <-h.answers
		if json.Unmarshal(line, &m) == nil {
			got[string(m.ID)] = line
		}
	}
	return got
}

// An agent cannot pose as part of a request it was not asked: while the
// client's authenticate (id 2) awaits its answer, elicitations whose
// requestId names anything else — a request never sent, initialize (answered
// already), the id as a string, huge, negative, fractional or exponent
// spellings of numbers, null — or that name both a session and a request,
// or neither, are refused -32602 and reach no hook; the one naming
// authenticate reaches OnElicitation as request-scoped.
//
// Against the code before request scope was served every attack here was
// already refused (as "unknown session", no sessionId being known during
// authenticate), and so was the honest request: the test failed only on
// that one, which had to be served.
func TestAttackRequestScopedElicitationPosing(t *testing.T) {
	attacks := map[string]string{
		"never sent":       `"requestId":99`,
		"answered already": `"requestId":1`,
		"string":           `"requestId":"2"`,
		"huge":             `"requestId":18446744073709551618`,
		"max+1 exponent":   `"requestId":1e400`,
		"negative":         `"requestId":-2`,
		"fraction":         `"requestId":2.0`,
		"exponent":         `"requestId":2e0`,
		"null":             `"requestId":null`,
		"object":           `"requestId":{"id":2}`,
		"long string":      `"requestId":"` + strings.Repeat("x", 1<<16) + `"`,
		"both":             `"sessionId":"s1","requestId":2`,
		"both, empty sid":  `"sessionId":"","requestId":2`,
		"neither":          ``,
	}
	hook := &labelHook{}
	var answers map[string]json.RawMessage
	ids := map[string]string{}
	c, _, err := tryConnectHostile(t, context.Background(), ACPOptions{AuthMethod: "login", Elicitation: ElicitationOptions{OnRequest: hook.hook}}, func(h *hostileAgent) {
		go func() {
			auth := <-h.calls
			if auth.Method != "authenticate" || string(auth.ID) != "2" {
				t.Errorf("the agent was sent %s %s, want authenticate 2", auth.Method, auth.ID)
			}
			n := 0
			for name, scope := range attacks {
				id := strconv.Itoa(100 + n)
				ids[name] = id
				n++
				h.send([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"elicitation/create","params":` + formParams(scope, name) + "}\n"))
			}
			h.send([]byte(`{"jsonrpc":"2.0","id":"honest","method":"elicitation/create","params":` + formParams(`"requestId":2`, "honest") + "}\n"))
			answers = answersByID(t, h, n+1)
			h.reply(auth.ID, `{}`)
		}()
	}, "authenticate")
	require.NoError(t, err)
	for name, id := range ids {
		assert.Contains(t, string(answers[id]), `"code":-32602`, name)
		assert.Less(t, len(answers[id]), 512, "%s: the refusal echoes the agent's id whole", name)
	}
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"honest","result":{"action":"accept","content":{"a":"yes"}}}`, string(answers[`"honest"`]))
	assert.Equal(t, []string{"honest"}, hook.labels(), "hooks asked")
	// The ids naming none of the client's requests are counted as foreign
	// (both and neither are malformed params, not counted).
	assert.EqualValues(t, len(attacks)-3, c.Stats().ForeignMessages)
}

// During a turn the same holds for a requestId naming the turn's own
// prompt (a turn's elicitations are session-scoped: they belong to its
// session and turn) and for one naming both the running session and a
// request.
//
// Against the code before request scope was served, "both" was wrong: with
// a sessionId the connection knows, the requestId was ignored and the hook
// asked. The others were refused already (as naming the session "").
func TestAttackRequestScopedElicitationDuringATurn(t *testing.T) {
	hook := &labelHook{}
	c, h := connectHostile(t, ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook.hook}})
	promptID, done := startTurn(t, context.Background(), c.Session(), h, Request{Prompt: "go"})
	attacks := map[string]string{
		"the prompt":            `"requestId":` + promptID,
		"session/new, answered": `"requestId":2`,
		"both":                  `"sessionId":"s1","requestId":` + promptID,
		"both, answered":        `"sessionId":"s1","requestId":2`,
	}
	ids := map[string]string{}
	n := 0
	for name, scope := range attacks {
		id := strconv.Itoa(100 + n)
		ids[name] = id
		n++
		h.send([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"elicitation/create","params":` + formParams(scope, name) + "}\n"))
	}
	h.send([]byte(`{"jsonrpc":"2.0","id":"honest","method":"elicitation/create","params":` + formParams(`"sessionId":"s1"`, "honest") + "}\n"))
	answers := answersByID(t, h, n+1)
	h.reply(json.RawMessage(promptID), `{"stopReason":"end_turn"}`)
	require.NoError(t, (<-done).err)
	for name, id := range ids {
		assert.Contains(t, string(answers[id]), `"code":-32602`, name)
	}
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"honest","result":{"action":"accept","content":{"a":"yes"}}}`, string(answers[`"honest"`]))
	assert.Equal(t, []string{"honest"}, hook.labels(), "hooks asked")
}

// workspaceSchema is a one-field form for the setup of an account.
var workspaceSchema = raw(`{"type":"object","properties":{"workspace":{"type":"string","title":"Workspace"}},"required":["workspace"]}`)

func TestElicitDuringSessionNewAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen *acp.ElicitationRequest
		hook := func(_ context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
			seen = req
			return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"workspace": "acme"}}, nil
		}
		script := fakeagent.Script{BeforeSessionNew: []fakeagent.Step{fakeagent.ElicitForRequest(fakeagent.FormElicitation("Which workspace?", workspaceSchema))}}
		c, fa := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}})
		assert.Equal(t, "s1", c.Session().ID(), "the session opened")
		require.NotNil(t, seen)
		assert.Equal(t, acp.ScopeRequest, seen.Scope)
		assert.Equal(t, "session/new", seen.Method)
		assert.Empty(t, seen.SessionID)
		assert.Equal(t, "Which workspace?", seen.Message)
		assert.Equal(t, "workspace", seen.Form.Fields[0].Name)
		newID := requestIDOf(t, fa.Agent, "session/new")
		assert.JSONEq(t, newID, string(seen.RequestID))

		// The agent got the content before it answered session/new.
		rs := responses(fa.Agent)
		require.NotEmpty(t, rs)
		assert.JSONEq(t, `{"action":"accept","content":{"workspace":"acme"}}`, string(rs[len(rs)-1].Result))
	})
}

// requestIDOf is the id of the first request of method the agent got.
func requestIDOf(t *testing.T, a *fakeagent.Agent, method string) string {
	t.Helper()
	for _, m := range a.Received() {
		if m.Method == method {
			return string(m.ID)
		}
	}
	t.Fatalf("the agent got no %s", method)
	return ""
}

// An agent that asks for authentication (session/new answered -32000)
// elicits during the authenticate the client then sends; the accepted
// answer reaches it and the session opens.
func TestElicitDuringAuthenticate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []*acp.ElicitationRequest
		hook := func(_ context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
			seen = append(seen, req)
			return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"workspace": "acme"}}, nil
		}
		script := fakeagent.Script{RequireAuth: true, AuthMethods: raw(`[{"id":"login","name":"Log in"}]`),
			BeforeAuthenticate: []fakeagent.Step{fakeagent.ElicitForRequest(fakeagent.FormElicitation("Which workspace?", workspaceSchema))}}
		c, fa := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}})
		assert.Equal(t, "s1", c.Session().ID())
		require.Len(t, seen, 1)
		assert.Equal(t, acp.ScopeRequest, seen[0].Scope)
		assert.Equal(t, "authenticate", seen[0].Method)
		assert.JSONEq(t, requestIDOf(t, fa.Agent, "authenticate"), string(seen[0].RequestID))
		var answer string
		for _, m := range fa.Received() {
			if m.Method == "" && strings.Contains(string(m.Result), "action") {
				answer = string(m.Result)
			}
		}
		assert.JSONEq(t, `{"action":"accept","content":{"workspace":"acme"}}`, answer)
	})
}

// waitingHook signals when it is asked and reports its ctx's cause when it
// ends; it then answers accept, which must never be sent.
func waitingHook(asked chan<- *acp.ElicitationRequest, cause chan<- error) ElicitationFunc {
	return func(ctx context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
		asked <- req
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"workspace": "late"}}, nil
	}
}

// actionAnswers are the client's answers that carry an action, in order.
func actionAnswers(fa *fakeagent.Agent) []string {
	var out []string
	for _, m := range fa.Received() {
		if m.Method == "" && (strings.Contains(string(m.Result), "action") || strings.Contains(string(m.Error), "cancelled")) {
			out = append(out, string(m.Result)+string(m.Error))
		}
	}
	return out
}

// The agent answers session/new while the hook still waits: the
// elicitation is settled "cancel" and the hook's ctx ends with
// ErrRequestEnded.
func TestElicitSettledWhenItsRequestIsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, cause := make(chan *acp.ElicitationRequest, 1), make(chan error, 1)
		script := fakeagent.Script{BeforeSessionNew: []fakeagent.Step{
			{Request: fakeagent.ElicitForRequest(fakeagent.FormElicitation("m", workspaceSchema)).Request, ForRequest: true, NoWait: true},
			{Delay: "1s"}, // fake time: the hook is asked meanwhile
		}}
		c, fa := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: waitingHook(asked, cause)}})
		assert.Equal(t, "s1", c.Session().ID())
		req := <-asked
		assert.Equal(t, "session/new", req.Method)
		assert.ErrorIs(t, <-cause, ErrRequestEnded)
		synctest.Wait()
		assert.Equal(t, []string{`{"action":"cancel"}`}, actionAnswers(fa.Agent))
	})
}

// The client gives up on its session/new (ctx cancelled) while the hook
// waits: the call is withdrawn, the elicitation settled "cancel", the
// hook's ctx ended, and the client lives on.
func TestElicitSettledWhenItsRequestIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, cause := make(chan *acp.ElicitationRequest, 1), make(chan error, 1)
		first := true
		hook := func(ctx context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
			if first { // Start's session/new
				first = false
				return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"workspace": "acme"}}, nil
			}
			return waitingHook(asked, cause)(ctx, req)
		}
		script := fakeagent.Script{BeforeSessionNew: []fakeagent.Step{fakeagent.ElicitForRequest(fakeagent.FormElicitation("m", workspaceSchema))}}
		c, fa := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}})
		ctx, cancel := context.WithCancel(context.Background())
		opened := make(chan error, 1)
		go func() {
			_, err := c.NewSession(ctx, SessionOptions{})
			opened <- err
		}()
		<-asked
		cancel()
		require.ErrorIs(t, <-opened, context.Canceled)
		assert.ErrorIs(t, <-cause, ErrRequestEnded)
		synctest.Wait()
		assert.Equal(t, []string{`{"action":"accept","content":{"workspace":"acme"}}`, `{"action":"cancel"}`}, actionAnswers(fa.Agent))
		assert.Len(t, received(fa.Agent, "$/cancel_request"), 1, "session/new withdrawn")
		_, err := c.Generate(Request{Prompt: "still there"})
		require.NoError(t, err)
	})
}

// The agent fails the client's authenticate (an error answer) while the
// hook waits: the hook's ctx ends with ErrRequestEnded and Start fails with
// the agent's error.
func TestElicitSettledWhenItsRequestFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, cause := make(chan *acp.ElicitationRequest, 1), make(chan error, 1)
		hook := waitingHook(asked, cause)
		_, _, err := tryConnectHostile(t, context.Background(), ACPOptions{AuthMethod: "login", Elicitation: ElicitationOptions{OnRequest: hook}}, func(h *hostileAgent) {
			go func() {
				auth := <-h.calls
				h.send([]byte(`{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":` + formParams(`"requestId":`+string(auth.ID), "m") + "}\n"))
				<-asked
				h.send([]byte(`{"jsonrpc":"2.0","id":` + string(auth.ID) + `,"error":{"code":-32603,"message":"no"}}` + "\n"))
			}()
		}, "authenticate")
		require.ErrorIs(t, err, &RPCError{Code: -32603})
		assert.ErrorIs(t, <-cause, ErrRequestEnded)
	})
}

// $/cancel_request for a request-scoped elicitation answers it -32800,
// and Elicitation.Timeout answers it "cancel", as for session-scoped ones.
func TestElicitRequestScopedWithdrawnAndTimedOut(t *testing.T) {
	t.Run("withdrawn", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			asked, cause := make(chan *acp.ElicitationRequest, 1), make(chan error, 1)
			script := fakeagent.Script{BeforeSessionNew: []fakeagent.Step{
				{Request: fakeagent.ElicitForRequest(fakeagent.FormElicitation("m", workspaceSchema)).Request, ForRequest: true, NoWait: true},
				{Delay: "1s"},
				{CancelRequest: true},
			}}
			_, fa := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: waitingHook(asked, cause)}})
			<-asked
			err := <-cause
			assert.ErrorIs(t, err, context.Canceled)
			assert.NotErrorIs(t, err, ErrRequestEnded)
			assert.Equal(t, []string{`{"code":-32800,"message":"request cancelled"}`}, actionAnswers(fa.Agent))
		})
	})
	t.Run("timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			asked, cause := make(chan *acp.ElicitationRequest, 1), make(chan error, 1)
			script := fakeagent.Script{BeforeSessionNew: []fakeagent.Step{fakeagent.ElicitForRequest(fakeagent.FormElicitation("m", workspaceSchema))}}
			start := time.Now()
			_, fa := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: waitingHook(asked, cause), Timeout: time.Minute}})
			assert.Equal(t, time.Minute, time.Since(start))
			<-asked
			assert.ErrorIs(t, <-cause, context.DeadlineExceeded)
			assert.Equal(t, []string{`{"action":"cancel"}`}, actionAnswers(fa.Agent))
		})
	})
}

// Close while a request-scoped elicitation's hook waits ends the hook's
// ctx; the call fails.
func TestElicitRequestScopedCloseEndsTheHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, cause := make(chan *acp.ElicitationRequest, 2), make(chan error, 2)
		first := true
		hook := func(ctx context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
			if first {
				first = false
				return ElicitationAnswer{Action: acp.ElicitDecline}, nil
			}
			return waitingHook(asked, cause)(ctx, req)
		}
		script := fakeagent.Script{BeforeSessionNew: []fakeagent.Step{fakeagent.ElicitForRequest(fakeagent.FormElicitation("m", workspaceSchema))}}
		c, _ := connectFake(t, script, ACPOptions{Elicitation: ElicitationOptions{OnRequest: hook}})
		opened := make(chan error, 1)
		go func() {
			_, err := c.NewSession(context.Background(), SessionOptions{})
			opened <- err
		}()
		<-asked
		require.NoError(t, c.Close())
		assert.ErrorIs(t, <-cause, context.Canceled)
		assert.Error(t, <-opened)
	})
}

// A request-scoped URL elicitation's elicitation/complete reaches
// Elicitation.OnComplete, with the method it belonged to.
func TestElicitRequestScopedURLAndComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen *acp.ElicitationRequest
		var completed []acp.ElicitationComplete
		hook := func(_ context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
			seen = req
			return ElicitationAnswer{Action: acp.ElicitAccept}, nil
		}
		script := fakeagent.Script{BeforeAuthenticate: []fakeagent.Step{
			fakeagent.ElicitForRequest(fakeagent.URLElicitation("gh-1", "https://agent.example.com/connect?e=gh-1", "Authorize")),
			fakeagent.ElicitationComplete("gh-1"),
		}}
		_, fa := connectFake(t, script, ACPOptions{AuthMethod: "login",
			Elicitation: ElicitationOptions{OnRequest: hook, OnComplete: func(c acp.ElicitationComplete) { completed = append(completed, c) }},
		})
		synctest.Wait()
		require.NotNil(t, seen)
		assert.Equal(t, acp.ModeURL, seen.Mode)
		assert.Equal(t, "authenticate", seen.Method)
		assert.Equal(t, []acp.ElicitationComplete{{ElicitationID: "gh-1", Method: "authenticate"}}, completed)
		assert.Equal(t, []string{`{"action":"accept"}`}, actionAnswers(fa.Agent))
	})
}

// A flood of request-scoped elicitations nobody answers, sent while the
// client's authenticate waits (so the request budget is lifted, see
// SPEC.md Containment), stops the agent at the lifted bound with ErrFlood:
// no more hooks are asked than that bound, and none outlives the failed
// start.
func TestAttackRequestScopedElicitationFloodIsBounded(t *testing.T) {
	var asked, ended atomic.Int64
	hook := func(ctx context.Context, _ *acp.ElicitationRequest) (ElicitationAnswer, error) {
		asked.Add(1)
		<-ctx.Done()
		ended.Add(1)
		return ElicitationAnswer{Action: acp.ElicitDecline}, nil
	}
	const n = 5000
	type flooding struct {
		sent     *atomic.Int64
		finished chan struct{}
	}
	started := make(chan flooding, 1)
	_, _, err := tryConnectHostile(t, context.Background(), ACPOptions{AuthMethod: "login", Elicitation: ElicitationOptions{OnRequest: hook}}, func(h *hostileAgent) {
		go func() {
			auth := <-h.calls
			sent, finished := flood(h, n, func(i int) []byte {
				return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"elicitation/create","params":%s}`+"\n", 1000+i, formParams(`"requestId":`+string(auth.ID), "m"))
			})
			started <- flooding{sent, finished}
		}()
	}, "authenticate")
	require.ErrorIs(t, err, ErrFlood)
	f := <-started
	<-f.finished
	require.Less(t, f.sent.Load(), int64(n), "the whole flood was read")
	assert.LessOrEqual(t, asked.Load(), int64(liftedFactor*defaultMaxPendingRequests), "hooks asked")
	assert.Equal(t, asked.Load(), ended.Load(), "a hook outlived the failed start")
}

// OnUpdate may open a session (it holds the dispatcher meanwhile): an
// elicitation during that session/new is served anyway, because a
// request-scoped one does not wait for the dispatcher.
func TestElicitDuringSessionNewFromOnUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var methods []string
		hook := func(_ context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
			methods = append(methods, req.Method)
			return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"workspace": "acme"}}, nil
		}
		script := fakeagent.Script{BeforeSessionNew: []fakeagent.Step{fakeagent.ElicitForRequest(fakeagent.FormElicitation("m", workspaceSchema))}}
		var c *ACPClient
		var opened *Session
		var openErr error
		ready := make(chan struct{})
		onUpdate := func(acp.Update) {
			<-ready
			if opened == nil && openErr == nil {
				opened, openErr = c.NewSession(context.Background(), SessionOptions{})
			}
		}
		c, _ = connectFake(t, script, ACPOptions{OnUpdate: onUpdate, Elicitation: ElicitationOptions{OnRequest: hook}})
		close(ready)
		_, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		require.NoError(t, openErr)
		require.NotNil(t, opened)
		assert.Equal(t, []string{"session/new", "session/new"}, methods)
	})
}
