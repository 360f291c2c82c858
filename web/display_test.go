package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bidi holds the controls SafeText removes.
const bidi = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b"

// TestDisplayStringsSafe: every name the page shows is SafeText'd, also
// when the agent gave only an id (a mode without a name, a field without a
// title, a choice without a title); the raw ids stay for answering.
func TestDisplayStringsSafe(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{
		"\u202eevil":{"type":"string"},
		"pick":{"type":"string","enum":["\u202esey","no"]}}}`)
	script := fakeagent.Script{
		NewSessionResult: json.RawMessage(`{"modes":{"currentModeId":"\u202eedoc","availableModes":[{"id":"\u202eedoc","name":""},{"id":"ask","name":"Ask"}]}}`),
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Elicit(fakeagent.FormElicitation("Pick one", schema)),
			fakeagent.Say(fakeagent.Text("thanks")),
		}}}}
	r := newRig(t, script, nil)
	tb := r.tab()
	st := tb.next("state", ofType("state"))
	modes := st.list("modes")
	require.Len(t, modes, 2)
	assert.Equal(t, "\u202eedoc", modes[0].str("value"), "the raw id, to answer with")
	assert.Equal(t, "edoc", modes[0].str("name"))
	assert.Equal(t, "Ask", modes[1].str("name"))

	r.post("/api/prompt", map[string]string{"text": "ask"}, http.StatusOK)
	d := tb.dialog("elicitation")
	fields := d.sub("elicitation").list("fields")
	require.Len(t, fields, 2)
	for _, f := range fields {
		assert.False(t, strings.ContainsAny(f.str("label"), bidi), "label %q", f.str("label"))
		assert.NotEmpty(t, f.str("label"))
		for _, c := range f.list("choices") {
			assert.False(t, strings.ContainsAny(c.str("name"), bidi), "choice %q", c.str("name"))
			assert.NotEmpty(t, c.str("name"))
		}
	}
	// Answered with the raw name.
	var evil string
	for _, f := range fields {
		if f.str("label") == "evil" {
			evil = f.str("name")
		}
	}
	assert.Equal(t, "\u202eevil", evil)
	r.post("/api/elicitation", map[string]any{"id": d.str("id"), "action": "accept", "content": map[string]any{evil: "x"}}, http.StatusOK)
	text, _ := tb.textUntil("done")
	assert.Equal(t, "thanks", text)
}

// TestTranscriptNotHTMLEscaped: '<', '>' and '&' go to the page as they
// are, one byte each (the page inserts text, never HTML).
func TestTranscriptNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("<b>&</b>")),
	}}}}
	r := newRig(t, script, nil)
	r.tab()
	r.post("/api/prompt", map[string]string{"text": "hi"}, http.StatusOK)
	resp := r.request(http.MethodGet, "/events", "", nil)
	buf := make([]byte, 0, 4096)
	for !strings.Contains(string(buf), `"type":"done"`) {
		b := make([]byte, 4096)
		n, err := resp.Body.Read(b)
		require.NoError(t, err)
		buf = append(buf, b[:n]...)
	}
	assert.Contains(t, string(buf), `"delta":"<b>&</b>"`)
}
