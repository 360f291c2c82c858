package browsertest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
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
