//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
)

// TestImportedControlPathIsNotDialled: an imported record is hostile, and
// its "control" member names the socket acphost cancel and --no-wait
// connect to and write to. A record must never bring one: the path is of
// the machine that exported it (or of whatever socket the file's author
// picked, e.g. one in the user's $XDG_RUNTIME_DIR). After an import,
// acphost cancel dials nothing, and export does not carry the path out.
func TestImportedControlPathIsNotDialled(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	// A socket of the user's own, in a private directory: askControl
	// accepts it.
	sockDir := filepath.Join(t.TempDir(), "other")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "some-daemon.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	doc, _ := json.Marshal(map[string]any{"version": 1, "transcript": []any{},
		"record": map[string]any{"id": "imp-c", "agent": "demo", "cwd": dir, "created": time.Now(), "lastUsed": time.Now(), "control": sock}})
	f := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(f, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runIn(t, dir, extra, nil, "", "sessions", "import", f); r.code != 0 {
		t.Fatalf("import: exit %d: %s", r.code, r.stderr)
	}
	if recs := records(t, dir, extra); len(recs) != 1 || recs[0].Control != "" {
		t.Errorf("the imported record keeps the control path it brought: %+v", recs)
	}
	r := runIn(t, dir, extra, nil, "", "cancel", "imp-c")
	if r.code != exitFailed || !strings.Contains(r.stderr, "no acphost process has session imp-c open") {
		t.Errorf("cancel of an imported session: exit %d; stderr %q", r.code, r.stderr)
	}
	// Had anything connected, it would wait in the backlog.
	_ = ln.(*net.UnixListener).SetDeadline(time.Now().Add(200 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Errorf("acphost cancel connected to the socket an imported record named")
	} else if ne := (net.Error)(nil); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatal(err)
	}
	if r := runIn(t, dir, extra, nil, "", "sessions", "export", "imp-c"); r.code != 0 || strings.Contains(r.stdout, `"control"`) {
		t.Errorf("export: exit %d, carries the control path out:\n%s", r.code, r.stdout)
	}
}

// TestNoWaitBackgroundReadsTheFlagsWhereTheyWereTyped: the background
// acphost parses the command line again. Run in the session's directory
// (--cwd) — which the agent writes — a relative --permission-policy there
// is the agent's own file: a policy.json it planted answers its
// permission requests. The background acphost must read the command line
// in the directory it was typed in.
func TestNoWaitBackgroundReadsTheFlagsWhereTheyWereTyped(t *testing.T) {
	extra, _, _ := isolated(t)
	user, proj := t.TempDir(), t.TempDir()
	writePolicy(t, user, `{"rules": [{"kind": "execute", "answer": "reject"}]}`)
	writePolicy(t, proj, `{"rules": [{"kind": "execute", "answer": "allow"}]}`) // planted by the agent
	script := &fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       filepath.Join(t.TempDir(), "history.json"),
		SessionID:         "bg-pol",
		Turns: []fakeagent.Turn{
			{Prompt: "first", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer one"))}},
			{Prompt: "second", Steps: []fakeagent.Step{fakeagent.Ask(fakeagent.PermissionParams("t1", "rm -rf ~", "execute")),
				fakeagent.Say(fakeagent.Text("got {{answer}}"))}},
		},
	}
	if r := runIn(t, proj, extra, script, "", "-p", "first"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	r := runIn(t, user, extra, script, "", "--resume", "bg-pol", "--cwd", proj, "--permission-policy", "policy.json", "-p", "second", "--no-wait")
	if r.code != 0 {
		t.Fatalf("--no-wait: exit %d; stdout %q; stderr %q", r.code, r.stdout, r.stderr)
	}
	logPath := backgroundRun(t, r)
	waitFor(t, "the background acphost to let go of the session", func() bool {
		recs := records(t, user, extra)
		return len(recs) == 1 && recs[0].PID == 0
	})
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(log); !strings.Contains(s, "got reject") {
		t.Errorf("the background acphost did not apply the user's policy (%s):\n%s", filepath.Join(user, "policy.json"), s)
	}
}

// TestNoWaitBackgroundLogsAreBounded: each background acphost a --no-wait
// starts writes a log in <state>/log; nothing removed them, so the
// directory grew by a file a run for ever. The oldest go as new ones come.
func TestNoWaitBackgroundLogsAreBounded(t *testing.T) {
	extra, _, stateDir := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       filepath.Join(t.TempDir(), "history.json"),
		SessionID:         "bg-log",
		Turns: []fakeagent.Turn{
			{Prompt: "first", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer one"))}},
			{Prompt: "second", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer two"))}},
		},
	}
	if r := runIn(t, dir, extra, script, "", "-p", "first"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	logDir := filepath.Join(stateDir, "log")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * state.MaxBackgroundLogs {
		name := filepath.Join(logDir, "20000101-"+strconv.Itoa(100000+i)+"-old.log")
		if err := os.WriteFile(name, []byte("old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	keep := filepath.Join(logDir, "notes.txt") // not a log: left alone
	if err := os.WriteFile(keep, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, dir, extra, script, "", "--resume", "bg-log", "-p", "second", "--no-wait")
	if r.code != 0 {
		t.Fatalf("--no-wait: exit %d; stdout %q; stderr %q", r.code, r.stdout, r.stderr)
	}
	logPath := backgroundRun(t, r)
	waitFor(t, "the background acphost to let go of the session", func() bool {
		recs := records(t, dir, extra)
		return len(recs) == 1 && recs[0].PID == 0
	})
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	logs := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			logs++
		}
	}
	if logs > state.MaxBackgroundLogs {
		t.Errorf("%d logs in %s, want at most %d", logs, logDir, state.MaxBackgroundLogs)
	}
	for _, p := range []string{logPath, keep, filepath.Join(logDir, "20000101-"+strconv.Itoa(100000+3*state.MaxBackgroundLogs-1)+"-old.log")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestSessionsListingShowsNoEscapes: a directory's name is not the user's
// to choose (a cloned repository's, an agent-made one), and the session
// store records it; acphost sessions, /sessions and sessions rm printed it
// raw, so an escape sequence in it reached the terminal.
func TestSessionsListingShowsNoEscapes(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := filepath.Join(t.TempDir(), "repo\x1b]0;owned\x07\x1b[2J")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := runIn(t, dir, extra, nil, "", "-p", "hi"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"sessions"}, {"sessions", "show", "last"}, {"sessions", "rm", "last"}} {
		r := runIn(t, dir, extra, nil, "", args...)
		if r.code != 0 || strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07") || !strings.Contains(r.stdout, "repo") {
			t.Errorf("%v: exit %d; output %q %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestNoWaitDoesNotOpenAnOpenSessionTwice: a chat whose control socket
// could not be made (here: the state directory's path is too long for a
// socket's) still has its session open, and says so in the store (its
// pid, no socket). --no-wait took "nobody answers" for "nobody has it"
// and started a second acphost on the same session.
func TestNoWaitDoesNotOpenAnOpenSessionTwice(t *testing.T) {
	root := t.TempDir()
	stateDir := filepath.Join(root, "state")
	// A chat that could not make its control socket: its run directory
	// was a file when it started (any path length is bound now, on
	// Linux); the file is gone by the time --no-wait runs.
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "run"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	extra := []string{"XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "ACPHOST_STATE_DIR=" + stateDir}
	dir := t.TempDir()
	b := startBG(t, dir, extra, slowScript("ctl-long"), "-p", "slow", "-p", "next")
	waitFor(t, "the running turn in the store", func() bool {
		recs := records(t, dir, extra)
		return len(recs) == 1 && !recs[0].TurnSince.IsZero() && recs[0].PID == b.cmd.Process.Pid
	})
	if rec := records(t, dir, extra)[0]; rec.Control != "" {
		t.Fatalf("the control socket was made (%s) although its directory is a file: the test's premise does not hold", rec.Control)
	}
	if err := os.Remove(filepath.Join(stateDir, "run")); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, dir, extra, nil, "", "--resume", "last", "-p", "queued one", "--no-wait")
	if m := regexp.MustCompile(`started acphost pid (\d+)`).FindStringSubmatch(r.stdout + r.stderr); m != nil {
		pid, _ := strconv.Atoi(m[1])
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if r.code != exitFailed || strings.Contains(r.stdout+r.stderr, "in the background") ||
		!strings.Contains(r.stderr, "pid "+strconv.Itoa(b.cmd.Process.Pid)) {
		t.Errorf("--no-wait on a session open in an acphost without a control socket: exit %d; stdout %q; stderr %q", r.code, r.stdout, r.stderr)
	}
	_ = b.cmd.Process.Kill()
}

// TestNoWaitNeverContinuesAnotherSession: the agent picks its session
// ids. One it called "last" was handed to the background acphost as
// --resume=last, which means the latest session in the directory: the
// prompt went to another session (of another agent, perhaps).
func TestNoWaitNeverContinuesAnotherSession(t *testing.T) {
	extra, _, _ := isolated(t)
	user, proj := t.TempDir(), t.TempDir()
	hostile := &fakeagent.Script{AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile: filepath.Join(t.TempDir(), "h1.json"), SessionID: "last",
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hostile"))}}}}
	other := &fakeagent.Script{AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile: filepath.Join(t.TempDir(), "h2.json"), SessionID: "other",
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("other session ran {{prompt}}"))}}}}
	if r := runIn(t, proj, extra, hostile, "", "-p", "first"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if r := runIn(t, user, extra, other, "", "-p", "mine"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	r := runIn(t, user, extra, other, "", "--resume", "las", "-p", "for the hostile one", "--no-wait")
	if m := regexp.MustCompile(`pid (\d+) .*\(log: ([^;)\s]+)`).FindStringSubmatch(r.stdout); m != nil {
		pid, _ := strconv.Atoi(m[1])
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		waitFor(t, "the background acphost to end", func() bool { return !state.ProcessAlive(pid) })
		log, _ := os.ReadFile(m[2])
		t.Fatalf("--no-wait started a background acphost for session \"last\"; its log:\n%s", log)
	}
	if r.code != exitFailed || !strings.Contains(r.stderr, `session "last"`) {
		t.Errorf("exit %d; stdout %q; stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestBackgroundLogIsBounded: a background acphost (the one a --no-wait
// starts) writes at most maxBackgroundLogBytes of output into its log,
// however much its agent says.
func TestBackgroundLogIsBounded(t *testing.T) {
	// The script travels in one environment variable (128 KiB at most):
	// 96 KiB a turn, and the last turn repeats, 110 turns (about 10 MiB).
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text(strings.Repeat("flood ", 96<<10/6) + "\n"))}}}}
	args := []string{"--stderr", "-"}
	for range 110 {
		args = append(args, "-p", "go")
	}
	extra, _, _ := isolated(t)
	r := runIn(t, t.TempDir(), append(extra, envDetached+"=1"), script, "", args...)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr tail:\n%s", r.code, tail(r.stderr, 500))
	}
	if n := len(r.stdout) + len(r.stderr); n > maxBackgroundLogBytes+4096 {
		t.Errorf("the background acphost wrote %d bytes, over its %d", n, maxBackgroundLogBytes)
	}
	if !strings.Contains(r.stdout+r.stderr, "log cut") {
		t.Errorf("the cut is not said")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestBackgroundMarkIsNotInherited: the agent of a background acphost
// (and whatever it runs) does not inherit the mark that makes an acphost
// a background one.
func TestBackgroundMarkIsNotInherited(t *testing.T) {
	extra, configFile, _ := isolated(t)
	_, args, env, err := fakeagent.Command(fakeagent.Script{}) // run here as the acphost binary itself
	if err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(t.TempDir(), "env")
	agentEnv := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		agentEnv[k] = v
	}
	writeJSON(t, configFile, map[string]any{"agents": map[string]any{"dump": map[string]any{
		"command": append([]string{"sh", "-c", `env > "$0"; exec "$@"`, dump, binPath}, args...),
		"env":     agentEnv,
	}}})
	r := runIn(t, t.TempDir(), append(extra, envDetached+"=1"), nil, "", "--agent", "dump", "-p", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), envDetached+"=") {
		t.Errorf("the agent inherited %s", envDetached)
	}
}
