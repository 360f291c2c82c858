package browsertest

import (
	"slices"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/chromedp/chromedp"
)

// TestPageLoadsEveryScript: every script the page asks for while it loads
// (the entry module and each module it imports, directly or not) is
// answered 200, so that a module the server does not serve fails here, by
// name, once the page has loaded, rather than as a page that never
// connects; and the page then runs (it connects and takes a turn). It
// logs what a load asks for (SPEC's measure).
func TestPageLoadsEveryScript(t *testing.T) {
	b := browser(t)
	r := newRig(t, fakeagent.Demo(), nil)
	tab, cancel := chromedp.NewContext(b)
	defer cancel()
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	r.do(tab, chromedp.Navigate(r.url())) // to the load event: every module fetched and run, or failed
	scripts := eval[[]string](r, tab, `performance.getEntriesByType("resource").map(e => new URL(e.name).pathname).filter(p => p.endsWith(".js")).sort()`)
	if !slices.Contains(scripts, "/app.js") {
		t.Fatalf("the page loaded no app.js: %v", scripts)
	}
	r.mu.Lock()
	answers := append([]string(nil), r.answers...)
	r.mu.Unlock()
	answered := map[string]string{}
	var gets []string
	for _, a := range answers {
		f := strings.Fields(a) // METHOD URI STATUS [ORIGIN]
		if f[0] == "GET" && f[1] != "/events" {
			gets = append(gets, f[1])
		}
		if strings.HasSuffix(f[1], ".js") {
			answered[f[1]] = f[2]
		}
	}
	for _, s := range scripts {
		if answered[s] != "200" {
			t.Errorf("%s, which the page loads, answered %q, want 200", s, answered[s])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	ready := eval[float64](r, tab, `performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd`)
	t.Logf("a page load: %d GET requests besides the event stream (%d scripts): %v; the scripts had run %.0f ms after the navigation began", len(gets), len(scripts), gets, ready)

	r.poll(tab, `document.getElementById("conn").textContent === "connected"`)
	r.send(tab, "list files")
	r.answer(tab, `.dialog.permission button[data-option="allow"]`)
	r.turnEnded(tab, 1)
}

// BenchmarkPageLoad: a reload of the page, from the navigation to its
// scripts having run (DOMContentLoaded, which waits for the module graph)
// and to the event stream connected. Every file is fetched again each
// time (no-store).
func BenchmarkPageLoad(b *testing.B) {
	br := browser(b)
	r := newRig(b, fakeagent.Demo(), nil)
	tab := r.tab(br)
	var ready float64
	for b.Loop() {
		r.do(tab, chromedp.Reload())
		r.poll(tab, `document.getElementById("conn").textContent === "connected"`)
		ready += eval[float64](r, tab, `performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd`)
	}
	b.ReportMetric(ready/float64(b.N), "ms-to-scripts-run/op")
	b.ReportMetric(float64(eval[int](r, tab, `performance.getEntriesByType("resource").length`)), "resources/op")
}
