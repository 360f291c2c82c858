package main

// Tests of what a new user meets: help, version, flag errors, named
// agents and the config file, the session store and --resume. Each drives
// the built binary (see main_test.go).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
)

// runIn runs acphost to the end in dir with extra environment and the
// given stdin.
func runIn(t *testing.T, dir string, extra []string, script *fakeagent.Script, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(env(t, script), extra...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(readTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("acphost %v did not exit; stdout:\n%s\nstderr:\n%s", args, out.String(), errb.String())
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return r
}

// isolated returns environment that gives acphost a config file and
// session store of its own, in fresh directories.
func isolated(t *testing.T) (extra []string, configFile, stateDir string) {
	dir := t.TempDir()
	configFile = filepath.Join(dir, "config", "acphost", "config.json")
	stateDir = filepath.Join(dir, "state")
	return []string{"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_STATE_HOME=" + stateDir}, configFile, filepath.Join(stateDir, "acphost")
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := runWith(t, nil, "", args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "acphost ") || !strings.Contains(r.stdout, "ACP protocol version 1") || r.stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

// A bad flag is named as typed, once, with a pointer to --help, and no
// usage dump.
func TestFlagErrorsSaidOnce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "acphost: unknown flag --bogus\n"},
		{[]string{"-x"}, "acphost: unknown flag -x\n"},
		{[]string{"--timeout", "soon"}, "acphost: --timeout \"soon\": parse error\n"},
		{[]string{"--prompt"}, "acphost: flag --prompt needs a value\n"},
		{[]string{"--agent", "nosuch"}, "acphost: --agent nosuch: no such agent; known: "},
	} {
		r := runWith(t, nil, "", tc.args...)
		if r.code != exitUsage || r.stdout != "" || !strings.HasPrefix(r.stderr, tc.want) ||
			!strings.HasSuffix(r.stderr, "Run 'acphost --help' for usage.\n") || strings.Count(r.stderr, "\n") != 2 {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant it to start %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}
}

var twoModes = json.RawMessage(`{"modes":{"currentModeId":"default","availableModes":[
	{"id":"default","name":"Default","description":"asks before edits"},{"id":"review","name":"Review"}]}}`)

func TestModeBogusNamesTheModes(t *testing.T) {
	script := &fakeagent.Script{NewSessionResult: twoModes}
	r := runWith(t, script, "", "--mode", "bogus", "-p", "x")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--mode bogus: the agent has no such mode; its modes: default (Default), review (Review)") {
		t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "✓") {
		t.Errorf("a turn ran:\n%s", r.stdout)
	}
	// The header names the current mode, with what it means.
	r = runWith(t, script, "", "--mode", "review", "-p", "x")
	if r.code != 0 || !strings.Contains(r.stdout, " · mode: review (Review) · ") {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runWith(t, script, "", "-p", "x")
	if !strings.Contains(r.stdout, " · mode: default (asks before edits) · ") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}

// /dev/null is a character device but not a terminal: the default policy
// is reject, and nothing is asked.
func TestDevNullIsNotATerminal(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Skip(err)
	}
	defer devnull.Close()
	cmd := exec.Command(binPath, "-p", "list files")
	cmd.Env = env(t, nil)
	cmd.Stdin = devnull
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v; stdout:\n%s", err, out)
	}
	if !strings.Contains(string(out), "permission: reject") || strings.Contains(string(out), "choose 1-3") || !strings.Contains(string(out), "picked reject") {
		t.Errorf("stdout:\n%s", out)
	}
}

// After a rejection (by policy or plan mode) the tool line says so.
func TestRejectedToolIsNotTicked(t *testing.T) {
	for policy, why := range map[string]string{"reject": "rejected", "plan": "rejected by plan mode"} {
		r := runWith(t, nil, "", "--permission", policy, "-p", "list files")
		if r.code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		if strings.Contains(r.stdout, "✓ execute ls") || !strings.Contains(r.stdout, "✗ execute ls ("+why+")\n") {
			t.Errorf("--permission %s: stdout:\n%s", policy, r.stdout)
		}
	}
	r := runWith(t, nil, "", "--permission", "allow", "-p", "list files")
	if !strings.Contains(r.stdout, "✓ execute ls\n") {
		t.Errorf("allowed: stdout:\n%s", r.stdout)
	}
}

// "Always allow" is remembered: the second identical request is answered
// without asking, and the screen says why.
func TestAlwaysAllowRemembered(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script := fakeagent.Demo()
	script.RecordFile = record
	r := runWith(t, &script, "2\n", "--permission", "ask", "-p", "one", "-p", "two", "-p", "three")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stdout, "choose 1-3"); n != 1 {
		t.Errorf("asked %d times, want once:\n%s", n, r.stdout)
	}
	if n := strings.Count(r.stdout, "picked allow-always"); n != 3 {
		t.Errorf("%d turns got allow-always, want 3:\n%s", n, r.stdout)
	}
	for _, want := range []string{
		`remembered: later "ls" (execute) requests in this session are allowed without asking`,
		`→ Always allow [allow_always] · remembered: you chose "always" for this tool earlier`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	for _, m := range msgs {
		if m.Method == "" && strings.Contains(string(m.Result), `"allow-always"`) {
			answers++
		}
	}
	if answers != 3 {
		t.Errorf("the agent got %d allow-always answers, want 3", answers)
	}
}

// --timeout applies to each turn, and the message says whether later
// prompts still run.
func TestTimeoutSaysWhatRunsNext(t *testing.T) {
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{WaitCancel: true}}}}}
	r := runWith(t, script, "", "--timeout", "100ms", "-p", "x", "-p", "y", "-p", "z")
	if r.code != 1 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"the turn timed out after 100ms (--timeout applies to each turn); the 2 prompts left still run, each with the same limit",
		"the turn timed out after 100ms (--timeout applies to each turn); the next prompt runs",
		"the turn timed out after 100ms (--timeout applies to each turn); that was the last prompt; the exit status will be 1",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// A program that is not an ACP agent: the error names each thing once.
func TestNonACPAgentErrorSaidOnce(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	// Answers the first request (initialize) with -32601, as a JSON-RPC
	// server that is not an ACP agent would.
	prog := `read l; id=$(echo "$l" | sed 's/.*"id":\([0-9]*\).*/\1/'); ` +
		`echo "{\"jsonrpc\":\"2.0\",\"id\":$id,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}"; cat >/dev/null`
	r := runWith(t, nil, "", "-p", "x", "--", sh, "-c", prog)
	if r.code != 1 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	var line string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "could not start") {
			line = l
		}
	}
	if line == "" || strings.Count(line, "acphost") != 1 || strings.Count(line, "initialize") != 1 || !strings.Contains(line, "-32601") {
		t.Errorf("the error stutters or is missing: %q\nstderr:\n%s", line, r.stderr)
	}
}

// fakeAgentDef is a config-file agent that runs this binary as the fake
// agent playing script (the script travels in the agent's env).
func fakeAgentDef(t *testing.T, script fakeagent.Script, mode string) map[string]any {
	t.Helper()
	path, args, env, err := fakeagent.Command(script)
	if err != nil {
		t.Fatal(err)
	}
	envMap := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		envMap[k] = v
	}
	// The fake agent is the test binary's child acphost: point it at the
	// acphost binary rather than the test binary.
	_ = path
	def := map[string]any{"command": append([]string{binPath}, args...), "env": envMap}
	if mode != "" {
		def["mode"] = mode
	}
	return def
}

// Named agents come from the built-ins and the config file; the file's
// defaults apply unless a flag says otherwise.
func TestNamedAgentsAndConfigFile(t *testing.T) {
	extra, configFile, _ := isolated(t)
	script := fakeagent.Script{Name: "configured", NewSessionResult: twoModes,
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Ask(fakeagent.PermissionParams("t1", "ls", "execute")),
			fakeagent.Say(fakeagent.Text("got {{answer}}"))}}}}
	writeJSON(t, configFile, map[string]any{
		"defaults": map[string]any{"agent": "mine", "permission": "allow"},
		"agents": map[string]any{
			"mine":   fakeAgentDef(t, script, "review"),
			"claude": map[string]any{"command": []string{"my-claude", "--acp"}},
		},
	})

	r := runIn(t, t.TempDir(), extra, nil, "", "agents")
	if r.code != 0 {
		t.Fatalf("agents: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"claude    my-claude --acp", "gemini    npx -y @google/gemini-cli --acp", "opencode  npx -y opencode-ai acp",
		"codex     npx -y @agentclientprotocol/codex-acp", "demo", "default agent: mine", configFile} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("acphost agents lacks %q:\n%s", want, r.stdout)
		}
	}

	// The default agent, its mode and the default permission.
	r = runIn(t, t.TempDir(), extra, nil, "", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "acphost · configured") || !strings.Contains(r.stdout, "mode: review") ||
		!strings.Contains(r.stdout, "permission: allow") || !strings.Contains(r.stdout, "got allow") ||
		!regexp.MustCompile(` · containment: (cgroup|namespace|group)\b`).MatchString(r.stdout) {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "starting agent mine") {
		t.Errorf("no starting note:\n%s", r.stderr)
	}
	// Flags win over the file.
	r = runIn(t, t.TempDir(), extra, nil, "", "--permission", "reject", "--mode", "default", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "mode: default") || !strings.Contains(r.stdout, "got reject") {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, t.TempDir(), extra, nil, "", "--agent", "demo", "--permission", "allow", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "(built-in demo)") {
		t.Errorf("--agent demo: exit %d; stdout:\n%s", r.code, r.stdout)
	}
	// A broken file is a usage error naming it.
	if err := os.WriteFile(configFile, []byte(`{"agents": {"x": {}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, t.TempDir(), extra, nil, "", "-p", "hi")
	if r.code != exitUsage || !strings.Contains(r.stderr, configFile) {
		t.Errorf("broken config: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

func TestStartTimeout(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	r := runWith(t, nil, "", "--start-timeout", "300ms", "-p", "x", "--", sh, "-c", "cat >/dev/null")
	if r.code != 1 || !strings.Contains(r.stderr, "acphost: starting agent sh…") ||
		!strings.Contains(r.stderr, "the agent did not start within 300ms (--start-timeout)") {
		t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

// Sessions are recorded, listed, continued with --resume (the history
// replayed through session/load, dimmed) and forgotten with sessions rm.
func TestSessionsAndResume(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script := &fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       filepath.Join(t.TempDir(), "history.json"),
		RecordFile:        record,
		SessionID:         "sess-abc",
		Turns: []fakeagent.Turn{
			{Prompt: "first", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer one"))}},
			{Prompt: "second", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer two"))}},
		},
	}
	r := runIn(t, dir, extra, script, "", "-p", "first")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}

	r = runIn(t, dir, extra, nil, "", "sessions", "--json")
	var recs []state.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("sessions --json: %v: %s", err, r.stdout)
	}
	if rec := recs[0]; rec.ID != "sess-abc" || rec.Agent != agents.Demo || rec.Cwd != dir || rec.LastUsed.IsZero() {
		t.Errorf("record %+v", rec)
	}
	r = runIn(t, dir, extra, nil, "", "sessions")
	if !strings.Contains(r.stdout, "sess-abc") || !strings.Contains(r.stdout, dir) {
		t.Errorf("sessions:\n%s", r.stdout)
	}

	// The process is gone; --resume last starts the agent again and
	// loads the session.
	r = runIn(t, dir, extra, script, "", "--resume", "last", "-p", "second")
	if r.code != 0 {
		t.Fatalf("--resume: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"continuing session sess-abc\n", "answer one", "end of the replayed history", "session loaded", "answer two"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--resume stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	if n := countMethod(msgs, "session/load"); n != 1 {
		t.Errorf("%d session/load, want 1", n)
	}
	// Resuming elsewhere finds nothing for "last"; by id it works.
	if r := runIn(t, t.TempDir(), extra, script, "", "--resume", "last", "-p", "x"); r.code != exitUsage || !strings.Contains(r.stderr, "no session recorded in") {
		t.Errorf("--resume last elsewhere: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if r := runIn(t, t.TempDir(), extra, script, "", "--resume", "sess-a", "-p", "second"); r.code != 0 || !strings.Contains(r.stdout, "answer two") {
		t.Errorf("--resume by prefix: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, dir, extra, nil, "", "sessions", "rm", "sess-abc")
	if r.code != 0 || !strings.Contains(r.stdout, "forgot session sess-abc") {
		t.Errorf("rm: exit %d; stdout %s; stderr %s", r.code, r.stdout, r.stderr)
	}
	if r := runIn(t, dir, extra, nil, "", "sessions", "--json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("after rm: %s", r.stdout)
	}
}

// An agent that offers neither load nor resume cannot be continued; the
// error says so.
func TestResumeUnsupported(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{} // the built-in demo loads its sessions: this agent does neither
	if r := runIn(t, dir, extra, script, "", "--permission", "allow", "-p", "x"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	r := runIn(t, dir, extra, script, "", "--resume", "last", "-p", "y")
	if r.code != 1 || !strings.Contains(r.stderr, "the agent offers neither session/load nor session/resume") {
		t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

// envStoreWriter makes the test binary a child that writes records.
const envStoreWriter = "ACPHOST_TEST_STORE_WRITER"

// storeWriter writes N records named by its prefix, one update each.
func storeWriter() int {
	prefix, nStr, _ := strings.Cut(os.Getenv(envStoreWriter), ":")
	n, _ := strconv.Atoi(nStr)
	st, err := state.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := range n {
		if err := st.Put(state.Record{ID: fmt.Sprintf("%s-%d", prefix, i), Agent: "w", Cwd: "/", LastUsed: time.Now()}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// Two processes writing the store at once lose no record.
func TestStoreConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 2, 150
	var wg sync.WaitGroup
	errs := make([]error, writers)
	outs := make([][]byte, writers)
	for w := range writers {
		wg.Go(func() {
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), state.EnvDir+"="+dir, fmt.Sprintf("%s=w%d:%d", envStoreWriter, w, each))
			outs[w], errs[w] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for w := range writers {
		if errs[w] != nil {
			t.Fatalf("writer %d: %v: %s", w, errs[w], outs[w])
		}
	}
	recs, err := (&state.Store{Dir: dir}).List()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.ID] = true
	}
	if len(seen) != writers*each {
		t.Errorf("%d records, want %d: records were lost", len(seen), writers*each)
	}
	// No temporary file is left behind.
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestStateDirFollowsXDG(t *testing.T) {
	if isWindowsOrDarwin() {
		t.Skip("the XDG rule is for the other systems")
	}
	t.Setenv(state.EnvDir, "")
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if d, _ := state.Dir(); d != "/x/state/acphost" {
		t.Errorf("XDG_STATE_HOME: %s", d)
	}
	t.Setenv("XDG_STATE_HOME", "relative/is/ignored")
	t.Setenv("HOME", "/home/u")
	if d, _ := state.Dir(); d != "/home/u/.local/state/acphost" {
		t.Errorf("fallback: %s", d)
	}
}

func isWindowsOrDarwin() bool { return runtime.GOOS == "windows" || runtime.GOOS == "darwin" }
