package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Many request-scoped elicitations for one authenticate, then its answer
// in the same write as the last of them, then a $/cancel_request for every
// one of them: hooks that answer at once race the end of the request, the
// others wait for it. Each elicitation is answered exactly once (accept
// from its hook or cancel for the end of its request, never both, never
// -32800 for a withdrawal that came after it was settled), no hook's ctx
// ends for another reason than the end of its request, and nothing more is
// written. Run with -race -count.
func TestAttackRequestScopedElicitationsRaceTheirRequestsEnd(t *testing.T) {
	const n = 48
	var h *hostileAgent
	t.Cleanup(func() { // after the client's Close and the agent's end
		if h == nil {
			return
		}
		for len(h.answers) > 0 {
			t.Errorf("an answer more than one per elicitation: %s", <-h.answers)
		}
	})
	var mu sync.Mutex
	var causes []error
	hook := func(ctx context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
		if strings.HasSuffix(req.Message, "now") {
			return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"a": "yes"}}, nil
		}
		<-ctx.Done()
		mu.Lock()
		causes = append(causes, context.Cause(ctx))
		mu.Unlock()
		return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"a": "late"}}, nil
	}
	got := make(chan map[string]json.RawMessage, 1)
	c, agent, err := tryConnectHostile(t, context.Background(), ACPOptions{AuthMethod: "login", Elicitation: ElicitationOptions{OnRequest: hook}}, func(h *hostileAgent) {
		go func() {
			auth := <-h.calls
			var b []byte
			for i := range n {
				label := "wait"
				if i%2 == 0 {
					label = "now"
				}
				b = fmt.Appendf(b, `{"jsonrpc":"2.0","id":%d,"method":"elicitation/create","params":%s}`+"\n", 100+i, formParams(`"requestId":`+string(auth.ID), label))
			}
			b = fmt.Appendf(b, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", auth.ID)
			h.send(b)
			answers := answersByID(t, h, n)
			var cancels []byte
			for i := range n {
				cancels = fmt.Appendf(cancels, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}`+"\n", 100+i)
			}
			h.send(cancels)
			got <- answers
		}()
	}, "authenticate")
	require.NoError(t, err)
	h = agent
	answers := <-got
	for i := range n {
		id := fmt.Sprint(100 + i)
		var m struct {
			Result struct {
				Action  string         `json:"action"`
				Content map[string]any `json:"content"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal(answers[id], &m), id)
		assert.Nil(t, m.Error, "%s: %s", id, answers[id])
		switch m.Result.Action {
		case "accept":
			assert.Equal(t, map[string]any{"a": "yes"}, m.Result.Content, "%s: a late answer was sent", id)
		case "cancel":
		default:
			t.Errorf("%s answered %s", id, answers[id])
		}
	}
	require.NoError(t, c.Close())
	mu.Lock()
	defer mu.Unlock()
	for _, cause := range causes {
		assert.True(t, errors.Is(cause, ErrRequestEnded), "a hook's ctx ended with %v", cause)
	}
}

// An agent's authMethods are its own words: an AuthError's message lists
// a bounded number of them, each cut short, with no control characters,
// escape sequences or line breaks of the agent's, and still names the
// first ones and says how many more there are.
func TestAttackAuthErrorMessageIsBounded(t *testing.T) {
	methods := []acp.AuthMethod{{ID: "tui"}, {ID: "evil\x1b]0;pwned\x07\nFAKE LOG LINE\u202e"}}
	for i := range 10000 {
		methods = append(methods, acp.AuthMethod{ID: strings.Repeat("x", 1000) + fmt.Sprint(i)})
	}
	err := &AuthError{Methods: methods, Err: &RPCError{Code: acp.CodeAuthRequired, Message: "Authentication required", Method: "session/new"}}
	msg := err.Error()
	assert.Less(t, len(msg), 2048, "the message holds the agent's whole list")
	assert.Contains(t, msg, "its methods: tui, ")
	assert.Contains(t, msg, "more")
	assert.NotContains(t, msg, "\x1b")
	assert.NotContains(t, msg, "\x07")
	assert.NotContains(t, msg, "\n")
	assert.NotContains(t, msg, "\u202e")
	assert.Equal(t, 1, strings.Count(msg, "session/new"), msg)
	assert.ErrorIs(t, wrapOp("session/new", err), ErrAuthRequired)

	// The method tried may be the agent's too (its first one), and so may
	// the authenticate that failed.
	err.Tried = strings.Repeat("y", 1<<20)
	assert.Less(t, len(err.Error()), 2048, "the message holds the agent's whole method id")
	failed := wrapOp(authenticateOp(strings.Repeat("z", 1<<20)), &RPCError{Code: -32603, Message: "no"})
	assert.Less(t, len(failed.Error()), 2048, "the message holds the agent's whole method id")
}

// A terminal login is the agent's own program run again: only the client
// that started that program knows it. An agent reached over a stream
// (a StreamTransport: a socket, pipes to something the client did not start) offering
// a terminal method gets no command from TerminalCommand or
// TerminalAuthCommand — not the client's unrelated Command, not an empty
// program with the agent's args — but ErrUnsupported.
func TestAttackTerminalLoginOfAConnectedAgentIsNoCommand(t *testing.T) {
	methods := raw(`[{"id":"tui","name":"Log in","type":"terminal","args":["--login"]}]`)
	synctest.Test(t, func(t *testing.T) {
		// A Command beside the stream is refused: it cannot become the
		// login command of an agent the client did not start.
		_, _, err := tryConnectFake(t, fakeagent.Script{RequireAuth: true, AuthMethods: methods},
			ACPOptions{Command: "/usr/bin/not-the-agent", Advertise: AdvertiseOptions{TerminalAuth: true}})
		require.ErrorContains(t, err, "a StreamTransport reaches one already running")
		_, _, err = tryConnectFake(t, fakeagent.Script{RequireAuth: true, AuthMethods: methods},
			ACPOptions{Advertise: AdvertiseOptions{TerminalAuth: true}})
		var ae *AuthError
		require.ErrorAs(t, err, &ae)
		cmd, args, _, cerr := ae.TerminalCommand("tui")
		assert.ErrorIs(t, cerr, ErrUnsupported, "a command %q %q for an agent the client did not start", cmd, args)

		c, _ := connectFake(t, fakeagent.Script{AuthMethods: methods}, ACPOptions{Advertise: AdvertiseOptions{TerminalAuth: true}})
		cmd, args, _, cerr = c.TerminalAuthCommand("tui")
		assert.ErrorIs(t, cerr, ErrUnsupported, "a command %q %q for an agent the client did not start", cmd, args)
	})
	// The agent the client started gets its own command.
	_, err := startFake(t, fakeagent.Script{RequireAuth: true, AuthMethods: methods}, ACPOptions{Advertise: AdvertiseOptions{TerminalAuth: true}})
	var ae *AuthError
	require.ErrorAs(t, err, &ae)
	cmd, args, _, err := ae.TerminalCommand("tui")
	require.NoError(t, err)
	assert.NotEmpty(t, cmd)
	assert.Equal(t, "--login", args[len(args)-1])
	_, _, _, err = ae.TerminalCommand("KEY")
	assert.ErrorIs(t, err, ErrUnsupported, "not a method of the agent's")
}
