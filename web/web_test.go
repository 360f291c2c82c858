package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// long is a turn that streams a word and then works until cancelled.
var long = fakeagent.Turn{Prompt: "long", Steps: []fakeagent.Step{
	fakeagent.Say(fakeagent.Text("working")),
	{WaitCancel: true},
}}

func TestTokenRequired(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeagent.Demo(), func(c *web.Config) { c.Token = "s3cret" })
	noToken := map[string]string{"Authorization": ""}
	// The page shell holds nothing secret: served without the token.
	for _, path := range []string{"/", "/app.js", "/app.css", "/?token=wrong"} {
		resp := r.request(http.MethodGet, path, "", noToken)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Empty(t, resp.Cookies(), path)
	}
	// Everything else needs it, as a bearer header only.
	for _, path := range []string{"/events", "/api/sessions", "/events?token=s3cret", "/app.js/../events"} {
		resp := r.request(http.MethodGet, path, "", noToken)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
	}
	for _, hdr := range []map[string]string{
		noToken,
		{"Authorization": "Bearer wrong"},
		{"Authorization": "Bearer s3cre"},
		{"Authorization": "s3cret"},
		{"Authorization": "", "Cookie": "token=s3cret"},
	} {
		resp := r.request(http.MethodPost, "/api/prompt", `{"text":"hi"}`, hdr)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%v", hdr)
	}
	resp := r.request(http.MethodPost, "/api/prompt?token=s3cret", `{"text":"hi"}`, noToken)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	for _, m := range r.agent.Received() {
		assert.NotEqual(t, "session/prompt", m.Method)
	}

	// The printed URL carries the token in its fragment, which no request
	// sends: the page's script reads it.
	u := r.srv.URL(r.hs.URL + "/")
	assert.Equal(t, r.hs.URL+"/#token=s3cret", u)
	resp = r.request(http.MethodGet, "/api/sessions", "", map[string]string{"Authorization": "Bearer s3cret"})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestRandomToken(t *testing.T) {
	t.Parallel()
	a := newRig(t, fakeagent.Demo(), nil)
	b := newRig(t, fakeagent.Demo(), nil)
	assert.Len(t, a.srv.Token(), 64)
	assert.NotEqual(t, a.srv.Token(), b.srv.Token())
	// One server's token does not open the other.
	resp := b.request(http.MethodGet, "/events", "", map[string]string{"Authorization": "Bearer " + a.srv.Token()})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestHostAndOriginChecked(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeagent.Demo(), func(c *web.Config) { c.Hosts = []string{"box.lan"} })
	port := r.hs.URL[strings.LastIndex(r.hs.URL, ":")+1:]
	for _, c := range []struct {
		hdr  map[string]string
		want int
	}{
		{map[string]string{"Host": "evil.example:" + port}, http.StatusForbidden}, // DNS rebinding
		{map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{map[string]string{"Host": "localhost:" + port}, http.StatusOK},
		{map[string]string{"Host": "127.0.0.1:" + port}, http.StatusOK},
		{map[string]string{"Host": "[::1]:" + port}, http.StatusOK},
		{map[string]string{"Host": "box.lan:" + port}, http.StatusOK},
		{map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{map[string]string{"Origin": "http://127.0.0.1:1"}, http.StatusForbidden}, // another local port
		{map[string]string{"Origin": "null"}, http.StatusForbidden},
		{map[string]string{"Origin": r.hs.URL}, http.StatusOK},
		{map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": r.hs.URL}, http.StatusOK},
	} {
		resp := r.request(http.MethodPost, "/api/planmode", `{"on":false}`, c.hdr)
		assert.Equal(t, c.want, resp.StatusCode, "%v", c.hdr)
		resp = r.request(http.MethodGet, "/", "", c.hdr)
		assert.Equal(t, c.want, resp.StatusCode, "GET %v", c.hdr)
	}
	// A POST that a form could send is refused.
	resp := r.request(http.MethodPost, "/api/prompt", `{"text":"hi"}`, map[string]string{"Content-Type": "text/plain"})
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeagent.Demo(), nil)
	for _, c := range []struct {
		path  string
		noTok bool
		ctype string
	}{
		{"/", false, "text/html"},
		{"/app.js", false, "text/javascript"},
		{"/app.css", false, "text/css"},
		{"/events", true, ""},
	} {
		hdr := map[string]string{}
		if c.noTok {
			hdr["Authorization"] = ""
		}
		resp := r.request(http.MethodGet, c.path, "", hdr)
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		assert.Contains(t, csp, "default-src 'none'", c.path)
		assert.Contains(t, csp, "script-src 'self'", c.path)
		assert.Contains(t, csp, "frame-ancestors 'none'", c.path)
		assert.NotContains(t, csp, "unsafe", c.path)
		assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), c.path)
		assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"), c.path)
		assert.Empty(t, h.Get("Access-Control-Allow-Origin"), c.path)
		if c.ctype != "" {
			assert.True(t, strings.HasPrefix(h.Get("Content-Type"), c.ctype), "%s: %s", c.path, h.Get("Content-Type"))
		}
	}
}

// TestPageInsertsNoHTML: no module of the page's script (every one it
// loads: pageModules) parses strings as HTML or runs them as code, and the
// page has no inline script for the CSP to forbid.
func TestPageInsertsNoHTML(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeagent.Demo(), nil)
	mods, err := pageModules(r.hs.URL)
	require.NoError(t, err)
	for p, js := range mods {
		for i, line := range strings.Split(string(js), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "createContextualFragment", "DOMParser", "document.write", "eval(", "new Function", "setAttribute(\"on", "setTimeout(\"", "srcdoc"} {
				assert.NotContains(t, line, bad, "%s:%d", p, i+1)
			}
		}
	}
	page, _ := io.ReadAll(r.request(http.MethodGet, "/", "", nil).Body)
	assert.NotContains(t, string(page), "<script>")
	assert.NotContains(t, string(page), " on") // no inline handlers (onclick=…)
	assert.NotContains(t, string(page), "style=")
}

// TestPermissionRoundTrip: the demo turn's permission reaches two tabs as a
// dialog with the options in order, an answer from one closes it on both,
// the agent gets the option, and a tab that connects later replays the turn.
func TestPermissionRoundTrip(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeagent.Demo(), nil)
	tab1, tab2 := r.tab(), r.tab()
	st := tab1.next("state", ofType("state"))
	assert.Equal(t, false, st["running"])
	assert.NotContains(t, st, "containment", "a connected agent is no process of ours: the page names no containment")

	r.post("/api/prompt", map[string]string{"text": "list files"}, http.StatusOK)
	r.post("/api/prompt", map[string]string{"text": "again"}, http.StatusConflict)
	d := tab1.dialog("permission")
	d2 := tab2.dialog("permission")
	assert.Equal(t, d["id"], d2["id"])
	p := d.sub("permission")
	assert.Equal(t, "ls", p.str("heading"))
	assert.Equal(t, "t1", p.sub("tool").str("id"))
	var ids, kinds []string
	for _, o := range p.list("options") {
		ids = append(ids, o.str("id"))
		kinds = append(kinds, o.str("kind"))
	}
	assert.Equal(t, []string{"allow", "allow-always", "reject"}, ids)
	assert.Equal(t, []string{"allow_once", "allow_always", "reject_once"}, kinds)

	r.post("/api/permission", map[string]string{"id": d.str("id"), "option": "nope"}, http.StatusBadRequest)
	r.post("/api/permission", map[string]string{"id": d.str("id"), "option": "reject"}, http.StatusOK)
	// The second tab sees the answer: its dialog closes.
	c := tab2.next("dialog_close", ofType("dialog_close"))
	assert.Equal(t, d.str("id"), c.str("id"))
	assert.Equal(t, "answered", c.str("how"))
	r.post("/api/permission", map[string]string{"id": d.str("id"), "option": "allow"}, http.StatusNotFound)

	text, done := tab1.textUntil("done")
	assert.Equal(t, "picked reject", text)
	assert.Equal(t, "end_turn", done.str("stopReason"))
	tab1.next("idle state", func(m msg) bool { return m.typ() == "state" && m["running"] == false })
	r.received(`"optionId":"reject"`)

	// A tab that connects now replays the turn and has no dialog.
	tab3 := r.tab()
	tab3.next("reset", ofType("reset"))
	var kindsSeen []string
	text3, _ := tab3.textUntil("done")
	for _, m := range tab3.seen {
		kindsSeen = append(kindsSeen, m.typ())
	}
	assert.Equal(t, "picked reject", text3)
	var answered string
	for _, m := range tab3.seen {
		if m.typ() == "note" && m.str("kind") == "answer" {
			answered = m.str("text")
		}
	}
	assert.Equal(t, "answered by you: Reject", answered, "the person's click is theirs (issue 26.14), not the hook's")
	assert.Contains(t, kindsSeen, "user")
	assert.Contains(t, kindsSeen, "thought")
	assert.Contains(t, kindsSeen, "tool")
	assert.Contains(t, kindsSeen, "plan")
	tab3.next("state", ofType("state"))
	select {
	case m := <-tab3.ch:
		assert.NotEqual(t, "dialog", m.typ(), "a closed dialog was replayed")
	default:
	}
}

// TestPermissionPresentation: a Codex-shaped request from the shared vectors
// shows its option's structured change as a sentence; a Claude-shaped one
// its presentation heading and description.
func TestPermissionPresentation(t *testing.T) {
	t.Parallel()
	load := func(name string) json.RawMessage {
		b, err := os.ReadFile(filepath.Join("..", "acp", "testdata", "permission", name))
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &m))
		delete(m, "sessionId")
		out, _ := json.Marshal(m)
		return out
	}
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Ask(load("X1.json")),
		fakeagent.Ask(load("C1.json")),
		fakeagent.Say(fakeagent.Text("{{answer}}")),
	}}}}
	r := newRig(t, script, func(c *web.Config) { c.Agent.Advertise.PermissionPresentation = true })
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "go"}, http.StatusOK)

	p := tb.dialog("permission")
	perm := p.sub("permission")
	opts := perm.list("options")
	require.Len(t, opts, 4)
	assert.Equal(t, "accept_execpolicy_amendment", opts[2].str("id"))
	changes := opts[2].list("changes")
	require.Len(t, changes, 1)
	assert.Equal(t, "Allow commands starting with `npm install`", changes[0].str("text"))
	assert.Equal(t, true, changes[0]["known"])
	r.post("/api/permission", map[string]string{"id": p.str("id"), "option": "allow_once"}, http.StatusOK)

	p = tb.dialog("permission")
	perm = p.sub("permission")
	assert.Equal(t, "npm test", perm.str("heading"))
	assert.Equal(t, true, perm["fromPresentation"])
	assert.Equal(t, "Reason: Needed to verify the change.", perm.str("description"))
	assert.Equal(t, "npm test", perm.str("command"))
	r.post("/api/permission", map[string]string{"id": p.str("id"), "option": "allow-once"}, http.StatusOK)
	text, _ := tb.textUntil("done")
	assert.Equal(t, "allow-once", text)
}

// TestStopCancels: api/stop cancels the running turn (done, cancelled), and
// the next turn runs on the same agent.
func TestStopCancels(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{long, {Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("second"))}}}}
	r := newRig(t, script, nil)
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "long"}, http.StatusOK)
	tb.next("running state", func(m msg) bool { return m.typ() == "state" && m["running"] == true })
	tb.next("text", ofType("text"))
	assert.Contains(t, r.post("/api/stop", struct{}{}, http.StatusOK), `"stopping":true`)
	_, done := tb.textUntil("done")
	assert.Equal(t, "cancelled", done.str("stopReason"))
	assert.Empty(t, done.str("error"))
	r.received(`"method":"session/cancel"`)
	tb.next("idle state", func(m msg) bool { return m.typ() == "state" && m["running"] == false })
	assert.Contains(t, r.post("/api/stop", struct{}{}, http.StatusOK), `"stopping":false`)

	r.post("/api/prompt", map[string]string{"text": "next"}, http.StatusOK)
	text, done := tb.textUntil("done")
	assert.Equal(t, "second", text)
	assert.Equal(t, "end_turn", done.str("stopReason"))
}

// TestPendingDialogsEnd: a stop closes the turn's pending permission, and a
// request the agent withdraws closes its dialog.
func TestPendingDialogsEnd(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "withdraw", Steps: []fakeagent.Step{
			{Permission: fakeagent.PermissionParams("w1", "rm -rf /", "execute"), NoWait: true},
			fakeagent.Ask(fakeagent.PermissionParams("w2", "ls", "execute")),
			{CancelRequest: true}, // withdraws w1, the one still open
			fakeagent.Say(fakeagent.Text("withdrawn")),
		}},
		{Prompt: "queue", Steps: []fakeagent.Step{
			{Permission: fakeagent.PermissionParams("q1", "one", "execute"), NoWait: true},
			{Permission: fakeagent.PermissionParams("q2", "two", "execute"), NoWait: true},
			{WaitCancel: true},
		}},
	}}
	r := newRig(t, script, nil)
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "withdraw"}, http.StatusOK)
	d, dw2 := tb.dialog("permission"), tb.dialog("permission")
	if d.sub("permission").sub("tool").str("id") != "w1" {
		d, dw2 = dw2, d
	}
	r.post("/api/permission", map[string]string{"id": dw2.str("id"), "option": "allow"}, http.StatusOK)
	tb.next("w2 closed", func(m msg) bool { return m.typ() == "dialog_close" && m.str("id") == dw2.str("id") })
	// The withdrawal ends w1's hook (its dialog closes from the hook's
	// goroutine) while the turn's text goes on through the dispatcher: the
	// close and the turn's end come in either order.
	var c msg
	var text strings.Builder
	ended := false
	tb.next("w1 closed and the turn done", func(m msg) bool {
		switch m.typ() {
		case "dialog_close":
			c = m
		case "text":
			text.WriteString(m.str("delta"))
		case "done":
			ended = true
		}
		return c != nil && ended
	})
	assert.Equal(t, d.str("id"), c.str("id"))
	assert.Equal(t, "ended", c.str("how"))
	assert.Equal(t, "withdrawn", text.String())
	tb.next("idle", func(m msg) bool { return m.typ() == "state" && m["running"] == false })

	// Two requests queue; a stop closes both.
	r.post("/api/prompt", map[string]string{"text": "queue"}, http.StatusOK)
	d1, d2 := tb.dialog("permission"), tb.dialog("permission")
	assert.NotEqual(t, d1.str("id"), d2.str("id"))
	later := r.tab() // a tab opened now shows both, in order
	assert.Equal(t, d1.str("id"), later.dialog("permission").str("id"))
	assert.Equal(t, d2.str("id"), later.dialog("permission").str("id"))
	r.post("/api/stop", struct{}{}, http.StatusOK)
	closed := map[string]bool{}
	for len(closed) < 2 {
		c := tb.next("dialog_close", ofType("dialog_close"))
		closed[c.str("id")] = true
	}
	assert.True(t, closed[d1.str("id")] && closed[d2.str("id")])
	_, done := tb.textUntil("done")
	assert.Equal(t, "cancelled", done.str("stopReason"))
}

// writeThenRead is a turn that proposes a write of path and reads it back.
func writeThenRead(path, content string) fakeagent.Script {
	q := strconv.Quote(path)
	write, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: write}},
		{Request: &fakeagent.Call{Method: "fs/read_text_file", Params: json.RawMessage(`{"path":` + q + `}`)}},
		fakeagent.Say(fakeagent.Text("done writing")),
	}}}}
}

// TestProposalAmended: an amended proposal lands amended on disk and the
// agent reads the amendment back; a CRLF file keeps its line ends.
func TestProposalAmended(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(path, []byte("package main\r\n"), 0o644))
	proposed := "package main\r\n\r\nfunc main() {}\r\n"
	r := newRig(t, writeThenRead(path, proposed), func(c *web.Config) {
		c.Agent.Dir = dir
		c.Agent.FS = &acphost.FSOptions{Read: true, Write: true}
	})
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "write"}, http.StatusOK)
	d := tb.dialog("proposal")
	p := d.sub("proposal")
	assert.Equal(t, path, p.str("path"))
	assert.Equal(t, true, p["exists"])
	assert.Equal(t, "package main\r\n", p.str("current"))
	assert.Equal(t, proposed, p.str("proposed"))
	assert.Contains(t, p.str("diff"), "+func main() {}")
	assert.Equal(t, false, p["hidden"])

	// As a text area sends it: "\n" line ends, the person's edit.
	amended := "package main\n\n// Reviewed.\nfunc main() {}\n"
	r.post("/api/proposal", map[string]any{"id": d.str("id"), "action": "apply", "content": amended, "edited": true}, http.StatusOK)
	text, _ := tb.textUntil("done")
	assert.Equal(t, "done writing", text)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	want := "package main\r\n\r\n// Reviewed.\r\nfunc main() {}\r\n"
	assert.Equal(t, want, string(got))
	wantJSON, _ := json.Marshal(want)
	r.received(`"content":` + string(wantJSON)) // the agent read the amendment back
}

// TestProposalDenied: a denied write leaves the file alone and the agent
// gets an error.
func TestProposalDenied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "new.txt")
	r := newRig(t, writeThenRead(path, "hello\u202e\n"), func(c *web.Config) {
		c.Agent.Dir = dir
		c.Agent.FS = &acphost.FSOptions{Read: true, Write: true}
	})
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "write"}, http.StatusOK)
	d := tb.dialog("proposal")
	p := d.sub("proposal")
	assert.Equal(t, false, p["exists"])
	assert.Equal(t, true, p["hidden"], "the bidi override is flagged")
	assert.NotContains(t, p.str("diff"), "\u202e")
	r.post("/api/proposal", map[string]any{"id": d.str("id"), "action": "deny"}, http.StatusOK)
	tb.textUntil("done")
	_, err := os.Stat(path)
	assert.True(t, os.IsNotExist(err))
	r.received(`"error"`)
}

// TestElicitationForm: content that does not fit the form is refused and
// the dialog stays; content that fits reaches the agent typed.
func TestElicitationForm(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","title":"Name","minLength":2},
		"count":{"type":"integer","minimum":1,"maximum":5},
		"color":{"type":"string","enum":["red","blue"]},
		"ok":{"type":"boolean"}},"required":["name"]}`)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Elicit(fakeagent.FormElicitation("Who are you?", schema)),
		fakeagent.Say(fakeagent.Text("thanks")),
	}}}}
	r := newRig(t, script, nil)
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "ask"}, http.StatusOK)
	d := tb.dialog("elicitation")
	e := d.sub("elicitation")
	assert.Equal(t, "Who are you?", e.str("message"))
	fields := e.list("fields")
	require.Len(t, fields, 4)
	assert.Equal(t, "name", fields[0].str("name"))
	assert.Equal(t, "enum", fields[2].str("kind"))

	r.post("/api/elicitation", map[string]any{"id": d.str("id"), "action": "accept", "content": map[string]any{"name": "x"}}, http.StatusBadRequest)
	// The refusal names the field and its range, for the page to show
	// beside it (issue 26.15), as the terminal says it.
	assert.Equal(t, "1 to 5", fields[1].str("range"))
	var refusal map[string]string
	require.NoError(t, json.Unmarshal([]byte(r.post("/api/elicitation", map[string]any{"id": d.str("id"), "action": "accept",
		"content": map[string]any{"name": "Ada", "count": 9}}, http.StatusBadRequest)), &refusal))
	assert.Equal(t, map[string]string{"field": "count", "message": "9 is out of range", "range": "1 to 5"},
		map[string]string{"field": refusal["field"], "message": refusal["message"], "range": refusal["range"]})
	r.post("/api/elicitation", map[string]any{"id": d.str("id"), "action": "accept",
		"content": map[string]any{"name": "Ada", "count": 3, "color": "blue", "ok": true}}, http.StatusOK)
	text, _ := tb.textUntil("done")
	assert.Equal(t, "thanks", text)
	r.received(`"action":"accept"`)
	r.received(`"count":3`)
}

// TestControls: plan mode, modes and config options, as state to every tab.
func TestControls(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{NewSessionResult: json.RawMessage(`{
		"modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]},
		"configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"fast",
			"options":[{"value":"fast","name":"Fast"},{"value":"deep","name":"Deep"}]}]}`)}
	r := newRig(t, script, nil)
	tb := r.tab()
	st := tb.next("state", ofType("state"))
	assert.Equal(t, "ask", st.str("mode"))
	require.Len(t, st.list("modes"), 2)
	cfg := st.list("config")
	require.Len(t, cfg, 1)
	assert.Equal(t, "fast", cfg[0].str("value"))
	assert.Len(t, cfg[0].list("options"), 2)

	r.post("/api/mode", map[string]string{"id": "code"}, http.StatusOK)
	tb.next("mode code", func(m msg) bool { return m.typ() == "state" && m.str("mode") == "code" })
	// Plan mode holds the agent in its mode that asks (TestModePickedUnderPlanMode)
	// from its next prompt; until then the page says the mode it is in.
	r.post("/api/planmode", map[string]bool{"on": true}, http.StatusOK)
	pm := tb.next("plan mode", func(m msg) bool { return m.typ() == "state" && m["planMode"] == true })
	assert.True(t, r.srv.Client().PlanMode())
	assert.Contains(t, pm.str("holds"), "held by host", "the page says which layers hold")
	assert.Equal(t, "code", pm.str("mode"))
	r.post("/api/config", map[string]any{"id": "model", "value": 3}, http.StatusBadRequest)
	r.post("/api/config", map[string]any{"id": "model", "value": "deep"}, http.StatusOK)
	r.received(`"method":"session/set_config_option"`)
}

// TestAgentTextSafe: what the agent says reaches the page through SafeText
// (the browser test checks that it renders as text).
func TestAgentTextSafe(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("<script>x</script>&amp;\u202eevil\x1b[31m")),
	}}}}
	r := newRig(t, script, nil)
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "hi"}, http.StatusOK)
	text, _ := tb.textUntil("done")
	assert.Equal(t, "<script>x</script>&amp;evil", text)
}

// TestSubprocessAgent: the default Start, on a fakeagent subprocess; Close
// with a permission pending and a tab connected ends both.
func TestSubprocessAgent(t *testing.T) {
	t.Parallel()
	path, args, env, err := fakeagent.Command(fakeagent.Demo())
	require.NoError(t, err)
	srv, err := web.New(context.Background(), web.Config{Agent: acphost.ACPOptions{Command: path, Args: args, Process: acphost.ProcessOptions{Env: env}}})
	require.NoError(t, err)
	r := &rig{t: t, srv: srv}
	r.hs = newHTTPServer(t, srv)
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "go"}, http.StatusOK)
	tb.dialog("permission")
	require.NoError(t, srv.Close())
	for range tb.ch { // the stream ends
	}
	require.NoError(t, srv.Close())
	resp := r.request(http.MethodPost, "/api/prompt", `{"text":"hi"}`, nil)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

func TestHooksAreTheServers(t *testing.T) {
	t.Parallel()
	_, err := web.New(context.Background(), web.Config{Agent: acphost.ACPOptions{Command: "x", OnPermission: acphost.AllowAll()}})
	assert.Error(t, err)
}

// TestOneModePicker (issue 26.16): a config option of category "mode" that
// repeats the ACP modes (Claude's adapter) is not a second picker; one
// that is an agent's only modes (opencode) is the mode picker, which sets
// it.
func TestOneModePicker(t *testing.T) {
	t.Parallel()
	both := fakeagent.Script{NewSessionResult: json.RawMessage(`{
		"modes":{"currentModeId":"default","availableModes":[{"id":"default","name":"Manual"},{"id":"plan","name":"Plan"}]},
		"configOptions":[{"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"default","options":[{"value":"default","name":"Manual"},{"value":"plan","name":"Plan"}]},
			{"id":"model","name":"Model","type":"select","currentValue":"a","options":[{"value":"a","name":"A"}]}]}`)}
	st := newRig(t, both, nil).tab().next("state", ofType("state"))
	assert.Len(t, st.list("modes"), 2)
	assert.Equal(t, "", st.str("modeOption"))
	require.Len(t, st.list("config"), 1)
	assert.Equal(t, "model", st.list("config")[0].str("id"))

	only := fakeagent.Script{NewSessionResult: json.RawMessage(`{
		"configOptions":[{"id":"agent","name":"Agent","category":"mode","type":"select","currentValue":"build","options":[{"value":"build","name":"Build"},{"value":"plan","name":"Plan"}]}]}`)}
	r := newRig(t, only, nil)
	st = r.tab().next("state", ofType("state"))
	assert.Equal(t, "agent", st.str("modeOption"))
	assert.Equal(t, "build", st.str("mode"))
	assert.Len(t, st.list("modes"), 2)
	assert.Empty(t, st.list("config"))
	r.post("/api/config", map[string]any{"id": "agent", "value": "plan"}, http.StatusOK)
	r.received(`"method":"session/set_config_option"`)
}
