package browsertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
	"github.com/chromedp/chromedp"
)

// TestPageFits1280: with a full header — Claude's controls, the usage and
// its cost, the policy and what holds of plan mode, a long session
// title — the page is never wider than a 1,280 px window (the header once
// pushed it to 1,547 px): what does not fit shrinks, with an ellipsis.
func TestPageFits1280(t *testing.T) {
	b := browser(t)
	script := fakeagent.Script{Name: "@agentclientprotocol/claude-agent-acp", SessionID: "0199b6c2-4f1e-7d3a-9c2b-5e8f1a2b3c4d", NewSessionResult: claudeControls,
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Say(json.RawMessage(`{"sessionUpdate":"usage_update","used":123456,"size":1000000,"cost":{"amount":12.5,"currency":"USD"}}`)),
			fakeagent.Say(json.RawMessage(`{"sessionUpdate":"session_info_update","title":"Refactor the permission broker so that every answer is logged with its reason and the time a person took"}`)),
			fakeagent.Say(fakeagent.Text("counted")),
		}}}}
	r := newRig(t, script, func(c *web.Config) { c.PermissionLabel = "ask (rules from .acphost/permissions.json)" })
	tab := r.tab(b)
	r.do(tab, chromedp.EmulateViewport(1280, 800))
	r.poll(tab, `document.querySelector("#config select") !== null`)
	r.do(tab, chromedp.Click(chromedp.CSS("#planmode")))
	r.send(tab, "count")
	r.turnEnded(tab, 1)
	r.poll(tab, `document.getElementById("usage").textContent !== ""`)
	sw := eval[int](r, tab, `document.scrollingElement.scrollWidth`)
	iw := eval[int](r, tab, `window.innerWidth`)
	if sw > iw {
		t.Log(eval[string](r, tab, `[...document.querySelector("header").children].map(e => e.id + ":" + Math.round(e.getBoundingClientRect().width) + " " + e.textContent.slice(0, 60)).join("\n")`))
		t.Errorf("the page is %d px wide in a %d px window", sw, iw)
	}
	for _, id := range []string{"sessionsbtn", "planmode", "mode"} {
		if !eval[bool](r, tab, `(() => { const e = document.getElementById("`+id+`").getBoundingClientRect(); return e.width > 0 && e.right <= window.innerWidth })()`) {
			t.Errorf("#%s is cut off or hidden", id)
		}
	}
	r.screenshot(tab, "header-full-1280.png")
}

// TestWriteDialogNamesThePathOnce: a write's dialog names the file in its
// heading only — no locations line repeating it, no "--- a/…" / "+++ b/…"
// headers gluing git's "b/" to an absolute path — and shows the diff once;
// a tool card's diff says a new file is new.
func TestWriteDialogNamesThePathOnce(t *testing.T) {
	b := browser(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "main.go")
	if err := os.WriteFile(path, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write, _ := json.Marshal(map[string]string{"path": path, "content": "package main\n\nfunc main() {}\n"})
	fresh := filepath.Join(dir, "new.go")
	card := json.RawMessage(`{"sessionUpdate":"tool_call","toolCallId":"w1","title":"Write new.go","kind":"edit","status":"completed",
		"content":[{"type":"diff","path":` + strconv.Quote(fresh) + `,"oldText":null,"newText":"package main\n"}]}`)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(card),
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: write}},
		fakeagent.Say(fakeagent.Text("written")),
	}}}}
	r := newRig(t, script, func(c *web.Config) {
		c.Agent.Dir = dir
		c.Agent.FS = &acphost.FSOptions{Read: true, Write: true}
	})
	tab := r.tab(b)
	r.send(tab, "add main")
	r.do(tab, chromedp.WaitVisible(chromedp.CSS(".dialog.proposal textarea.proposed")))
	text := eval[string](r, tab, `(() => { const d = document.querySelector(".dialog.proposal").cloneNode(true); d.querySelectorAll("textarea").forEach(t => t.remove()); return d.textContent })()`)
	if n := strings.Count(text, path); n != 1 {
		t.Errorf("the dialog names %s %d times:\n%s", path, n, text)
	}
	if strings.Contains(text, "b/"+strings.TrimPrefix(path, "/")) || strings.Contains(text, "+++") {
		t.Errorf("the dialog shows the diff's headers:\n%s", text)
	}
	if n := eval[int](r, tab, `document.querySelectorAll(".dialog.proposal pre.diff").length`); n != 1 {
		t.Errorf("%d diffs in the dialog", n)
	}
	if loc := eval[string](r, tab, `document.querySelector(".card.tool .diffblock .locations").textContent`); loc != fresh+" (new file)  +1 −0" {
		t.Errorf("the tool card's diff is headed %q", loc)
	}
	r.screenshot(tab, "proposal-once.png")
	r.answer(tab, ".dialog.proposal button.apply")
	r.turnEnded(tab, 1)
}
