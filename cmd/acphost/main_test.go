package main

// The tests build the command once (TestMain) and run the binary. With no
// agent on the command line it runs itself as the built-in fake agent;
// tests that need another script pass it as JSON in ACPHOST_DEMO_SCRIPT.
// Nothing waits on the clock: the tests read the child's stdout line by line
// and react to what it printed (readTimeout only guards against a hang).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/render"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/confine"
	"github.com/acphost/acphost/registry"
)

var (
	binPath     string
	raceEnabled bool // set by race_test.go
)

// readTimeout bounds one wait for output, so a broken build fails instead of
// hanging; it is never what the test waits for.
const readTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "acphost-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if os.Getenv(envStoreWriter) != "" {
		os.Exit(storeWriter()) // a child of TestStoreConcurrentWriters
	}
	if os.Getenv(envHostileControl) != "" {
		os.Exit(hostileControl()) // run by TestAgentCannotDriveAControlSocket's agent
	}
	binPath = filepath.Join(dir, "acphost")
	// No test sees the user's config file or session store.
	os.Unsetenv(agents.EnvConfig)
	os.Unsetenv(state.EnvDir)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")) // the registry's installs
	os.Unsetenv(registry.EnvRegistry)
	args := []string{"build", "-o", binPath}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building acphost:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running acphost.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *lockedBuffer
	waited bool
	code   int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// env is the environment of acphost: the script for the built-in agent,
// no colors, no race-detector exit delay.
func env(t *testing.T, script *fakeagent.Script) []string {
	e := append(os.Environ(), "NO_COLOR=1")
	if os.Getenv("GORACE") == "" {
		e = append(e, "GORACE=atexit_sleep_ms=0")
	}
	if script != nil {
		b, err := json.Marshal(script)
		if err != nil {
			t.Fatal(err)
		}
		e = append(e, envDemoScript+"="+string(b))
	}
	return e
}

// start runs acphost with stdin a pipe the test controls.
func start(t *testing.T, script *fakeagent.Script, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = env(t, script)
	cmd.Dir = t.TempDir()
	p := &proc{t: t, cmd: cmd, lines: make(chan string, 1000), stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if !p.waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return p
}

// line returns the next stdout line; ok is false at EOF.
func (p *proc) line() (string, bool) {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		return l, ok
	case <-time.After(readTimeout):
		p.t.Fatalf("no output for %v; stderr:\n%s", readTimeout, p.stderr.String())
		return "", false
	}
}

// jsonLine is a --json output line, as the tests decode it.
type jsonLine = render.JSONLine

// event returns the next --json line, decoded; ok is false at EOF.
func (p *proc) event() (jsonLine, bool) {
	p.t.Helper()
	l, ok := p.line()
	if !ok {
		return jsonLine{}, false
	}
	return decodeLine(p.t, l), true
}

// until reads events up to and including the first of type typ.
func (p *proc) until(typ string) []jsonLine {
	p.t.Helper()
	var evs []jsonLine
	for {
		ev, ok := p.event()
		if !ok {
			p.t.Fatalf("stdout ended before a %q event; got %v; stderr:\n%s", typ, types(evs), p.stderr.String())
		}
		evs = append(evs, ev)
		if ev.Type == typ {
			return evs
		}
	}
}

// wait reads the rest of stdout and returns it with the exit status.
func (p *proc) wait() ([]string, int) {
	p.t.Helper()
	var rest []string
	for {
		l, ok := p.line()
		if !ok {
			break
		}
		rest = append(rest, l)
	}
	err := p.cmd.Wait()
	p.waited = true
	var exit *exec.ExitError
	switch {
	case err == nil:
		p.code = 0
	case errors.As(err, &exit):
		p.code = exit.ExitCode()
	default:
		p.t.Fatal(err)
	}
	return rest, p.code
}

func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// result is a finished run.
type result struct {
	stdout, stderr string
	code           int
}

// runWith runs acphost to the end with the given stdin, in a fresh
// directory.
func runWith(t *testing.T, script *fakeagent.Script, stdin string, args ...string) result {
	t.Helper()
	return runIn(t, t.TempDir(), nil, script, stdin, args...)
}

func decodeLine(t *testing.T, l string) jsonLine {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(l), &m); err != nil {
		t.Fatalf("stdout line is not a JSON object: %q: %v", l, err)
	}
	var ev jsonLine
	if err := json.Unmarshal([]byte(l), &ev); err != nil {
		t.Fatalf("decoding %q: %v", l, err)
	}
	if ev.Type == "" {
		t.Fatalf("line without a type: %q", l)
	}
	return ev
}

// events decodes a whole --json stdout.
func events(t *testing.T, stdout string) []jsonLine {
	t.Helper()
	var evs []jsonLine
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if l == "" && stdout == "" {
			break
		}
		evs = append(evs, decodeLine(t, l))
	}
	return evs
}

func types(evs []jsonLine) []string {
	var ts []string
	for _, ev := range evs {
		ts = append(ts, ev.Type)
	}
	return ts
}

func ofType(evs []jsonLine, typ string) []jsonLine {
	var out []jsonLine
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func resultText(ev jsonLine) string {
	if ev.Text == nil {
		return ""
	}
	return *ev.Text
}

func countMethod(msgs []fakeagent.Message, method string) int {
	n := 0
	for _, m := range msgs {
		if m.Method == method {
			n++
		}
	}
	return n
}

func needSignals(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs Unix signals")
	}
}

// demoTurn is the event sequence of one turn of fakeagent.Demo.
// --permission allow answers without asking: a permission_decision line
// follows the answer.
var demoTurn = []string{"thought", "tool_call", "permission", "permission_answer", "permission_decision", "tool_update", "tool_result", "plan", "text", "done", "result"}

func TestJSONDemoTurnsInOrder(t *testing.T) {
	r := runWith(t, nil, "", "--json", "--permission", "allow", "-p", "list files", "--prompt", "again")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	evs := events(t, r.stdout)
	want := append(append([]string(nil), demoTurn...), demoTurn...)
	if got := types(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("event types:\n got %v\nwant %v", got, want)
	}
	for i, ev := range evs[:len(demoTurn)] {
		switch ev.Type {
		case "thought":
			if ev.Delta != "thinking about it" {
				t.Errorf("event %d: delta %q", i, ev.Delta)
			}
		case "tool_call":
			if ev.ID != "t1" || ev.Name != "ls" || ev.Kind != "execute" || ev.Via != "acp" || ev.Status != "pending" || string(ev.Input) != `{"path":"."}` {
				t.Errorf("tool_call %+v", ev)
			}
		case "permission":
			if ev.Title != "ls" || ev.Kind != "execute" || len(ev.Options) != 3 || ev.Options[0].OptionID != "allow" || ev.Options[2].Kind != "reject_once" {
				t.Errorf("permission %+v", ev)
			}
		case "permission_answer":
			if ev.OptionID != "allow" || ev.OptionKind != "allow_once" || ev.Reason == "hook" || ev.Reason == "" || ev.Cancelled {
				t.Errorf("permission_answer %+v", ev)
			}
		case "tool_result":
			if ev.Status != "completed" || len(ev.Content) != 1 || !strings.Contains(string(ev.Content[0]), "a.txt") {
				t.Errorf("tool_result %+v", ev)
			}
		case "plan":
			if len(ev.Entries) != 2 || ev.Entries[0].Content != "list the files" {
				t.Errorf("plan %+v", ev)
			}
		case "text":
			if ev.Delta != "picked allow" {
				t.Errorf("text %q", ev.Delta)
			}
		case "done":
			if ev.StopReason != "end_turn" {
				t.Errorf("done %+v", ev)
			}
		case "result":
			if ev.StopReason != "end_turn" || resultText(ev) != "picked allow" || ev.Error != "" || ev.DurationMS == nil {
				t.Errorf("result %+v", ev)
			}
		}
	}
}

func TestPermissionPolicies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  string // the option the agent got
	}{
		{"allow", []string{"--permission", "allow"}, "", "allow"},
		{"reject", []string{"--permission", "reject"}, "", "reject"},
		{"default without a terminal rejects", nil, "1\n", "reject"},
		{"ask by number", []string{"--permission", "ask"}, "2\n", "allow-always"},
		{"ask retries bad answers", []string{"--permission", "ask"}, "nope\n7\n\n3\n", "reject"},
		{"ask y", []string{"--permission", "ask"}, "y\n", "allow"},
		{"ask n", []string{"--permission", "ask"}, "n\n", "reject"},
		{"ask at end of input rejects", []string{"--permission", "ask"}, "", "reject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--json", "-p", "list files"}, tc.args...)
			r := runWith(t, nil, tc.stdin, args...)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			evs := events(t, r.stdout)
			ans := ofType(evs, "permission_answer")
			if len(ans) != 1 || ans[0].OptionID != tc.want {
				t.Fatalf("answers %+v, want %q", ans, tc.want)
			}
			res := ofType(evs, "result")
			if len(res) != 1 || resultText(res[0]) != "picked "+tc.want {
				t.Fatalf("results %+v", res)
			}
			if len(tc.args) > 0 && tc.args[1] == "ask" {
				// The question goes to stderr: stdout is JSON only.
				if !strings.Contains(r.stderr, "? Permission: ls") || !strings.Contains(r.stderr, "3) Reject [reject_once]") {
					t.Errorf("stderr lacks the request:\n%s", r.stderr)
				}
			}
		})
	}
}

func TestPermissionDetails(t *testing.T) {
	// A Claude-style request: a presentation record and an option with
	// structured changes.
	params := json.RawMessage(`{"toolCall":{"toolCallId":"t1","title":"Bash","kind":"execute","rawInput":{"command":"npm test"}},
	 "_meta":{"permission":{"version":1,"title":"npm test","description":"Reason: verify the change"}},
	 "options":[{"optionId":"once","name":"Yes","kind":"allow_once"},
	  {"optionId":"always","name":"Yes, and don't ask again","kind":"allow_always","_meta":{"permission":{"version":1,"changes":[
	   {"type":"policy_rule","operation":"add","ruleBehavior":"allow","lifetime":{"scope":"session"},
	    "targets":[{"type":"command","matcher":{"type":"argv_prefix","argv":["npm","test"]}}]}]}}},
	  {"optionId":"no","name":"No","kind":"reject_once"}]}`)
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Ask(params),
		fakeagent.Say(fakeagent.Text("got {{answer}}")),
	}}}}
	const change = "Allow commands starting with `npm test` for this session"

	r := runWith(t, script, "2\n", "--permission", "ask", "-p", "test it")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"? Permission: npm test\n",
		"  Reason: verify the change\n",
		"  tool: execute Bash\n",
		"  command: $ npm test\n",
		"  1) Yes [allow_once]\n",
		"  2) Yes, and don't ask again [allow_always]\n       - " + change + "\n",
		"  3) No [reject_once]\n",
		"npm test: choose 1-3 (y: allow once, n: reject): 2\n",
		"→ Yes, and don't ask again [allow_always]\n",
		"got always",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}

	r = runWith(t, script, "", "--json", "--permission", "reject", "-p", "test it")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	perm := ofType(events(t, r.stdout), "permission")
	if len(perm) != 1 {
		t.Fatalf("permission events %+v", perm)
	}
	p := perm[0]
	if p.Title != "npm test" || p.Description != "Reason: verify the change" || p.Name != "Bash" || p.Kind != "execute" ||
		string(p.Input) != `{"command":"npm test"}` || len(p.Options) != 3 {
		t.Fatalf("permission %+v", p)
	}
	if o := p.Options[1]; o.OptionID != "always" || o.Kind != "allow_always" || !reflect.DeepEqual(o.Changes, []string{change}) {
		t.Errorf("option %+v", o)
	}
	if res := ofType(events(t, r.stdout), "result"); len(res) != 1 || resultText(res[0]) != "got no" {
		t.Errorf("results %+v", res)
	}
}

func TestPlanModeRejectsExecute(t *testing.T) {
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.ToolCall("t1", "rm -rf build", "execute")),
		fakeagent.Ask(fakeagent.PermissionParams("t1", "rm -rf build", "execute")),
		fakeagent.Say(fakeagent.Text("execute:{{answer}} ")),
		fakeagent.Ask(fakeagent.PermissionParams("t2", "cat README", "read")),
		fakeagent.Say(fakeagent.Text("read:{{answer}}")),
	}}}}
	r := runWith(t, script, "", "--json", "--permission", "plan", "-p", "clean up")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	evs := events(t, r.stdout)
	ans := ofType(evs, "permission_answer")
	if len(ans) != 2 {
		t.Fatalf("answers %+v", ans)
	}
	if a := ans[0]; a.ID != "t1" || a.OptionID != "reject" || a.OptionKind != "reject_once" || a.Reason != "plan_mode" {
		t.Errorf("execute answered %+v, want reject by plan_mode", a)
	}
	if a := ans[1]; a.ID != "t2" || a.OptionID != "allow" {
		t.Errorf("read answered %+v, want allow", a)
	}
	if res := ofType(evs, "result"); len(res) != 1 || resultText(res[0]) != "execute:reject read:allow" {
		t.Errorf("results %+v", res)
	}
}

// interruptScript asks a permission the test never answers in the "first"
// turn; the "second" turn just answers.
func interruptScript(record, onCancel string) *fakeagent.Script {
	return &fakeagent.Script{RecordFile: record, Turns: []fakeagent.Turn{
		{Prompt: "first", OnCancel: onCancel, Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.ToolCall("t1", "make install", "execute")),
			fakeagent.Ask(fakeagent.PermissionParams("t1", "make install", "execute")),
			fakeagent.Say(fakeagent.Text("not reached")),
		}},
		{Prompt: "second", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("still here"))}},
	}}
}

func TestInterruptCancelsTurnAndContinues(t *testing.T) {
	needSignals(t)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	p := start(t, interruptScript(record, ""), "--json", "--permission", "ask", "-p", "first", "-p", "second")
	first := p.until("permission")
	p.signal(syscall.SIGINT) // the approval prompt is waiting on a stdin nobody writes
	first = append(first, p.until("result")...)
	second := p.until("result")
	rest, code := p.wait()
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr.String())
	}
	if len(rest) != 0 {
		t.Errorf("output after the last result: %q", rest)
	}

	ans := ofType(first, "permission_answer")
	if len(ans) != 1 || !ans[0].Cancelled || ans[0].Reason != "cancelled" {
		t.Errorf("first turn's answer %+v, want cancelled", ans)
	}
	if tr := ofType(first, "tool_result"); len(tr) != 1 || tr[0].Status != "failed" {
		t.Errorf("first turn's tool result %+v, want failed", tr)
	}
	last := first[len(first)-2]
	if last.Type != "done" || last.StopReason != "cancelled" {
		t.Errorf("first turn ended with %+v", last)
	}
	if res := first[len(first)-1]; res.StopReason != "cancelled" || res.Error != "" || resultText(res) != "" {
		t.Errorf("first result %+v", res)
	}
	if got := types(second); !reflect.DeepEqual(got, []string{"text", "done", "result"}) {
		t.Errorf("second turn %v", got)
	}
	if res := second[len(second)-1]; res.StopReason != "end_turn" || resultText(res) != "still here" {
		t.Errorf("second result %+v", res)
	}
	if ofType(append(first, second...), "restart") != nil {
		t.Error("the agent was restarted")
	}
	// Same agent process: one initialize, one session, both prompts.
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	for method, want := range map[string]int{"initialize": 1, "session/new": 1, "session/prompt": 2, "session/cancel": 1} {
		if n := countMethod(msgs, method); n != want {
			t.Errorf("agent got %d %s, want %d", n, method, want)
		}
	}
	if !strings.Contains(p.stderr.String(), "cancelling the turn") {
		t.Errorf("stderr:\n%s", p.stderr.String())
	}
}

func TestSecondInterruptQuits(t *testing.T) {
	needSignals(t)
	// The agent never confirms the cancel, so the turn stays open.
	p := start(t, interruptScript("", "ignore"), "--json", "--permission", "ask", "-p", "first", "-p", "second")
	p.until("permission")
	p.signal(syscall.SIGINT)
	if ans := p.until("permission_answer"); !ans[len(ans)-1].Cancelled {
		t.Fatalf("answer %+v", ans[len(ans)-1])
	}
	p.signal(syscall.SIGINT)
	rest, code := p.wait()
	if code != exitInterrupt {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInterrupt, p.stderr.String())
	}
	for _, l := range rest {
		if ev := decodeLine(t, l); ev.Type == "result" && ev.StopReason == "end_turn" {
			t.Errorf("the second prompt ran: %s", l)
		}
	}
}

func TestSignalsBetweenTurns(t *testing.T) {
	needSignals(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, exitInterrupt}, {syscall.SIGTERM, exitTerm}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			p := start(t, nil, "--json", "--permission", "allow") // prompts from stdin
			if _, err := io.WriteString(p.stdin, "hello\n"); err != nil {
				t.Fatal(err)
			}
			if res := p.until("result"); res[len(res)-1].StopReason != "end_turn" {
				t.Fatalf("result %+v", res[len(res)-1])
			}
			p.signal(tc.sig) // waiting for the next prompt
			rest, code := p.wait()
			if code != tc.code || len(rest) != 0 {
				t.Fatalf("exit %d (want %d), output %q; stderr:\n%s", code, tc.code, rest, p.stderr.String())
			}
		})
	}
}

func TestSigtermDuringTurn(t *testing.T) {
	needSignals(t)
	p := start(t, interruptScript("", ""), "--json", "--permission", "ask", "-p", "first", "-p", "second")
	p.until("permission")
	p.signal(syscall.SIGTERM)
	_, code := p.wait()
	if code != exitTerm {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr.String())
	}
}

func TestInteractivePrompts(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script := &fakeagent.Script{RecordFile: record, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}}}}
	r := runWith(t, script, "one\n\n  \ntwo\r\n", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if res := ofType(events(t, r.stdout), "result"); len(res) != 2 {
		t.Fatalf("results %+v", res)
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	var prompts []string
	for _, m := range msgs {
		if m.Method == "session/prompt" {
			var p struct {
				Prompt []struct{ Text string } `json:"prompt"`
			}
			if err := json.Unmarshal(m.Params, &p); err != nil || len(p.Prompt) != 1 {
				t.Fatalf("prompt %s: %v", m.Params, err)
			}
			prompts = append(prompts, p.Prompt[0].Text)
		}
	}
	if !reflect.DeepEqual(prompts, []string{"one", "two"}) {
		t.Errorf("prompts %q", prompts)
	}
}

func TestAgentCrash(t *testing.T) {
	// No update before the exit: the library may drop updates an agent
	// sent just before dying (reported to the lead).
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Stderr: "loading model"},
		{Stderr: "fatal: out of cheese"},
		{Exit: new(3)},
	}}}}
	t.Run("json", func(t *testing.T) {
		r := runWith(t, script, "", "--json", "-p", "one", "-p", "two")
		if r.code != 1 {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "fatal: out of cheese") || !strings.Contains(r.stderr, "status 3") {
			t.Errorf("stderr does not name the agent's last line:\n%s", r.stderr)
		}
		evs := events(t, r.stdout)
		if res := ofType(evs, "result"); len(res) != 1 || !strings.Contains(res[0].Error, "out of cheese") {
			t.Errorf("results %+v (the second prompt must not run)", res)
		}
		if errs := ofType(evs, "error"); len(errs) != 1 || !strings.Contains(errs[0].Error, "out of cheese") {
			t.Errorf("error events %+v", errs)
		}
	})
	t.Run("human", func(t *testing.T) {
		r := runWith(t, script, "", "-p", "one")
		if r.code != 1 {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "the agent failed") || !strings.Contains(r.stderr, "loading model") || !strings.Contains(r.stderr, "fatal: out of cheese") {
			t.Errorf("stderr lacks the failure and the agent's stderr tail:\n%s", r.stderr)
		}
	})
	t.Run("at start", func(t *testing.T) {
		r := runWith(t, nil, "", "-p", "x", "--", filepath.Join(t.TempDir(), "no-such-agent"))
		if r.code != 1 || !strings.Contains(r.stderr, "could not start the agent") {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
	})
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--permission", "maybe"},
		{"--timeout", "soon"},
		{"--timeout", "-1s"},
		{"--no-such-flag"},
		{"--cwd", "/no/such/dir"},
		{"-p"},
	} {
		r := runWith(t, nil, "", args...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, want 2 and nothing", args, r.code, r.stdout)
		}
	}
	for _, h := range []string{"-h", "--help"} {
		// On stdout, so that acphost --help | less shows it.
		if r := runWith(t, nil, "", h); r.code != 0 || !strings.Contains(r.stdout, "--permission") || r.stderr != "" {
			t.Errorf("%s: exit %d; stdout:\n%s\nstderr:\n%s", h, r.code, r.stdout, r.stderr)
		}
	}
}

func TestHumanOutput(t *testing.T) {
	r := runWith(t, nil, "", "--permission", "allow", "-p", "list files")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"› list files",
		"[thinking] thinking about it",
		"⋯ execute ls",
		"? Permission: ls",
		"input: {\"path\":\".\"}",
		"1) Allow [allow_once]",
		"3) Reject [reject_once]",
		"→ Allow [allow_once] · --permission allow",
		"✓ execute ls",
		"[ ] list the files",
		"picked allow",
		"✓ end_turn",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b") {
		t.Errorf("escape sequences without a terminal:\n%q", r.stdout)
	}
}

func TestHumanOutputIsSafe(t *testing.T) {
	evil := "\x1b]0;pwned\x07\x1b[2Jhello\u202e"
	opt := fakeagent.Option{ID: "ok", Name: "Yes\x1b[31m", Kind: "allow_once"}
	script := &fakeagent.Script{Name: "agent\x1b[5m", Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Thought(evil)),
		fakeagent.Say(fakeagent.ToolCall("t\x1b1", "ti\x1b[1mtle", "exe\x07cute")),
		fakeagent.Ask(fakeagent.PermissionParams("t\x1b1", "ti\x1b[1mtle", "exe\x07cute", opt)),
		fakeagent.Say(fakeagent.Plan("step\x1b[0m")),
		fakeagent.Say(fakeagent.Text(evil)),
	}}}}
	r := runWith(t, script, "", "--permission", "allow", "-p", "x")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if strings.ContainsAny(r.stdout, "\x1b\x07\u202e") {
		t.Errorf("agent control characters reached the terminal:\n%q", r.stdout)
	}
	if !strings.Contains(r.stdout, "hello") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}

func TestTimeout(t *testing.T) {
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("working")),
		{WaitCancel: true},
	}}}}
	r := runWith(t, script, "", "--json", "--timeout", "100ms", "-p", "x", "-p", "y")
	if r.code != 1 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	res := ofType(events(t, r.stdout), "result")
	if len(res) != 2 || res[0].StopReason != "cancelled" || !strings.Contains(res[0].Error, "timeout") {
		t.Errorf("results %+v (both turns run, each times out)", res)
	}
	if !strings.Contains(r.stderr, "timed out after 100ms") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestOptionsReachAgent(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(t.TempDir(), "record.jsonl")
	stderrFile := filepath.Join(t.TempDir(), "agent.log")
	target := filepath.Join(dir, "out.txt")
	write, _ := json.Marshal(map[string]string{"path": target, "content": "written by the agent"})
	script := func() *fakeagent.Script {
		return &fakeagent.Script{
			RecordFile:       record,
			StderrLines:      []string{"agent says hi"},
			NewSessionResult: json.RawMessage(`{"modes":{"currentModeId":"default","availableModes":[{"id":"default","name":"Default"},{"id":"review","name":"Review"}]}}`),
			Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
				{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: write}},
				fakeagent.Say(fakeagent.Text("done")),
			}}},
		}
	}
	r := runWith(t, script(), "", "--json", "--cwd", dir, "--mode", "review", "--presentation", "--fs", "--stderr", stderrFile, "-p", "write it")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "written by the agent" {
		t.Errorf("--fs write: %q, %v", b, err)
	}
	if b, err := os.ReadFile(stderrFile); err != nil || !strings.Contains(string(b), "agent says hi") {
		t.Errorf("--stderr file: %q, %v", b, err)
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		switch m.Method {
		case "initialize":
			var p struct {
				ClientCapabilities struct {
					FS   map[string]bool `json:"fs"`
					Meta struct {
						JetBrains *struct{ Air json.RawMessage } `json:"jetbrains"`
					} `json:"_meta"`
				} `json:"clientCapabilities"`
			}
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatal(err)
			}
			if !p.ClientCapabilities.FS["readTextFile"] || !p.ClientCapabilities.FS["writeTextFile"] || p.ClientCapabilities.Meta.JetBrains == nil {
				t.Errorf("initialize %s: want fs read+write and the presentation declaration", m.Params)
			}
		case "session/new":
			var p struct{ Cwd string }
			if err := json.Unmarshal(m.Params, &p); err != nil || p.Cwd != dir {
				t.Errorf("session/new %s: want cwd %s", m.Params, dir)
			}
		}
	}
	if n := countMethod(msgs, "session/set_mode"); n != 1 || !strings.Contains(string(msgs[indexOf(msgs, "session/set_mode")].Params), `"review"`) {
		t.Errorf("session/set_mode count %d", n)
	}

	// Plan mode refuses the write even with --fs. The agent keeps its
	// record beside: under plan mode's kernel layer, only what --writable
	// adds outside the project is writable to it.
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	r = runWith(t, script(), "", "--json", "--cwd", dir, "--fs", "--permission", "plan", "--writable", filepath.Dir(record), "-p", "write it")
	if r.code != 0 {
		t.Fatalf("plan: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("plan mode let the write through: %v", err)
	}
}

func TestParseToolOutput(t *testing.T) {
	for arg, want := range map[string]int{"all": -1, "0": 0, "12": 12} {
		got, err := parseArgs([]string{"--tool-output", arg}, io.Discard, false)
		if err != nil || got.toolOutput != want {
			t.Errorf("--tool-output %s: %d %v", arg, got.toolOutput, err)
		}
	}
	if _, err := parseArgs([]string{"--tool-output", "-2"}, io.Discard, false); err == nil || !strings.Contains(err.Error(), "want a number of lines, or all") {
		t.Errorf("--tool-output -2: %v", err)
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		terminal bool
		want     config
	}{
		{nil, true, config{permission: "ask", elicit: "ask", startTimeout: defaultStartTimeout}},
		{nil, false, config{permission: "reject", noOneToAsk: true, startTimeout: defaultStartTimeout, elicit: "decline", elicitAuto: true}},
		{[]string{"--permission", "plan", "-p", "a", "--prompt", "b", "-p", "c"}, true, config{permission: "plan", startTimeout: defaultStartTimeout, elicit: "ask", prompts: []string{"a", "b", "c"}}},
		{[]string{"--json", "--fs", "--presentation", "--timeout", "1m", "--mode", "m", "--stderr", "-", "--", "npx", "-y", "agent"}, false,
			config{permission: "reject", noOneToAsk: true, startTimeout: defaultStartTimeout, elicit: "decline", elicitAuto: true, json: true, fs: true, presentation: true, timeout: time.Minute, mode: "m", stderrPath: "-", agent: []string{"npx", "-y", "agent"}}},
		{[]string{"--json"}, true, config{permission: "reject", noOneToAsk: true, json: true, startTimeout: defaultStartTimeout, elicit: "decline", elicitAuto: true}},
		{[]string{"--non-interactive-permissions", "fail", "--quiet"}, false, config{permission: "reject", noOneToAsk: true, nonInteractive: "fail", quiet: true, startTimeout: defaultStartTimeout, elicit: "decline", elicitAuto: true}},
		{[]string{"-permission=allow", "my-agent", "--its-flag"}, false, config{permission: "allow", startTimeout: defaultStartTimeout, elicit: "decline", elicitAuto: true, agent: []string{"my-agent", "--its-flag"}}},
		{[]string{"--writable", "/state", "--writable", "/tmp/x"}, false, config{permission: "reject", noOneToAsk: true, startTimeout: defaultStartTimeout, elicit: "decline", elicitAuto: true, writable: []string{"/state", "/tmp/x"}}},
	} {
		got, err := parseArgs(tc.args, io.Discard, tc.terminal)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		tc.want.toolOutput = render.DefaultToolOutput
		file, err := agents.Load()
		if err != nil {
			t.Fatal(err)
		}
		// The config file, but for parseArgs' registry use (registryagents_test.go tests it).
		if got.file.Path() != file.Path() || !reflect.DeepEqual(got.file.Defaults, file.Defaults) || !reflect.DeepEqual(got.file.Agents, file.Agents) {
			t.Errorf("%q: the config file is not the one read: %+v", tc.args, got.file)
		}
		tc.want.file = got.file
		if tc.want.nonInteractive == "" {
			tc.want.nonInteractive = "deny"
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q (terminal %v):\n got %+v\nwant %+v", tc.args, tc.terminal, got, tc.want)
		}
	}
}

// indexOf is the index of the first message of method, -1 for none.
func indexOf(msgs []fakeagent.Message, method string) int {
	for i, m := range msgs {
		if m.Method == method {
			return i
		}
	}
	return -1
}

// --writable confines the agent: its own command cannot write to --cwd,
// while acphost's --fs writes for it still land.
func TestWritableConfinesTheAgent(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	dir, stateDir := t.TempDir(), t.TempDir()
	target, direct := filepath.Join(dir, "out.txt"), filepath.Join(dir, "direct.txt")
	write, _ := json.Marshal(map[string]string{"path": target, "content": "through the host"})
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Run: []string{"sh", "-c", "echo x > " + direct}},
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: write}},
		fakeagent.Say(fakeagent.Text("done")),
	}}}}
	r := runWith(t, script, "", "--json", "--cwd", dir, "--fs", "--writable", stateDir, "-p", "write it")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(direct); !os.IsNotExist(err) {
		t.Errorf("the confined agent wrote to --cwd itself: %v", err)
	}
	if !strings.Contains(r.stdout, `"status":"failed"`) || !strings.Contains(r.stdout, "Permission denied") {
		t.Errorf("the agent's command did not fail for want of permission:\n%s", r.stdout)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("acphost wrote to --cwd for a confined agent, which may not write there itself: %v", err)
	}
}
