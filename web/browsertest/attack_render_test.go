package browsertest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/web"

	"github.com/acphost/acphost/fakeagent"
	"github.com/chromedp/chromedp"
)

// TestAttackRenderingLinear (issue 31.5): the heading pattern backtracked
// on "# a" + spaces + a non-space (roughly quadratic: a 160 KiB line held
// Chromium's main thread ~10 s, and every tab replaying it again). Here
// a 1 MiB such line, which that would hold for minutes (the turn's end
// is never shown within the wait), then a 48 KiB one, which must still
// render as a heading; "[" and "[a](" runs, which searched again from
// each bracket; and a message is rendered per delta: a block that has
// settled is not built again when more text comes (the same node stays).
func TestAttackRenderingLinear(t *testing.T) {
	b := browser(t)
	long := "# a" + strings.Repeat(" ", 1<<20) + "b"
	heading := "# a" + strings.Repeat(" ", 48<<10) + "b"
	script := fakeagent.Script{Turns: []fakeagent.Turn{
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text(long))}},
		{Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.Text(heading + "\n\n" + strings.Repeat("[", 64<<10) + "\n\n" + strings.Repeat("[a](", 16<<10) + "\n\nfirst settled\n\n")),
			fakeagent.Ask(fakeagent.PermissionParams("t1", "wait", "execute")),
			fakeagent.Say(fakeagent.Text("more *text*")),
		}},
	}}
	r := newRig(t, script, nil)
	tab := r.tab(b)
	r.send(tab, "one")
	r.turnEnded(tab, 1)
	if got := eval[int](r, tab, `document.querySelector("#transcript .text").textContent.length`); got != len(long) {
		t.Errorf("the long line shows %d characters, want %d", got, len(long))
	}

	r.send(tab, "two")
	r.poll(tab, `document.querySelector(".dialog.permission") !== null && [...document.querySelectorAll("#transcript .text p")].some(p => p.textContent === "first settled")`)
	if h := eval[string](r, tab, `(document.querySelectorAll("#transcript .text")[1].querySelector("h3") || {}).textContent || ""`); !strings.HasPrefix(h, "a ") || !strings.HasSuffix(h, " b") {
		t.Errorf("the 48 KiB heading is not a heading: %.40q", h)
	}
	eval[bool](r, tab, `(window.__settled = [...document.querySelectorAll("#transcript .text p")].find(p => p.textContent === "first settled"), true)`)
	r.answer(tab, `.dialog.permission button[data-option="allow"]`)
	r.turnEnded(tab, 2)
	r.poll(tab, `document.querySelector("#transcript .text em") !== null`)
	if !eval[bool](r, tab, `window.__settled.isConnected`) {
		t.Error("a settled block was built again when more text came")
	}
}

// TestRenderedTextNeverRefreshes: agent text holding a <meta
// http-equiv=refresh> (in a message, a code span, a tool's title and
// output) never becomes one: the page stays where it is, with no meta
// element beyond its own.
func TestRenderedTextNeverRefreshes(t *testing.T) {
	b := browser(t)
	meta := `<meta http-equiv="refresh" content="0;url=https://example.com/">`
	h, _ := json.Marshal(meta)
	call := json.RawMessage(`{"sessionUpdate":"tool_call","toolCallId":"m1","title":` + string(h) + `,"kind":"execute","status":"completed",` +
		`"content":[{"type":"content","content":{"type":"text","text":` + string(h) + `}}]}`)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(call),
		fakeagent.Say(fakeagent.Text(meta + "\n\n`" + meta + "`\n\n```html\n" + meta + "\n```\n\n# " + meta)),
	}}}}
	r := newRig(t, script, nil)
	tab := r.tab(b)
	before := eval[int](r, tab, `document.querySelectorAll("meta").length`)
	r.send(tab, meta)
	r.turnEnded(tab, 1)
	if n := eval[int](r, tab, `document.querySelectorAll("meta[http-equiv], main meta, #dialogs meta").length`); n != 0 {
		t.Errorf("%d meta elements with http-equiv", n)
	}
	if n := eval[int](r, tab, `document.querySelectorAll("meta").length`); n != before {
		t.Errorf("%d meta elements, the page has %d of its own", n, before)
	}
	if !strings.Contains(eval[string](r, tab, `document.getElementById("transcript").textContent`), meta) {
		t.Error("the meta tag is not shown as text")
	}
	if u := eval[string](r, tab, `location.origin`); u != r.hs.URL {
		t.Errorf("the page is at %s", u)
	}
}

// TestFormErrorBesideTheField (issue 26.15): content out of a field's
// range is refused beside that field, with the range, as the terminal
// words it; not at the foot of the page. The dialog stays, and a fixed
// value goes through.
func TestFormErrorBesideTheField(t *testing.T) {
	b := browser(t)
	schema := json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer","title":"Count","minimum":1,"maximum":5}},"required":["count"]}`)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Elicit(fakeagent.FormElicitation("How many?", schema)),
		fakeagent.Say(fakeagent.Text("thanks")),
	}}}}
	r := newRig(t, script, nil)
	tab := r.tab(b)
	r.send(tab, "ask")
	r.poll(tab, `document.querySelector('.dialog.elicitation input[name="count"]') !== null`)
	eval[bool](r, tab, `(document.querySelector('.dialog.elicitation input[name="count"]').value = "9", true)`)
	r.answer(tab, `.dialog.elicitation button.accept`)
	r.poll(tab, `document.querySelector('.dialog.elicitation .fielderr') !== null`)
	if got := eval[string](r, tab, `document.querySelector('input[name="count"]').closest("label").querySelector(".fielderr").textContent`); got != "9 is out of range: 1 to 5" {
		t.Errorf("beside the field: %q", got)
	}
	if got := eval[string](r, tab, `document.getElementById("error").textContent`); got != "" {
		t.Errorf("the foot of the page says %q", got)
	}
	eval[bool](r, tab, `(document.querySelector('.dialog.elicitation input[name="count"]').value = "3", true)`)
	r.poll(tab, `!document.querySelector(".dialog.elicitation button.accept").disabled`)
	r.answer(tab, `.dialog.elicitation button.accept`)
	r.turnEnded(tab, 1)
	r.received(`"count":3`)
}

// TestPromptsQueueWhileATurnRuns (issue 26.17): Send is not disabled while
// a turn runs: the prompt is queued (shown under the prompt) and sent once
// the turn has ended, as the terminal does; one taken back is not sent.
func TestPromptsQueueWhileATurnRuns(t *testing.T) {
	b := browser(t)
	script := fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "first", Steps: []fakeagent.Step{
			fakeagent.Ask(fakeagent.PermissionParams("t1", "wait", "execute")),
			fakeagent.Say(fakeagent.Text("one")),
		}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("two"))}},
	}}
	r := newRig(t, script, nil)
	tab := r.tab(b)
	r.send(tab, "first")
	r.poll(tab, `document.querySelector(".dialog.permission") !== null`)
	r.send(tab, "dropped")
	r.send(tab, "second")
	r.poll(tab, `[...document.querySelectorAll("#queue .qtext")].map(x => x.textContent).join("|") === "dropped|second"`)
	r.click(tab, `#queue li:first-child .unqueue`)
	r.poll(tab, `document.querySelectorAll("#queue li").length === 1`)
	eval[bool](r, tab, `(document.getElementById("prompt").value = "", true)`)
	r.answer(tab, `.dialog.permission button[data-option="allow"]`)
	if end := r.turnEnded(tab, 2); end != "turn ended: end_turn" {
		t.Errorf("the queued turn ended %q", end)
	}
	r.received(`"text":"second"`)
	if n := eval[int](r, tab, `document.querySelectorAll("#transcript .user").length`); n != 2 {
		t.Errorf("%d prompts shown, want first and second", n)
	}
	if q := eval[int](r, tab, `document.querySelectorAll("#queue li").length`); q != 0 {
		t.Errorf("%d prompts still queued", q)
	}
}

// claudeControls is the session Claude's adapter (0.101) opens: five ACP
// modes, and config options that repeat them (category "mode") beside a
// model, an effort and two switches.
var claudeControls = json.RawMessage(`{
	"modes":{"currentModeId":"default","availableModes":[{"id":"default","name":"Manual"},{"id":"acceptEdits","name":"Accept edits"},
		{"id":"plan","name":"Plan mode"},{"id":"auto","name":"Auto"},{"id":"bypassPermissions","name":"Bypass permissions"}]},
	"configOptions":[
		{"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"default","options":[{"value":"default","name":"Manual"},
			{"value":"acceptEdits","name":"Accept edits"},{"value":"plan","name":"Plan mode"},{"value":"auto","name":"Auto"},{"value":"bypassPermissions","name":"Bypass permissions"}]},
		{"id":"model","name":"Model","category":"model","type":"select","currentValue":"claude-opus-5-5","options":[
			{"value":"claude-opus-5-5","name":"Claude Opus 5.5 (1M context, default)"},{"value":"claude-sonnet-5","name":"Claude Sonnet 5"}]},
		{"id":"effort","name":"Effort","category":"thought_level","type":"select","currentValue":"high","options":[
			{"value":"low","name":"Low"},{"value":"high","name":"High"},{"value":"max","name":"Maximum"}]},
		{"id":"fast","name":"Fast mode","type":"boolean","currentValue":false},
		{"id":"ultracode","name":"Ultracode","type":"boolean","currentValue":false}]}`)

// TestHeaderOneModePickerFits1280 (issue 26.16): with Claude's controls the
// header held two mode pickers (the ACP modes and the "mode" config
// option) and wrapped onto two lines at 1280 px. One picker, one line.
func TestHeaderOneModePickerFits1280(t *testing.T) {
	b := browser(t)
	r := newRig(t, fakeagent.Script{Name: "@agentclientprotocol/claude-agent-acp", SessionID: "0199b6c2-4f1e-7d3a-9c2b-5e8f1a2b3c4d", NewSessionResult: claudeControls}, nil)
	tab := r.tab(b)
	r.do(tab, chromedp.EmulateViewport(1280, 800))
	r.poll(tab, `document.querySelector("#config select") !== null`)
	if n := eval[int](r, tab, `[...document.querySelectorAll("header select")].filter(s => [...s.options].some(o => o.value === "acceptEdits")).length`); n != 1 {
		t.Errorf("%d mode pickers in the header", n)
	}
	// One line: every control shares one horizontal band.
	rows := eval[int](r, tab, `(() => { const rs = [...document.querySelector("header").children].filter(e => e.getBoundingClientRect().width > 0).map(e => e.getBoundingClientRect());
		return Math.max(...rs.map(r => r.top)) < Math.min(...rs.map(r => r.bottom)) ? 1 : 2 })()`)
	if rows != 1 {
		t.Log(eval[string](r, tab, `[...document.querySelector("header").children].map(e => e.id + ":" + Math.round(e.getBoundingClientRect().width) + "@" + Math.round(e.getBoundingClientRect().top) + " " + e.textContent.slice(0, 40)).join("\n")`))
		t.Errorf("the header takes %d lines at 1280 px", rows)
	}
	if over := eval[bool](r, tab, `document.querySelector("header").scrollWidth > document.querySelector("header").clientWidth`); over {
		t.Error("the header overflows at 1280 px")
	}
	r.screenshot(tab, "header-1280.png")
	// The one picker sets the mode.
	r.poll(tab, `document.getElementById("mode").value === "default"`)
	eval[bool](r, tab, `(() => { const s = document.getElementById("mode"); s.value = "plan"; s.dispatchEvent(new Event("change")); return true })()`)
	r.received(`"modeId":"plan"`)
}

// TestDialogsAndToolCards (issue 26.18): a dialog takes room from the
// transcript, not the view of the turn that asked (the tool card it is
// about stays visible); the tool's title shows once in it; a tool's fenced
// output is rendered as code, not raw fences; an amended write shows what
// landed, and the agent's version in its tool card is marked as not it.
func TestDialogsAndToolCards(t *testing.T) {
	b := browser(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := json.Marshal(path)
	call := json.RawMessage(`{"sessionUpdate":"tool_call","toolCallId":"t9","title":"Run ls","kind":"edit","status":"pending","content":[
		{"type":"content","content":{"type":"text","text":"` + "```" + `\nfile1\nfile2\n` + "```" + `"}},
		{"type":"diff","path":` + string(p) + `,"oldText":"old\n","newText":"agent version\n"}]}`)
	write, _ := json.Marshal(map[string]string{"path": path, "content": "agent version\n"})
	var long strings.Builder
	for i := range 80 {
		fmt.Fprintf(&long, "line %d of a long answer\n\n", i)
	}
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text(long.String())),
		fakeagent.Say(call),
		fakeagent.Ask(fakeagent.PermissionParams("t9", "Run ls", "edit")),
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: write}},
		fakeagent.Say(json.RawMessage(`{"sessionUpdate":"tool_call_update","toolCallId":"t9","status":"completed"}`)),
		fakeagent.Say(fakeagent.Text("done")),
	}}}}
	r := newRig(t, script, func(c *web.Config) {
		c.Agent.Dir = dir
		c.Agent.FS = &acphost.FSOptions{Read: true, Write: true}
	})
	tab := r.tab(b)
	r.send(tab, "go")
	r.poll(tab, `document.querySelector(".dialog.permission") !== null && !document.querySelector(".dialog.permission").classList.contains("inert")`)
	visible := `(() => { const c = document.querySelector('.card.tool[data-tool="t9"]'), m = document.getElementById("transcript");
		const a = c.getBoundingClientRect(), v = m.getBoundingClientRect(); return a.top >= v.top - 1 && a.bottom <= v.bottom + 1 })()`
	if !eval[bool](r, tab, visible) {
		t.Error("the tool card the dialog asks about is hidden")
	}
	if n := eval[int](r, tab, `document.querySelector(".dialog.permission").textContent.split("Run ls").length - 1`); n != 1 {
		t.Errorf("the tool's title shows %d times in the dialog", n)
	}
	card := `document.querySelector('.card.tool[data-tool="t9"]')`
	if code := eval[string](r, tab, `(`+card+`.querySelector("pre.code") || {}).textContent || ""`); code != "file1\nfile2" {
		t.Errorf("the fenced output renders as %q", code)
	}
	if strings.Contains(eval[string](r, tab, card+`.textContent`), "```") {
		t.Error("raw fences in the tool card")
	}
	r.answer(tab, `.dialog.permission button[data-option="allow"]`)
	r.do(tab, chromedp.WaitVisible(chromedp.CSS(".dialog.proposal textarea.proposed")))
	r.do(tab, chromedp.SetValue(chromedp.CSS(".dialog.proposal textarea.proposed"), "as amended\n"))
	r.answer(tab, ".dialog.proposal button.apply")
	r.turnEnded(tab, 1)
	if got := eval[string](r, tab, `[...document.querySelectorAll(".card.write pre.diff span.add")].map(s => s.textContent).join("|")`); got != "+as amended" {
		t.Errorf("the write card shows %q", got)
	}
	if !eval[bool](r, tab, card+`.querySelector(".diffblock").classList.contains("superseded")`) {
		t.Error("the agent's version in the tool card is not marked as not what landed")
	}
}
