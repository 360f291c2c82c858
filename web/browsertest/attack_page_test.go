package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/chromedp/chromedp"
)

// TestAttackCookieReachesOtherLocalhostPort: the token cookie is scoped
// to the host only; cookies ignore ports, so every other server on
// 127.0.0.1 (another local user's, a dev server the agent started) gets
// the token in the Cookie header of any request the person's browser
// makes to it, and can then drive the agent with it (here: start a turn).
func TestAttackCookieReachesOtherLocalhostPort(t *testing.T) {
	b := browser(t)
	r := newRig(t, fakeagent.Demo(), nil)
	tab := r.tab(b) // the person opened the printed URL: the cookie is set

	var mu sync.Mutex
	var cookies []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		cookies = append(cookies, req.Header.Get("Cookie"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><body><div id="done"></div></body>`)
	}))
	defer other.Close()
	// The person visits something else on localhost.
	r.do(tab, chromedp.Navigate(other.URL+"/"), chromedp.WaitReady(chromedp.CSS("#done")))

	mu.Lock()
	got := strings.Join(cookies, "\n")
	mu.Unlock()
	if strings.Contains(got, r.srv.Token()) {
		// Show what the other server can do with it.
		name, _, _ := strings.Cut(got, "=")
		req, _ := http.NewRequest("POST", r.hs.URL+"/api/prompt", strings.NewReader(`{"text":"from the other port"}`))
		req.Header.Set("Content-Type", "application/json")
		for _, c := range cookies {
			if strings.Contains(c, r.srv.Token()) {
				req.Header.Set("Cookie", c)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		status := 0
		if err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		t.Errorf("a server on another port of 127.0.0.1 received the token cookie %s (replayed: POST /api/prompt -> %d)", name, status)
	}
}

// TestAttackDialogStealsFocusFromPrompt: while the person types the next
// prompt during a turn, an agent's permission request moves the keyboard
// focus to its default "allow" button; the next space the person types
// clicks it. The agent gets an approval nobody gave. Often the Enter that
// sent the prompt does it already: the dialog takes the focus between its
// keydown and its keypress.
func TestAttackDialogStealsFocusFromPrompt(t *testing.T) {
	b := browser(t)
	perm := fakeagent.PermissionParams("t1", "rm -rf ~", "execute",
		fakeagent.Option{ID: "allow", Name: "Allow", Kind: "allow_once"}, fakeagent.Option{ID: "no", Name: "Reject", Kind: "reject_once"})
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.ToolCall("t1", "rm -rf ~", "execute")),
		fakeagent.Ask(perm),
		fakeagent.Say(fakeagent.Text("done")),
	}}}}
	r := newRig(t, script, nil)
	tab := r.tab(b)
	r.send(tab, "tidy up") // Enter sends; the focus stays in the prompt
	r.poll(tab, `document.querySelector('.dialog.permission button[data-option="allow"]') !== null || document.querySelector("#transcript .end") !== null`)
	if eval[bool](r, tab, `document.querySelector("#transcript .end") !== null`) {
		// Sometimes the dialog opens between the Enter's keydown (which
		// sent the prompt) and its keypress, which then clicks "allow".
		t.Fatalf("the Enter that sent the prompt answered the permission: %s", r.agent.Received()[len(r.agent.Received())-1].Raw)
	}
	// The person goes on typing their next prompt: "ok then".
	r.do(tab, chromedp.KeyEvent("ok then"))
	typed := eval[string](r, tab, `document.getElementById("prompt").value`)
	active := eval[string](r, tab, `document.activeElement.id || document.activeElement.className`)
	if typed != "ok then" {
		t.Errorf("the keystrokes meant for the prompt went to %q (the prompt holds %q)", active, typed)
	}
	for _, m := range r.agent.Received() {
		if strings.Contains(string(m.Raw), `"optionId":"allow"`) {
			t.Errorf("typing a prompt answered the permission: %s", m.Raw)
		}
	}
}

// TestAttackRawAgentTextReachesPage: some agent strings skip SafeText and
// are shown when the agent leaves the matching title out: an elicitation
// field's name (label: title || name) and a mode's id (option text:
// name || value). A bidi override in them reorders what the person reads
// (a mode that reads "code" is U+202E "edoc"). (Enum choice values were
// cleaned: that one held.)
func TestAttackRawAgentTextReachesPage(t *testing.T) {
	b := browser(t)
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
	tab := r.tab(b)
	r.send(tab, "ask")
	r.poll(tab, `document.querySelector(".dialog.elicitation") !== null`)
	for _, where := range []struct{ what, expr string }{
		{"the elicitation dialog", `document.querySelector(".dialog.elicitation").textContent`},
		{"the mode menu", `document.getElementById("mode").textContent`},
	} {
		if s := eval[string](r, tab, where.expr); strings.ContainsAny(s, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b") {
			t.Errorf("%s shows agent text with a bidi control: %q", where.what, s)
		}
	}
}
