package browsertest

// The page in a real browser: headless Chromium (Debian's chromium package)
// driven over the DevTools protocol by chromedp. Every wait is on the page's
// own state (a selector, a predicate polled by the browser) with a deadline;
// nothing sleeps.
//
// Without Chromium the tests skip with a loud "SKIPPED, NOT PASSED" unless
// ACPHOST_REQUIRE_CHROMIUM=1, when they fail. ACPHOST_SCREENSHOTS=DIR writes
// screenshots of the transcript and of an approval dialog there.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/acphost/acphost/web"
	"github.com/chromedp/chromedp"
)

func TestMain(m *testing.M) {
	fakeagent.Main()
	os.Exit(testutil.RunCheckingGoroutines(m))
}

// step bounds one wait in the browser.
const step = 20 * time.Second

// chromium finds the browser, or skips (fails with ACPHOST_REQUIRE_CHROMIUM=1).
func chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ACPHOST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "Chromium not found (apt-get install chromium, or set ACPHOST_CHROMIUM)"
	if os.Getenv("ACPHOST_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(msg + " and ACPHOST_REQUIRE_CHROMIUM=1")
	}
	fmt.Fprintf(os.Stderr, "\n!!! %s: SKIPPED, NOT PASSED: %s !!!\n\n", t.Name(), msg)
	t.Skip("SKIPPED, NOT PASSED: " + msg)
	return ""
}

// browserStarts is how many times browser tries to start Chromium. A
// headless Chromium now and then exits during its own start-up, before it
// listens, having printed nothing but its usual D-Bus noise (seen once in
// CI, in 1 of some 60 starts); that is the browser's, not the page's, so
// the start is tried again and each failure is logged.
const browserStarts = 3

// browser starts headless Chromium for the test; it is gone when the test
// ends.
func browser(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1200, 900),
	)
	for try := 1; ; try++ {
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		err := chromedp.Do(ctx) // start it, without a timeout
		if err == nil {
			t.Cleanup(func() {
				cancel()
				cancelAlloc() // waits for the browser process to exit
			})
			return ctx
		}
		cancel()
		cancelAlloc()
		if try == browserStarts || !strings.Contains(err.Error(), "chrome failed to start") {
			t.Fatalf("starting Chromium (try %d of %d): %v", try, browserStarts, err)
		}
		t.Logf("starting Chromium, try %d of %d: %v", try, browserStarts, err)
	}
}

// rig is a web.Server on an httptest server, playing a fake agent
// in-process so the test reads what the agent received.
type rig struct {
	t     testing.TB
	srv   *web.Server
	hs    *httptest.Server
	agent *fakeagent.Agent

	mu      sync.Mutex
	answers []string // "METHOD REQUEST-URI STATUS ORIGIN" of each request
}

type closers []io.Closer

func (c closers) Close() error {
	for _, x := range c {
		x.Close()
	}
	return nil
}

// statusWriter records the status of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Flush()               { w.ResponseWriter.(http.Flusher).Flush() }
func (w *statusWriter) Unwrap() http.ResponseWriter {
	return w.ResponseWriter
}

func newRig(t testing.TB, script fakeagent.Script, mod func(*web.Config)) *rig {
	t.Helper()
	a := fakeagent.New(script)
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := a.Serve(context.Background(), toAgentR, fromAgentW)
		fromAgentW.Close()
		served <- err
	}()
	cfg := web.Config{
		Agent: acphost.ACPOptions{Dir: t.TempDir()},
		Start: func(ctx context.Context, opts acphost.ACPOptions) (*acphost.ACPClient, error) {
			opts.Transport = &acphost.StreamTransport{Reader: fromAgentR, Writer: toAgentW, Closer: closers{toAgentW, fromAgentR}}
			return acphost.Start(ctx, opts)
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := web.New(context.Background(), cfg)
	if err != nil {
		toAgentW.Close()
		<-served
		t.Fatal(err)
	}
	r := &rig{t: t, srv: srv, agent: a}
	r.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		srv.ServeHTTP(sw, req)
		r.mu.Lock()
		r.answers = append(r.answers, fmt.Sprintf("%s %s %d %s", req.Method, req.RequestURI, sw.code, req.Header.Get("Origin")))
		r.mu.Unlock()
	}))
	t.Cleanup(func() {
		r.hs.CloseClientConnections()
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		r.hs.Close()
		select {
		case <-served:
		case <-time.After(step):
			t.Error("the fake agent did not end")
		}
	})
	return r
}

// url is the address the command would print.
func (r *rig) url() string { return r.srv.URL(r.hs.URL + "/") }

// tab opens the page in a new tab of the browser.
func (r *rig) tab(browser context.Context) context.Context {
	r.t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	r.t.Cleanup(cancel)
	// Open the tab with no deadline: the tab lives as long as the context
	// of its first run.
	if err := chromedp.Do(ctx); err != nil {
		r.t.Fatal(err)
	}
	r.do(ctx, chromedp.Navigate(r.url()), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	r.poll(ctx, `document.getElementById("conn").textContent === "connected"`)
	return ctx
}

// do runs actions with a deadline.
func (r *rig) do(ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	r.t.Helper()
	c, cancel := context.WithTimeout(ctx, step)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		r.t.Fatal(err)
	}
}

// poll waits for a JavaScript predicate to be true in the page.
func (r *rig) poll(ctx context.Context, predicate string) {
	r.t.Helper()
	c, cancel := context.WithTimeout(ctx, step)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(step))); err != nil {
		r.t.Fatalf("waiting for %s: %v", predicate, err)
	}
}

// eval returns the value of a JavaScript expression in the page.
func eval[T any](r *rig, ctx context.Context, expr string) T {
	r.t.Helper()
	c, cancel := context.WithTimeout(ctx, step)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr))
	if err != nil {
		r.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// answer clicks a dialog's button once the dialog takes clicks (a dialog
// just shown ignores them for a moment).
func (r *rig) answer(ctx context.Context, sel string) {
	r.t.Helper()
	r.poll(ctx, fmt.Sprintf(`document.querySelector(%q) !== null && !document.querySelector(%q).closest(".dialog").classList.contains("inert")`, sel, sel))
	r.do(ctx, chromedp.Click(chromedp.CSS(sel)))
}

// click clicks the element sel names once it is there and enabled, from
// the page's own script: a list the page re-renders meanwhile cannot make
// it miss the node (chromedp's Click resolves the node first, then
// clicks it, and fails when it was replaced between the two).
func (r *rig) click(ctx context.Context, sel string) {
	r.t.Helper()
	r.poll(ctx, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e || e.disabled) return false; e.click(); return true })()`, sel))
}

// send types a prompt and presses Enter.
func (r *rig) send(ctx context.Context, prompt string) {
	r.t.Helper()
	r.poll(ctx, `!document.getElementById("send").disabled`)
	r.do(ctx, chromedp.SendKeys(chromedp.CSS("#prompt"), prompt+"\r"))
}

// turnEnded waits for the end line of turn n and returns it.
func (r *rig) turnEnded(ctx context.Context, n int) string {
	r.t.Helper()
	sel := fmt.Sprintf(`#transcript .end[data-turn="%d"]`, n)
	r.poll(ctx, fmt.Sprintf("document.querySelector(%q) !== null", sel))
	return eval[string](r, ctx, fmt.Sprintf("document.querySelector(%q).textContent", sel))
}

// received waits for the agent to have received a message containing want.
func (r *rig) received(want string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), step)
	defer cancel()
	if _, err := r.agent.WaitReceivedFunc(ctx, func(m fakeagent.Message) bool { return bytes.Contains(m.Raw, []byte(want)) }); err != nil {
		r.t.Fatalf("the agent never received %s", want)
	}
}

// screenshot writes the page to ACPHOST_SCREENSHOTS/name, when set.
func (r *rig) screenshot(ctx context.Context, name string) {
	dir := os.Getenv("ACPHOST_SCREENSHOTS")
	if dir == "" {
		return
	}
	c, cancel := context.WithTimeout(ctx, step)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// TestTurnWithApproval: a prompt typed in the page streams the demo turn
// (thought, tool card, permission, plan, answer); the approval is answered
// by a click in one tab, closes in the other, reaches the agent, and the
// turn ends.
func TestTurnWithApproval(t *testing.T) {
	b := browser(t)
	r := newRig(t, fakeagent.Demo(), nil)
	tab1 := r.tab(b)
	tab2 := r.tab(b)

	r.send(tab1, "list files")
	allow := `.dialog.permission button[data-option="allow-always"]`
	r.do(tab1, chromedp.WaitVisible(chromedp.CSS(allow)))
	r.do(tab2, chromedp.WaitVisible(chromedp.CSS(allow)))
	// Streamed so far: the thought, the pending tool card.
	r.poll(tab1, `document.querySelector("details.thought").textContent.includes("thinking about it")`)
	r.poll(tab1, `document.querySelector('.card.tool[data-tool="t1"]').dataset.status === "pending"`)
	buttons := eval[[]string](r, tab1, `[...document.querySelectorAll(".dialog.permission .optbtn")].map(b => b.textContent + "|" + b.dataset.kind)`)
	want := []string{"Allow|allow_once", "Always allow|allow_always", "Reject|reject_once"}
	if strings.Join(buttons, ",") != strings.Join(want, ",") {
		t.Errorf("options %v, want %v", buttons, want)
	}
	if h := eval[string](r, tab1, `document.querySelector(".dialog.permission h2").textContent`); h != "ls" {
		t.Errorf("heading %q", h)
	}
	r.screenshot(tab1, "approval.png")

	r.answer(tab1, allow)
	r.do(tab2, chromedp.WaitNotPresent(chromedp.CSS(".dialog")))
	if end := r.turnEnded(tab1, 1); end != "turn ended: end_turn" {
		t.Errorf("end %q", end)
	}
	r.received(`"optionId":"allow-always"`)
	for _, tab := range []context.Context{tab1, tab2} {
		if text := eval[string](r, tab, `[...document.querySelectorAll("#transcript .text")].map(e => e.textContent).join("")`); text != "picked allow-always" {
			t.Errorf("text %q", text)
		}
		r.poll(tab, `document.querySelector('.card.tool[data-tool="t1"]').dataset.status === "completed"`)
		r.poll(tab, `document.querySelector('.card.tool[data-tool="t1"] pre').textContent === "a.txt"`)
		if n := eval[int](r, tab, `document.querySelectorAll("#transcript .plan li").length`); n != 2 {
			t.Errorf("plan entries: %d", n)
		}
		if open := eval[bool](r, tab, `document.querySelector("details.thought").open`); open {
			t.Error("the thought is not collapsed")
		}
	}
	// A tab opened after the turn replays it.
	tab3 := r.tab(b)
	if end := r.turnEnded(tab3, 1); end != "turn ended: end_turn" {
		t.Errorf("replayed end %q", end)
	}
	r.screenshot(tab1, "transcript.png")
}

// TestStopButton: Stop cancels a long turn; the next turn runs on the same
// agent.
func TestStopButton(t *testing.T) {
	b := browser(t)
	script := fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "long", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {WaitCancel: true}}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("second turn"))}},
	}}
	r := newRig(t, script, nil)
	tab := r.tab(b)
	r.send(tab, "long")
	r.poll(tab, `document.querySelector("#transcript .text") !== null && document.querySelector("#transcript .text").textContent === "working"`)
	r.poll(tab, `!document.getElementById("stop").disabled`)
	r.click(tab, "#stop")
	if end := r.turnEnded(tab, 1); end != "turn ended: cancelled" {
		t.Errorf("end %q", end)
	}
	r.received(`"method":"session/cancel"`)
	r.poll(tab, `document.getElementById("stop").disabled`)
	r.send(tab, "next")
	if end := r.turnEnded(tab, 2); end != "turn ended: end_turn" {
		t.Errorf("second end %q", end)
	}
	if text := eval[string](r, tab, `[...document.querySelectorAll("#transcript .text")].pop().textContent`); text != "second turn" {
		t.Errorf("second text %q", text)
	}
}

// TestAmendProposal: a write shows its diff in colour and an editable text
// area; the amended text, applied, is what lands on disk and what the agent
// reads back.
func TestAmendProposal(t *testing.T) {
	b := browser(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "main.go")
	if err := os.WriteFile(path, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write, _ := json.Marshal(map[string]string{"path": path, "content": "package main\n\nfunc main() {}\n"})
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: write}},
		{Request: &fakeagent.Call{Method: "fs/read_text_file", Params: json.RawMessage(`{"path":` + strconv.Quote(path) + `}`)}},
		fakeagent.Say(fakeagent.Text("written")),
	}}}}
	r := newRig(t, script, func(c *web.Config) {
		c.Agent.Dir = dir
		c.Agent.FS = &acphost.FSOptions{Read: true, Write: true}
	})
	tab := r.tab(b)
	r.send(tab, "add main")
	r.do(tab, chromedp.WaitVisible(chromedp.CSS(".dialog.proposal textarea.proposed")))
	if added := eval[string](r, tab, `[...document.querySelectorAll(".dialog.proposal pre.diff span.add")].map(s => s.textContent).join("\n")`); !strings.Contains(added, "+func main() {}") {
		t.Errorf("added lines %q", added)
	}
	// The added lines are coloured.
	if bg := eval[string](r, tab, `getComputedStyle(document.querySelector(".dialog.proposal span.add")).backgroundColor`); bg == "" || bg == "rgba(0, 0, 0, 0)" {
		t.Errorf("added line background %q", bg)
	}
	amended := "package main\n\n// Reviewed in the browser.\nfunc main() {}\n"
	r.screenshot(tab, "proposal.png")
	r.do(tab, chromedp.SetValue(chromedp.CSS(".dialog.proposal textarea.proposed"), amended))
	r.answer(tab, ".dialog.proposal button.apply")
	r.do(tab, chromedp.WaitNotPresent(chromedp.CSS(".dialog")))
	if end := r.turnEnded(tab, 1); end != "turn ended: end_turn" {
		t.Errorf("end %q", end)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != amended {
		t.Errorf("on disk %q (%v), want %q", got, err, amended)
	}
	q, _ := json.Marshal(amended)
	r.received(`"content":` + string(q))
}

// hostile is agent text that would run script or make elements if it were
// ever parsed as HTML.
const hostile = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"><b>bold</b>&amp;&lt;i&gt;` + "\u202eevil\u200b"

// TestAgentTextInert: markup, entities and bidi controls from the agent,
// in a message, a thought, a tool card, a plan and an approval dialog,
// render as text: no element is created, nothing runs, the entity stays
// literal and the bidi override is gone.
func TestAgentTextInert(t *testing.T) {
	b := browser(t)
	h, _ := json.Marshal(hostile)
	call := json.RawMessage(`{"sessionUpdate":"tool_call","toolCallId":"x1","title":` + string(h) + `,"kind":"execute","status":"pending",` +
		`"content":[{"type":"content","content":{"type":"text","text":` + string(h) + `}}]}`)
	perm := fakeagent.PermissionParams("x1", hostile, "execute",
		fakeagent.Option{ID: "ok", Name: hostile, Kind: "allow_once"}, fakeagent.Option{ID: "no", Name: "No", Kind: "reject_once"})
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Thought(hostile)),
		fakeagent.Say(call),
		fakeagent.Say(fakeagent.Plan(hostile)),
		fakeagent.Ask(perm),
		fakeagent.Say(fakeagent.Text(hostile)),
	}}}}
	r := newRig(t, script, nil)
	tab := r.tab(b)
	r.send(tab, hostile) // the person's own prompt is shown the same way
	r.do(tab, chromedp.WaitVisible(chromedp.CSS(`.dialog.permission button[data-option="ok"]`)))
	check := func(where string) {
		t.Helper()
		if n := eval[int](r, tab, `document.querySelectorAll("main script, main img, main b, main i, #dialogs script, #dialogs img, #dialogs b, #dialogs i").length`); n != 0 {
			t.Errorf("%s: %d elements made from agent text", where, n)
		}
		if p := eval[bool](r, tab, `window.__pwned !== undefined`); p {
			t.Errorf("%s: agent text ran", where)
		}
		body := eval[string](r, tab, `document.body.textContent`)
		if strings.ContainsAny(body, "\u202e\u200b") {
			t.Errorf("%s: a bidi control or invisible character reached the page", where)
		}
	}
	check("with the dialog open")
	if name := eval[string](r, tab, `document.querySelector('.dialog.permission button[data-option="ok"]').textContent`); name != "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"><b>bold</b>&amp;&lt;i&gt;evil" {
		t.Errorf("option name %q", name)
	}
	r.answer(tab, `.dialog.permission button[data-option="ok"]`)
	r.turnEnded(tab, 1)
	check("after the turn")
	for _, sel := range []string{"#transcript .user", "#transcript .text", "details.thought > div", ".card.tool .title", ".plan li"} {
		got := eval[string](r, tab, fmt.Sprintf("document.querySelector(%q).textContent", sel))
		if !strings.Contains(got, "<script>window.__pwned=1</script>") || !strings.Contains(got, "&amp;&lt;i&gt;evil") {
			t.Errorf("%s shows %q", sel, got)
		}
	}
}

// TestRefusals: the page shell opens without the token but an API call
// or the event stream without it is refused (the page says to open the
// printed URL); a page of another origin (another port of the same host)
// that posts a prompt and opens the event stream is refused by the Origin
// check, and the agent never sees a prompt.
func TestRefusals(t *testing.T) {
	b := browser(t)
	r := newRig(t, fakeagent.Demo(), nil)
	tab := r.tab(b)

	// A fresh browser context, the bare address: no token anywhere.
	fresh, cancel := chromedp.NewContext(b, chromedp.WithNewBrowserContext())
	defer cancel()
	if err := chromedp.Do(fresh); err != nil {
		t.Fatal(err)
	}
	r.do(fresh, chromedp.Navigate(r.hs.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	r.poll(fresh, `document.getElementById("error").textContent.includes("open the URL acphost printed")`)
	if c := eval[string](r, fresh, `document.getElementById("conn").textContent`); c != "no token" {
		t.Errorf("connection badge without the token: %q", c)
	}
	c, cancelEval := context.WithTimeout(fresh, step)
	defer cancelEval()
	status, err := chromedp.Run(c, chromedp.Evaluate[int](`fetch("api/prompt", {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"text":"no token"}'}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusUnauthorized {
		t.Errorf("an API call without the token: %d", status)
	}
	// A wrong token in the URL: refused, and said so.
	r.do(fresh, chromedp.Navigate(r.hs.URL+"/?again#token=wrong"), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	r.poll(fresh, `document.getElementById("conn").textContent === "not authorized"`)

	target := r.hs.URL + "/"
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><body><script>
const t = %q;
Promise.allSettled([
  fetch(t + "api/prompt", {method: "POST", credentials: "include", headers: {"Content-Type": "application/json"}, body: '{"text":"pwned"}'}),
  fetch(t + "api/prompt", {method: "POST", credentials: "include", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: '{"text":"pwned"}'}),
  new Promise(res => { const es = new EventSource(t + "events", {withCredentials: true}); es.onerror = () => { es.close(); res(); }; es.onmessage = () => { document.title = "leak"; es.close(); res(); }; }),
]).then(() => { const d = document.createElement("div"); d.id = "done"; document.body.append(d); });
</script></body>`, target)
	}))
	defer evil.Close()
	r.do(tab, chromedp.Navigate(evil.URL+"/"), chromedp.WaitReady(chromedp.CSS("#done")))
	if title := eval[string](r, tab, `document.title`); title == "leak" {
		t.Error("another origin read the event stream")
	}
	r.mu.Lock()
	answers := append([]string(nil), r.answers...)
	r.mu.Unlock()
	var refused int
	for _, a := range answers {
		if strings.Contains(a, evil.URL) {
			if !strings.Contains(a, " 403 ") {
				t.Errorf("a request from another origin was answered: %s", a)
			}
			refused++
		}
	}
	if refused == 0 {
		t.Errorf("no request from the other origin arrived: %v", answers)
	}
	for _, m := range r.agent.Received() {
		if m.Method == "session/prompt" {
			t.Errorf("the agent got a prompt: %s", m.Raw)
		}
	}
}

// markdown is an agent message using the Markdown agents write, with hostile
// parts: HTML, a javascript: link, a data: link, a link to the server's own
// API, an image.
const markdown = "## Plan\n\nSome *emphasis*, **strong**, `a <b>code</b> span` and snake_case_name.\n\n" +
	"- first item\n- second with [a link](https://example.com/x?a=1)\n  - nested\n\n" +
	"1. one\n2. two\n\n" +
	"```go\nfunc main() { fmt.Println(\"<script>\") }\n```\n\n" +
	"> quoted\n\n" +
	"Bad: [click](javascript:window.__pwned=3) [data](data:text/html,<script>window.__pwned=4</script>) " +
	"[api](api/stop) [spaced]( JAVASCRIPT:window.__pwned=5 ) ![img](https://example.com/i.png) " +
	"<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"> and <https://example.org/auto>."

// TestMarkdown: an agent message renders as Markdown (heading, emphasis,
// code span and block, nested list, ordered list, quote, links with
// rel=noopener noreferrer), built as elements: the HTML in it stays text,
// nothing runs, and only absolute http(s) addresses become links.
func TestMarkdown(t *testing.T) {
	b := browser(t)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		// In pieces, as agents stream it.
		fakeagent.Say(fakeagent.Text(markdown[:40])),
		fakeagent.Say(fakeagent.Text(markdown[40:200])),
		fakeagent.Say(fakeagent.Text(markdown[200:])),
	}}}}
	r := newRig(t, script, nil)
	tab := r.tab(b)
	r.send(tab, "explain")
	r.turnEnded(tab, 1)
	md := `document.querySelector("#transcript .text")`
	for sel, want := range map[string]string{
		"h4":                   "Plan",
		"p em":                 "emphasis",
		"p strong":             "strong",
		"p code":               "a <b>code</b> span",
		"ul > li:first-child":  "first item",
		"ul ul > li":           "nested",
		"ol > li:nth-child(2)": "two",
		"pre.code code":        "func main() { fmt.Println(\"<script>\") }",
		"blockquote":           "quoted",
	} {
		if got := eval[string](r, tab, fmt.Sprintf("(%s.querySelector(%q) || {}).textContent", md, sel)); got != want {
			t.Errorf("%s: %q, want %q", sel, got, want)
		}
	}
	if lang := eval[string](r, tab, md+`.querySelector("pre.code code").dataset.lang`); lang != "go" {
		t.Errorf("code block language %q", lang)
	}
	links := eval[[]string](r, tab, `[...`+md+`.querySelectorAll("a")].map(a => a.getAttribute("href") + "|" + a.rel + "|" + a.target + "|" + a.textContent)`)
	want := []string{"https://example.com/x?a=1|noopener noreferrer|_blank|a link", "https://example.org/auto|noopener noreferrer|_blank|https://example.org/auto"}
	if strings.Join(links, "\n") != strings.Join(want, "\n") {
		t.Errorf("links:\n%s\nwant:\n%s", strings.Join(links, "\n"), strings.Join(want, "\n"))
	}
	if n := eval[int](r, tab, `document.querySelectorAll("main script, main img, main b, main iframe, main [onerror]").length`); n != 0 {
		t.Errorf("%d elements made from the message's HTML", n)
	}
	if p := eval[bool](r, tab, `window.__pwned !== undefined`); p {
		t.Error("the message's script ran")
	}
	text := eval[string](r, tab, md+".textContent")
	for _, lit := range []string{"snake_case_name", "[click](javascript:window.__pwned=3)", "[api](api/stop)", "![img](https://example.com/i.png)",
		`<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`} {
		if !strings.Contains(text, lit) {
			t.Errorf("%q is not shown as written in %q", lit, text)
		}
	}
	r.screenshot(tab, "markdown.png")
}

// memStore is a web.SessionStore in memory.
type memStore struct {
	mu   sync.Mutex
	recs []web.SessionRecord
}

func (m *memStore) List() ([]web.SessionRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]web.SessionRecord(nil), m.recs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastUsed.After(out[j].LastUsed) })
	return out, nil
}

func (m *memStore) Put(r web.SessionRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, o := range m.recs {
		if o.ID == r.ID {
			m.recs[i] = r
			return nil
		}
	}
	m.recs = append(m.recs, r)
	return nil
}

// TestSessions: a turn, then "New session" empties the transcript on both
// tabs; the session list shows the first session, and Resume goes back to
// it (still open: not loaded again): the page's transcript of it shown
// dimmed, and the next prompt answered in it.
func TestSessions(t *testing.T) {
	b := browser(t)
	script := fakeagent.Script{AgentCapabilities: json.RawMessage(`{"loadSession":true}`), Turns: []fakeagent.Turn{
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("the **first** answer")), fakeagent.Say(fakeagent.ToolCall("c1", "read a.txt", "read"))}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("second answer"))}},
	}}
	st := &memStore{}
	r := newRig(t, script, func(c *web.Config) { c.Sessions = st })
	tab1, tab2 := r.tab(b), r.tab(b)
	first := eval[string](r, tab1, `document.getElementById("session").textContent`)
	r.send(tab1, "hello")
	r.turnEnded(tab1, 1)

	r.click(tab1, "#sessionsbtn")
	r.poll(tab1, `document.querySelectorAll("#sessionlist li").length === 1`)
	if cur := eval[string](r, tab1, `document.querySelector("#sessionlist button").textContent`); cur != "current" {
		t.Errorf("the current session's button says %q", cur)
	}
	r.click(tab1, "#newsession")
	for _, tab := range []context.Context{tab1, tab2} {
		r.poll(tab, `document.querySelector("#transcript .note.session") !== null && document.querySelector("#transcript .text") === null`)
		r.poll(tab, fmt.Sprintf(`document.getElementById("session").textContent !== %q`, first))
	}
	resume := fmt.Sprintf(`#sessionlist button[data-session=%q]`, first)
	r.poll(tab1, fmt.Sprintf(`document.querySelector(%q) !== null && !document.querySelector(%q).disabled`, resume, resume))
	r.click(tab1, resume)
	for _, tab := range []context.Context{tab1, tab2} {
		r.poll(tab, `document.querySelector("#transcript .text.replay strong") !== null`)
		r.poll(tab, fmt.Sprintf(`document.getElementById("session").textContent === %q`, first))
		if got := eval[string](r, tab, `document.querySelector("#transcript .text.replay").textContent`); got != "the first answer" {
			t.Errorf("replayed text %q", got)
		}
		if !eval[bool](r, tab, `document.querySelector('#transcript .card.tool.replay') !== null`) {
			t.Error("the replayed tool call is not shown as replayed")
		}
		if op := eval[string](r, tab, `getComputedStyle(document.querySelector("#transcript .text.replay")).opacity`); op == "1" {
			t.Errorf("replayed text not dimmed (opacity %s)", op)
		}
	}
	for _, m := range r.agent.Received() {
		if m.Method == "session/load" {
			t.Errorf("the first session, still open, was loaded a second time: %s", m.Raw)
		}
	}
	r.screenshot(tab1, "sessions.png")
	r.send(tab1, "again")
	r.turnEnded(tab1, 2)
	if text := eval[string](r, tab1, `[...document.querySelectorAll("#transcript .text:not(.replay)")].map(e => e.textContent).join("")`); text != "second answer" {
		t.Errorf("after the resume: %q", text)
	}
}

// TestCommandSharesSessions: the acphost command itself. A terminal run
// (acphost -p) records its session; acphost web, in the same directory and
// with the same store, lists it in the page, loads it (the terminal turn's
// answer replayed, dimmed), runs a turn in it, and records that use.
func TestCommandSharesSessions(t *testing.T) {
	b := browser(t)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "acphost")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, "./cmd/acphost")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	script, _ := json.Marshal(fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       filepath.Join(tmp, "history.jsonl"), // the agent's own memory, across its processes
		Turns: []fakeagent.Turn{
			{Prompt: "from the terminal", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answered in the *terminal*"))}},
			{Prompt: "from the browser", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answered in the browser"))}},
		},
	})
	env := append(os.Environ(), "ACPHOST_STATE_DIR="+filepath.Join(tmp, "state"), "ACPHOST_CONFIG="+filepath.Join(tmp, "none.json"),
		"ACPHOST_DEMO_SCRIPT="+string(script), "NO_COLOR=1")
	cli := exec.Command(bin, "--cwd", work, "-p", "from the terminal")
	cli.Env = env
	if out, err := cli.CombinedOutput(); err != nil || !strings.Contains(string(out), "answered in the *terminal*") {
		t.Fatalf("acphost -p: %v\n%s", err, out)
	}
	sessions := func() []map[string]any {
		t.Helper()
		c := exec.Command(bin, "sessions", "--json")
		c.Env = env
		out, err := c.Output()
		if err != nil {
			t.Fatal(err)
		}
		var recs []map[string]any
		if err := json.Unmarshal(out, &recs); err != nil {
			t.Fatal(err)
		}
		return recs
	}
	recs := sessions()
	if len(recs) != 1 {
		t.Fatalf("records after the terminal run: %v", recs)
	}
	id, _ := recs[0]["id"].(string)
	used, _ := recs[0]["lastUsed"].(string)

	srv := exec.Command(bin, "web", "--cwd", work)
	srv.Env = env
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		srv.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("acphost web: %v\n%s", err, stderr.String())
			}
		case <-time.After(step):
			srv.Process.Kill()
			t.Errorf("acphost web did not exit on SIGINT\n%s", stderr.String())
		}
	}
	defer stop()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the URL: %v\n%s", err, stderr.String())
	}
	url := strings.TrimSpace(line)
	if !strings.Contains(url, "/#token=") {
		t.Fatalf("printed %q", url)
	}

	r := &rig{t: t}
	tab, cancel := chromedp.NewContext(b)
	defer cancel()
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	r.do(tab, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#prompt")))
	r.poll(tab, `document.getElementById("conn").textContent === "connected"`)
	r.click(tab, "#sessionsbtn")
	resume := fmt.Sprintf(`#sessionlist button[data-session=%q]`, id)
	r.poll(tab, fmt.Sprintf(`document.querySelector(%q) !== null`, resume))
	// The fake agent numbers its sessions per process, so the page's first
	// session has the recorded one's id: leave it for a new one first.
	r.click(tab, "#newsession")
	r.poll(tab, fmt.Sprintf(`document.getElementById("session").textContent !== %q`, id))
	r.poll(tab, fmt.Sprintf(`document.querySelector(%q) !== null && !document.querySelector(%q).disabled`, resume, resume))
	r.click(tab, resume)
	r.poll(tab, `document.querySelector("#transcript .text.replay em") !== null`)
	if got := eval[string](r, tab, `document.querySelector("#transcript .text.replay").textContent`); got != "answered in the terminal" {
		t.Errorf("replayed %q", got)
	}
	r.send(tab, "from the browser")
	r.turnEnded(tab, 1)
	if got := eval[string](r, tab, `[...document.querySelectorAll("#transcript .text:not(.replay)")].map(e => e.textContent).join("")`); got != "answered in the browser" {
		t.Errorf("answer %q", got)
	}
	stop()
	recs = sessions()
	if len(recs) != 1 || recs[0]["id"] != id || recs[0]["lastUsed"] == used || recs[0]["agent"] != "demo" {
		t.Errorf("records after the browser turn (one, %s, used later than %s, agent demo): %v", id, used, recs)
	}
}
