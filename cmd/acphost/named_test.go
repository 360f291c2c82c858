package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/acphost/acphost/cmd/acphost/internal/sessions"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
)

// jsonLines decodes --json output, every line.
func jsonLines(t *testing.T, out string) []jsonLine {
	t.Helper()
	var ls []jsonLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		ls = append(ls, decodeLine(t, l))
	}
	return ls
}

// storeRecords is acphost sessions --json.
func storeRecords(t *testing.T, dir string, extra []string) []state.Record {
	t.Helper()
	r := runIn(t, dir, extra, nil, "", "sessions", "--json")
	var recs []state.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("sessions --json: %v\n%s", err, r.stdout)
	}
	return recs
}

// TestNamedSessionIsSharedAcrossRuns: two runs of -s NAME in one
// directory share one session of the built-in demo agent (the second
// loads it, its history replayed, and opens no other); every --json line
// names the session by id and name; another name is another session.
func TestNamedSessionIsSharedAcrossRuns(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	first := runIn(t, dir, extra, nil, "", "-s", "fix", "--permission", "allow", "--json", "-p", "one")
	if first.code != 0 {
		t.Fatalf("first run: exit %d\n%s", first.code, first.stderr)
	}
	lines := jsonLines(t, first.stdout)
	id := lines[0].SessionID
	if !strings.HasPrefix(id, "demo-") {
		t.Fatalf("first line %+v names no session", lines[0])
	}
	for _, l := range lines {
		if l.SessionID != id || l.Session != "fix" {
			t.Errorf("%s line: sessionId %q, session %q; want %s, fix", l.Type, l.SessionID, l.Session, id)
		}
	}
	if last := lines[len(lines)-1]; last.Type != "result" {
		t.Errorf("last line %s, want the result", last.Type)
	}
	second := runIn(t, dir, extra, nil, "", "-s", "fix", "--permission", "allow", "-p", "two")
	if second.code != 0 {
		t.Fatalf("second run: exit %d\n%s\n%s", second.code, second.stdout, second.stderr)
	}
	for _, want := range []string{"continuing session " + id, "› one", "session loaded", "session fix (" + id + ")", "› two"} {
		if !strings.Contains(second.stdout, want) {
			t.Errorf("second run lacks %q:\n%s", want, second.stdout)
		}
	}
	other := runIn(t, dir, extra, nil, "", "-s", "other", "--json", "-p", "three")
	if l := jsonLines(t, other.stdout)[0]; other.code != 0 || l.SessionID == id || l.Session != "other" {
		t.Errorf("-s other: exit %d, first line %+v; want a session of its own", other.code, l)
	}
	recs := storeRecords(t, dir, extra)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.ID == id && r.Name != "fix" {
			t.Errorf("record %s named %q", r.ID, r.Name)
		}
	}
	// In another directory the name is free: a new session.
	elsewhere := runIn(t, t.TempDir(), extra, nil, "", "-s", "fix", "--json", "-p", "four")
	if l := jsonLines(t, elsewhere.stdout)[0]; elsewhere.code != 0 || l.SessionID == id {
		t.Errorf("-s fix elsewhere: exit %d, %+v; want a new session", elsewhere.code, l)
	}
}

// The sessions subcommands take a name wherever they take an id.
func TestSessionsCommandsTakeNames(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	if r := runIn(t, dir, extra, nil, "", "-s", "named-one", "--permission", "allow", "-p", "hello"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	id := storeRecords(t, dir, extra)[0].ID
	list := runIn(t, dir, extra, nil, "", "sessions")
	if !strings.Contains(list.stdout, "NAME") || !strings.Contains(list.stdout, "named-one") {
		t.Errorf("sessions lists no name:\n%s", list.stdout)
	}
	show := runIn(t, dir, extra, nil, "", "sessions", "show", "named-one")
	if show.code != 0 || !strings.Contains(show.stdout, id) || !regexp.MustCompile(`(?m)^name +named-one$`).MatchString(show.stdout) {
		t.Errorf("show: exit %d\n%s%s", show.code, show.stdout, show.stderr)
	}
	hist := runIn(t, dir, extra, nil, "", "sessions", "history", "named-one", "--json")
	var turns []sessions.HistoryTurn
	if err := json.Unmarshal([]byte(hist.stdout), &turns); err != nil || len(turns) != 1 || turns[0].Prompt != "hello" {
		t.Errorf("history: %v %s%s", err, hist.stdout, hist.stderr)
	}
	exp := runIn(t, dir, extra, nil, "", "sessions", "export", "named-one")
	var doc sessions.ExportDoc
	if err := json.Unmarshal([]byte(exp.stdout), &doc); err != nil || doc.Record.ID != id || doc.Record.Name != "named-one" {
		t.Errorf("export: %v %s", err, exp.stdout)
	}
	if r := runIn(t, t.TempDir(), extra, nil, "", "sessions", "show", "named-one"); r.code == 0 || !strings.Contains(r.stderr, dir) {
		t.Errorf("show from another directory: exit %d, %s; want it refused, saying where the session is", r.code, r.stderr)
	}
	rm := runIn(t, dir, extra, nil, "", "sessions", "rm", "named-one")
	if rm.code != 0 || !strings.Contains(rm.stdout, "forgot session named-one ("+id+")") {
		t.Errorf("rm: exit %d\n%s%s", rm.code, rm.stdout, rm.stderr)
	}
	if recs := storeRecords(t, dir, extra); len(recs) != 0 {
		t.Errorf("records after rm: %+v", recs)
	}
}

// --resume last, and a name, continue a session of the built-in demo
// agent (it loads its sessions now).
func TestResumeLastWorksWithTheDemoAgent(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	if r := runIn(t, dir, extra, nil, "", "--permission", "allow", "-p", "one"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	r := runIn(t, dir, extra, nil, "", "--resume", "last", "--permission", "allow", "-p", "two")
	if r.code != 0 || !strings.Contains(r.stdout, "session loaded") || !strings.Contains(r.stdout, "› one") {
		t.Errorf("--resume last: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// An agent that can neither load nor resume a session fails the second
// run of a name, saying so, and opens no session in its place.
func TestNamedSessionOfAnAgentThatCannotContinue(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{SessionID: "once"} // no loadSession, no resume
	if r := runIn(t, dir, extra, script, "", "-s", "x", "-p", "one"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	script.RecordFile = filepath.Join(t.TempDir(), "record.jsonl")
	r := runIn(t, dir, extra, script, "", "-s", "x", "-p", "two")
	if r.code != exitFailed || !strings.Contains(r.stderr, "neither session/load nor session/resume") || !strings.Contains(r.stderr, "no new session was started") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	msgs, err := fakeagent.ReadRecord(script.RecordFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := countMethod(msgs, "session/new") + countMethod(msgs, "session/prompt"); n != 0 {
		t.Errorf("%d session/new or session/prompt sent, want none", n)
	}
}

// Hostile names are refused before anything runs or is recorded.
func TestHostileSessionNamesAreRefused(t *testing.T) {
	extra, _, stateDir := isolated(t)
	for _, args := range [][]string{
		{"-s", "../../etc/passwd"}, {"-s", "a/b"}, {"--session", `a\b`}, {"-s", "x\x1b[2Jy"}, {"-s", "x\ny"},
		{"-s", "a\u202eb"}, {"-s", "last"}, {"-s", ".hidden"}, {"-s", "a b"}, {"-s", strings.Repeat("n", 101)},
		{"--worktree=../x"}, {"--worktree", "a/b"}, {"--worktree=x.lock"},
		{"-s", "x", "--resume", "last"}, {"-s", "x", "--no-store"}, {"--worktree", "--resume", "last"},
	} {
		r := runIn(t, t.TempDir(), extra, nil, "", append(args, "-p", "hi")...)
		if r.code != exitUsage || r.stdout != "" || strings.Contains(r.stderr, "\x1b[2J") || strings.Contains(r.stderr, "\u202e") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, "sessions.json")); !os.IsNotExist(err) {
		t.Errorf("a refused run recorded a session: %v", err)
	}
}

// gitRepo makes a repository with a commit and a subdirectory, and the
// environment git needs (an identity, no user configuration).
func gitRepo(t *testing.T) (repo string, env []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	env = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(t.TempDir(), "gitconfig"), "GIT_CONFIG_NOSYSTEM=1"}
	repo = filepath.Join(t.TempDir(), "proj")
	if err := os.MkdirAll(filepath.Join(repo, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "sub", "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-qm", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return repo, env
}

// TestWorktreeSession: --worktree runs the session in a new worktree on
// a branch of its own, recorded; -s NAME continues it there from the
// repository; sessions rm keeps a dirty worktree with a warning and
// removes a clean one with its branch; outside git it is refused.
func TestWorktreeSession(t *testing.T) {
	repo, genv := gitRepo(t)
	extra, _, _ := isolated(t)
	extra = append(extra, genv...)
	sub := filepath.Join(repo, "sub")
	r := runIn(t, sub, extra, nil, "", "-s", "feat", "--worktree", "--permission", "allow", "-p", "one")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	wt := filepath.Join(filepath.Dir(repo), "proj.worktrees", "feat")
	if !strings.Contains(r.stdout, "worktree acphost/feat") || !strings.Contains(r.stdout, "worktree "+wt+" on branch acphost/feat") {
		t.Errorf("the run does not say where it runs:\n%s", r.stdout)
	}
	recs := storeRecords(t, sub, extra)
	if len(recs) != 1 || recs[0].Worktree == nil || recs[0].Worktree.Path != wt || recs[0].Worktree.Branch != "acphost/feat" ||
		recs[0].Cwd != filepath.Join(wt, "sub") || recs[0].Worktree.From != sub || recs[0].Name != "feat" {
		t.Fatalf("record: %+v %+v", recs, recs[0].Worktree)
	}
	again := runIn(t, sub, extra, nil, "", "-s", "feat", "--permission", "allow", "-p", "two")
	if again.code != 0 || !strings.Contains(again.stdout, "session loaded") || !strings.Contains(again.stdout, "worktree acphost/feat") {
		t.Errorf("-s feat again: exit %d\n%s\n%s", again.code, again.stdout, again.stderr)
	}
	if n := len(storeRecords(t, sub, extra)); n != 1 {
		t.Errorf("%d records after continuing, want 1", n)
	}
	show := runIn(t, sub, extra, nil, "", "sessions", "show", "feat")
	if !regexp.MustCompile(`(?m)^worktree +` + regexp.QuoteMeta(wt) + ` on branch acphost/feat`).MatchString(show.stdout) {
		t.Errorf("show names no worktree:\n%s", show.stdout)
	}
	if again := runIn(t, sub, extra, nil, "", "-s", "feat2", "--worktree=feat", "-p", "x"); again.code != exitUsage || !strings.Contains(again.stderr, "already exists") {
		t.Errorf("a worktree name taken: exit %d, %s", again.code, again.stderr)
	}

	// Dirty: kept, with a warning; the session is forgotten.
	if err := os.WriteFile(filepath.Join(wt, "work.txt"), []byte("w\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rm := runIn(t, sub, extra, nil, "", "sessions", "rm", "feat")
	if rm.code != 0 || !strings.Contains(rm.stderr, "kept the worktree "+wt) || !strings.Contains(rm.stderr, "work.txt") {
		t.Errorf("rm of a dirty worktree: exit %d\n%s%s", rm.code, rm.stdout, rm.stderr)
	}
	if _, err := os.Stat(filepath.Join(wt, "work.txt")); err != nil {
		t.Errorf("the work is gone: %v", err)
	}

	// Clean: removed, and its branch with no commit of its own.
	if r := runIn(t, repo, extra, nil, "", "--worktree", "clean", "-p", "x"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	rm = runIn(t, repo, extra, nil, "", "sessions", "rm", "last")
	clean := filepath.Join(filepath.Dir(repo), "proj.worktrees", "clean")
	if rm.code != 0 || !strings.Contains(rm.stdout, "removed the worktree "+clean) || !strings.Contains(rm.stdout, "deleted the branch acphost/clean") {
		t.Errorf("rm of a clean worktree: exit %d\n%s%s", rm.code, rm.stdout, rm.stderr)
	}
	if _, err := os.Stat(clean); !os.IsNotExist(err) {
		t.Errorf("the clean worktree stays: %v", err)
	}
	branches, _ := exec.Command("git", "-C", repo, "branch", "--list", "acphost/*").Output()
	if got := strings.Fields(strings.ReplaceAll(string(branches), "+", "")); len(got) != 1 || got[0] != "acphost/feat" {
		t.Errorf("branches %q, want acphost/feat alone (the dirty worktree's)", got)
	}

	// Outside git: refused, clearly, and nothing recorded.
	plain := t.TempDir()
	r = runIn(t, plain, extra, nil, "", "--worktree", "-p", "x")
	if r.code != exitUsage || !strings.Contains(r.stderr, "not in a git work tree") {
		t.Errorf("--worktree outside git: exit %d, %s", r.code, r.stderr)
	}
}
