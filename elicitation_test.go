package acphost

import (
	"encoding/json"
	"testing"
	"testing/synctest"

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
