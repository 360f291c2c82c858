package acphost

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

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
	reqs  []*ElicitationRequest
}

func (l *labelHook) hook(_ context.Context, req *ElicitationRequest) (ElicitationAnswer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, req.Message)
	l.reqs = append(l.reqs, req)
	return ElicitationAnswer{Action: ElicitAccept, Content: map[string]any{"a": "yes"}}, nil
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
// authenticate) and so were the honest request: the test failed only on
// the last, which had to be served.
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
		"both":             `"sessionId":"s1","requestId":2`,
		"both, empty sid":  `"sessionId":"","requestId":2`,
		"neither":          ``,
	}
	hook := &labelHook{}
	var answers map[string]json.RawMessage
	ids := map[string]string{}
	c, _, err := tryConnectHostile(t, context.Background(), ACPOptions{AuthMethod: "login", OnElicitation: hook.hook}, func(h *hostileAgent) {
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
	c, h := connectHostile(t, ACPOptions{OnElicitation: hook.hook})
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

var _ = fmt.Sprintf
var _ = strings.Contains
