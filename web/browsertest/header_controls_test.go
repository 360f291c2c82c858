package browsertest

import (
	"encoding/json"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/chromedp/chromedp"
)

// TestHeaderShowsAndSets: the header shows the context used and its cost
// from the agent's usage_update, the plan-mode switch turns host plan mode
// on (the state coming back checks it on every tab), and the agent's
// config options are set from the page: a select, and a switch in the
// options menu.
func TestHeaderShowsAndSets(t *testing.T) {
	b := browser(t)
	script := fakeagent.Script{NewSessionResult: claudeControls, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(json.RawMessage(`{"sessionUpdate":"usage_update","used":1234,"size":200000,"cost":{"amount":0.5,"currency":"USD"}}`)),
		fakeagent.Say(fakeagent.Text("counted")),
	}}}}
	r := newRig(t, script, nil)
	tab, other := r.tab(b), r.tab(b)
	r.send(tab, "count")
	r.turnEnded(tab, 1)
	if got := eval[string](r, tab, `document.getElementById("usage").textContent`); got != "context 1.2k / 200k tokens (1%) · $0.50" {
		t.Errorf("usage: %q", got)
	}

	r.poll(tab, `!document.getElementById("planmode").checked`)
	r.do(tab, chromedp.Click(chromedp.CSS("#planmode")))
	r.poll(other, `document.getElementById("planmode").checked`)
	if !r.srv.Client().PlanMode() {
		t.Error("the switch did not turn host plan mode on")
	}

	eval[bool](r, tab, `(() => { const s = [...document.querySelectorAll("#config select")].find(s => [...s.options].some(o => o.value === "max")); s.value = "max"; s.dispatchEvent(new Event("change")); return true })()`)
	r.received(`"value":"max"`)
	r.do(tab, chromedp.Click(chromedp.CSS("#more summary")))
	eval[bool](r, tab, `(() => { const box = [...document.querySelectorAll("#morelist label")].find(l => l.textContent.includes("Fast mode")).querySelector("input"); box.click(); return true })()`)
	r.received(`"configId":"fast","sessionId"`)
	r.received(`"type":"boolean","value":true`)
}
