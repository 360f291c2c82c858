//go:build unix

package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
)

// --no-wait hands a prompt to the chat that has the session open: it is
// shown there as queued, the command returns at once, and the chat's
// next turn runs it (before the -p prompts left).
func TestNoWaitQueuesIntoARunningChat(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	b := startBG(t, dir, extra, slowScript("ctl-q"), "-p", "slow", "-p", "next")
	waitTurn(t, dir, extra, b)
	r := runIn(t, dir, extra, nil, "", "--resume", "last", "-p", "queued one", "--no-wait")
	if r.code != 0 || !strings.Contains(r.stdout, "queued in session ctl-q") || !strings.Contains(r.stdout, "place 1 in its queue") {
		t.Fatalf("--no-wait: exit %d; stdout %q; stderr %q", r.code, r.stdout, r.stderr)
	}
	waitFor(t, "the queued line on the chat's screen", func() bool {
		return strings.Contains(b.out.String(), "queued (1, from acphost --no-wait): queued one")
	})
	if r := runIn(t, dir, extra, nil, "", "cancel"); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	b.wait(t)
	s := b.out.String()
	q, n := strings.Index(s, "queued prompt ran"), strings.Index(s, "next ran")
	if q < 0 || n < 0 || q > n {
		t.Errorf("the queued prompt did not run next:\n%s\nstderr:\n%s", s, b.errb.String())
	}
}

// With no acphost holding the session, --no-wait starts one in the
// background (its output in a log under the state directory) that loads
// the session, runs the prompt and exits.
func TestNoWaitStartsOneInTheBackground(t *testing.T) {
	extra, _, stateDir := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       filepath.Join(t.TempDir(), "history.json"),
		SessionID:         "bg-1",
		Turns: []fakeagent.Turn{
			{Prompt: "first", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer one"))}},
			{Prompt: "second", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer two"))}},
		},
	}
	if r := runIn(t, dir, extra, script, "", "-p", "first"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	r := runIn(t, dir, extra, script, "", "--resume", "last", "-p", "second", "--no-wait")
	if r.code != 0 || !strings.Contains(r.stdout, "started acphost pid") || !strings.Contains(r.stdout, "in the background") {
		t.Fatalf("--no-wait: exit %d; stdout %q; stderr %q", r.code, r.stdout, r.stderr)
	}
	logPath := backgroundRun(t, r)
	if !strings.HasPrefix(logPath, filepath.Join(stateDir, "log")+string(filepath.Separator)) {
		t.Errorf("log %s is not under %s/log", logPath, stateDir)
	}
	waitFor(t, "the background acphost to run the prompt and let go of the session", func() bool {
		recs := records(t, dir, extra)
		return len(recs) == 1 && recs[0].PID == 0
	})
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(log); !strings.Contains(s, "answer two") || !strings.Contains(s, "session loaded") {
		t.Errorf("log:\n%s", s)
	}
}

// --no-wait needs --resume and -p, and refuses a prompt over 1 MiB.
func TestNoWaitUsage(t *testing.T) {
	extra, _, _ := isolated(t)
	for _, args := range [][]string{{"-p", "x", "--no-wait"}, {"--resume", "last", "--no-wait"}} {
		if r := runIn(t, t.TempDir(), extra, nil, "", args...); r.code != exitUsage || !strings.Contains(r.stderr, "--no-wait queues prompts") {
			t.Errorf("%v: exit %d; stderr %q", args, r.code, r.stderr)
		}
	}
	// An argument that long cannot reach a process on Linux; parseArgs
	// and the control socket refuse it all the same.
	huge := strings.Repeat("x", control.MaxQueuedPrompt+1)
	if _, err := parseArgs([]string{"--resume", "last", "-p", huge, "--no-wait"}, io.Discard, false); err == nil || !strings.Contains(err.Error(), "over the 1 MiB") {
		t.Errorf("huge prompt: %v", err)
	}
	stateDir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := control.Listen(stateDir, func(control.Request) control.Reply {
		t.Error("a prompt over the bound was handled")
		return control.Reply{OK: true}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := control.Ask(s.Path, control.Request{Op: control.OpPrompt, Session: "s", Text: huge}); err == nil || !strings.Contains(err.Error(), "prompt over") {
		t.Errorf("huge prompt over the socket: %v", err)
	}
}

// TestNoWaitSaysWhatItDidInJSON: with --json, what --no-wait did is one
// JSON line (type background: the session, pid, prompts, log).
func TestNoWaitSaysWhatItDidInJSON(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       filepath.Join(t.TempDir(), "history.json"),
		SessionID:         "bg-json",
	}
	if r := runIn(t, dir, extra, script, "", "-p", "first"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	r := runIn(t, dir, extra, script, "", "--resume", "last", "-p", "second", "--no-wait", "--json")
	var ev struct {
		Type, SessionID, Log string
		PID, Prompts         int
	}
	if err := json.Unmarshal([]byte(r.stdout), &ev); r.code != 0 || err != nil {
		t.Fatalf("exit %d, %v; stdout %q; stderr %q", r.code, err, r.stdout, r.stderr)
	}
	t.Cleanup(func() { _ = syscall.Kill(ev.PID, syscall.SIGKILL) })
	if ev.Type != "background" || ev.SessionID != "bg-json" || ev.PID == 0 || ev.Prompts != 1 || ev.Log == "" {
		t.Errorf("event %+v", ev)
	}
	waitFor(t, "the background acphost to let go of the session", func() bool {
		recs := records(t, dir, extra)
		return len(recs) == 1 && recs[0].PID == 0
	})
}

// TestResumeRefusesASessionOpenElsewhere: --resume of a session another
// acphost has open (its control socket answers) is refused with how to
// reach it, so two processes never drive one session (and the first to
// exit never marks it released under the other).
func TestResumeRefusesASessionOpenElsewhere(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	b := startBG(t, dir, extra, slowScript("twice-1"), "-p", "slow", "-p", "next")
	waitTurn(t, dir, extra, b)
	r := runIn(t, dir, extra, slowScript("twice-1"), "", "--resume", "last", "-p", "next")
	if r.code == 0 || !strings.Contains(r.stderr, "is open in acphost pid "+strconv.Itoa(b.cmd.Process.Pid)) || !strings.Contains(r.stderr, "--no-wait") {
		t.Errorf("second --resume: exit %d; stderr %q", r.code, r.stderr)
	}
	if r := runIn(t, dir, extra, nil, "", "cancel"); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	b.wait(t)
}

// backgroundRun reads the pid and log a --no-wait that started a
// background acphost printed, and kills that acphost when the test ends.
func backgroundRun(t *testing.T, r result) (logPath string) {
	t.Helper()
	m := regexp.MustCompile(`pid (\d+) .*\(log: ([^;)\s]+)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no pid and log in %q", r.stdout)
	}
	pid, _ := strconv.Atoi(m[1])
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return m[2]
}

// TestResumeOfARecordWithoutSocketGoesOn: a record naming a live pid but
// no control socket (its acphost could not make one, or the pid is someone
// else's now) does not refuse --resume for ever: it warns and goes on.
func TestResumeOfARecordWithoutSocketGoesOn(t *testing.T) {
	extra, _, stateDir := isolated(t)
	dir := t.TempDir()
	st := &state.Store{Dir: stateDir}
	if err := st.Put(state.Record{ID: "nosock-1", Agent: agents.Demo, Cwd: dir, PID: os.Getpid(), LastUsed: time.Now()}); err != nil {
		t.Fatal(err)
	}
	script := &fakeagent.Script{AgentCapabilities: json.RawMessage(`{"loadSession":true}`)}
	r := runIn(t, dir, extra, script, "", "--resume", "nosock-1", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stderr, "has no control socket to ask; continuing it here") {
		t.Errorf("exit %d; stderr %q", r.code, r.stderr)
	}
}

// TestNoWaitLogDirIsPrivate: the background acphost's log directory is
// held to the store's rule: planted as a link, it is refused, and nothing
// is written where it points.
func TestNoWaitLogDirIsPrivate(t *testing.T) {
	extra, _, stateDir := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{AgentCapabilities: json.RawMessage(`{"loadSession":true}`), SessionID: "logdir-1"}
	if r := runIn(t, dir, extra, script, "", "-p", "first"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(stateDir, "log")); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, dir, extra, script, "", "--resume", "last", "-p", "second", "--no-wait")
	if r.code == 0 {
		t.Errorf("--no-wait wrote its log through a planted link; stdout %q", r.stdout)
	}
	if left, _ := os.ReadDir(elsewhere); len(left) > 0 {
		t.Errorf("%d file(s) written where the link points", len(left))
	}
}
