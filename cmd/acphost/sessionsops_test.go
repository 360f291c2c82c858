package main

// Tests of acphost sessions show, history, export, import and prune, and
// of the transcript they read. Each CLI test drives the built binary (see
// main_test.go) with a session store of its own.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/sessions"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
)

// The sessions subcommands' JSON documents, as the tests decode them.
type (
	showJSON    = sessions.ShowJSON
	historyTurn = sessions.HistoryTurn
	exportDoc   = sessions.ExportDoc
)

// historyScript is a two-turn agent that can load its sessions, with a
// tool call in the first turn and an escape sequence in the second answer.
func historyScript(t *testing.T) *fakeagent.Script {
	return &fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       filepath.Join(t.TempDir(), "history.json"),
		SessionID:         "sess-hist",
		Turns: []fakeagent.Turn{
			{Prompt: "first", Steps: []fakeagent.Step{
				fakeagent.Say(fakeagent.ToolCall("t1", "read notes.txt", "read")),
				fakeagent.Say(fakeagent.ToolUpdate("t1", "completed")),
				fakeagent.Say(fakeagent.Text("answer one")),
			}},
			{Prompt: "second", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer two \x1b]0;owned\x07\x1b[31mred"))}},
			{Prompt: "third", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer three"))}},
		},
	}
}

// A two-turn chat is in the session's history: both prompts, the tool
// call, both answers, oldest first, no escape sequence of the agent's
// reaching the terminal; show counts the turns; --limit and --json work.
func TestSessionsHistoryShowsTheTurns(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	r := runIn(t, dir, extra, historyScript(t), "first\nsecond\n")
	if r.code != 0 {
		t.Fatalf("chat: exit %d; stderr:\n%s", r.code, r.stderr)
	}

	r = runIn(t, dir, extra, nil, "", "sessions", "history", "last")
	if r.code != 0 {
		t.Fatalf("history: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	out := r.stdout
	order := []string{"turn 1", "> first", "✓ read notes.txt (read)", "answer one", "turn 2", "> second", "answer two"}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("history lacks %q (after byte %d), or out of order:\n%s", want, at, out)
		}
		at += i + len(want)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\a") {
		t.Errorf("an escape sequence reached the terminal:\n%q", out)
	}

	r = runIn(t, dir, extra, nil, "", "sessions", "history", "sess-hist", "--limit", "1")
	if r.code != 0 || strings.Contains(r.stdout, "> first") || !strings.Contains(r.stdout, "turn 2") || !strings.Contains(r.stdout, "> second") {
		t.Errorf("--limit 1: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, dir, extra, nil, "", "sessions", "history", "--json", "last")
	var ts []historyTurn
	if err := json.Unmarshal([]byte(r.stdout), &ts); err != nil || len(ts) != 2 {
		t.Fatalf("history --json: %v:\n%s", err, r.stdout)
	}
	if ts[0].Prompt != "first" || ts[0].Answer != "answer one" || len(ts[0].Tools) != 1 || ts[0].Tools[0].Status != "completed" ||
		ts[1].Prompt != "second" || ts[1].Stop != "end_turn" {
		t.Errorf("history --json: %+v", ts)
	}

	r = runIn(t, dir, extra, nil, "", "sessions", "show", "last")
	for _, want := range []string{"sess-hist", "demo", "built-in demo agent", dir, "2 turn(s)", "state       -"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runIn(t, dir, extra, nil, "", "sessions", "show", "--json", "last")
	var sj showJSON
	if err := json.Unmarshal([]byte(r.stdout), &sj); err != nil || sj.Record.ID != "sess-hist" || sj.Transcript.Turns != 2 || sj.Transcript.Bytes == 0 {
		t.Errorf("show --json: %v: %s", err, r.stdout)
	}
}

// --no-store records no transcript either.
func TestNoStoreKeepsNoTranscript(t *testing.T) {
	extra, _, stateDir := isolated(t)
	if r := runIn(t, t.TempDir(), extra, nil, "", "--no-store", "--permission", "allow", "-p", "x"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(stateDir, "transcripts")); err == nil {
		t.Errorf("--no-store wrote a transcript")
	}
}

// export, rm (which removes the transcript), import: the session and its
// history are back, and --resume continues it.
func TestSessionsExportImportRoundTrip(t *testing.T) {
	extra, _, stateDir := isolated(t)
	dir := t.TempDir()
	script := historyScript(t)
	if r := runIn(t, dir, extra, script, "", "-p", "first"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	file := filepath.Join(t.TempDir(), "s.json")
	r := runIn(t, dir, extra, nil, "", "sessions", "export", "last", "-o", file)
	if r.code != 0 || !strings.Contains(r.stdout, "exported session sess-hist (1 turn(s))") {
		t.Fatalf("export: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	stdout := runIn(t, dir, extra, nil, "", "sessions", "export", "sess-hist")
	b, err := os.ReadFile(file)
	if err != nil || stdout.stdout != string(b) {
		t.Errorf("export to stdout and to -o differ: %v\n%s\n%s", err, stdout.stdout, b)
	}
	var doc exportDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Version != 1 || doc.Record == nil || doc.Record.ID != "sess-hist" || len(doc.Transcript) == 0 {
		t.Fatalf("export: %v:\n%s", err, b)
	}
	transcripts, _ := filepath.Glob(filepath.Join(stateDir, "transcripts", "*.jsonl"))
	if len(transcripts) != 1 {
		t.Fatalf("transcripts: %v", transcripts)
	}

	if r := runIn(t, dir, extra, nil, "", "sessions", "rm", "sess-hist"); r.code != 0 {
		t.Fatalf("rm: %d %s", r.code, r.stderr)
	}
	if _, err := os.Lstat(transcripts[0]); err == nil {
		t.Errorf("sessions rm left the transcript behind")
	}
	r = runIn(t, dir, extra, nil, "", "sessions", "import", file)
	if r.code != 0 || !strings.Contains(r.stdout, "imported session sess-hist (demo, "+dir+", 1 turn(s))") {
		t.Fatalf("import: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runIn(t, dir, extra, nil, "", "sessions", "history", "last"); !strings.Contains(r.stdout, "> first") || !strings.Contains(r.stdout, "answer one") {
		t.Errorf("history after import:\n%s", r.stdout)
	}
	r = runIn(t, dir, extra, script, "", "--resume", "last", "-p", "second")
	if r.code != 0 || !strings.Contains(r.stdout, "session loaded") || !strings.Contains(r.stdout, "answer two") {
		t.Fatalf("--resume after import: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runIn(t, dir, extra, nil, "", "sessions", "history", "last"); !strings.Contains(r.stdout, "> first") || !strings.Contains(r.stdout, "> second") {
		t.Errorf("the resumed turn did not join the imported history:\n%s", r.stdout)
	}
	// From stdin, over the existing record, with --force.
	cmdIn := runIn(t, dir, extra, nil, string(b), "sessions", "import", "--force", "-")
	if cmdIn.code != 0 {
		t.Errorf("import --force -: exit %d: %s", cmdIn.code, cmdIn.stderr)
	}
	if r := runIn(t, dir, extra, nil, "", "sessions", "history", "last"); strings.Contains(r.stdout, "> second") {
		t.Errorf("--force did not replace the history:\n%s", r.stdout)
	}
}

// An imported file is hostile. Above all it must not choose what a later
// --resume runs: a record of a raw command is refused, a named agent's
// command is the configuration's whatever the file says, an agent the user
// does not have is refused by name. Oversized files, other versions,
// unknown fields, relative directories, bad ids and an id already recorded
// (without --force) are refused too, and nothing is recorded then.
func TestSessionsImportAttacks(t *testing.T) {
	extra, configFile, stateDir := isolated(t)
	mine := fakeagent.Script{Name: "configured-mine", SessionID: "m1",
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`), HistoryFile: filepath.Join(t.TempDir(), "h.json"),
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("mine answered"))}}}}
	writeJSON(t, configFile, map[string]any{"agents": map[string]any{"mine": fakeAgentDef(t, mine, "")}})
	dir := t.TempDir()
	pwned := filepath.Join(t.TempDir(), "pwned")
	planted := []string{"sh", "-c", "touch " + pwned}
	doc := func(rec map[string]any) string {
		b, err := json.Marshal(map[string]any{"version": 1, "record": rec, "transcript": []any{}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	rec := func(kv ...any) map[string]any {
		m := map[string]any{"id": "imp-1", "cwd": dir, "created": time.Now(), "lastUsed": time.Now()}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	importDoc := func(s string, args ...string) result {
		t.Helper()
		f := filepath.Join(t.TempDir(), "in.json")
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return runIn(t, dir, extra, nil, "", append([]string{"sessions", "import", f}, args...)...)
	}
	count := func() int {
		r := runIn(t, dir, extra, nil, "", "sessions", "--json")
		var recs []state.Record
		if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}

	refused := []struct {
		name, doc, want string
	}{
		{"planted command", doc(rec("command", planted)), "only sessions of named agents are imported"},
		{"unknown agent", doc(rec("agent", "evil-agent", "command", planted)), `agent "evil-agent" is neither built in nor in your config`},
		{"no agent", doc(rec()), "names no agent"},
		{"bad version", strings.Replace(doc(rec("agent", "demo")), `"version":1`, `"version":2`, 1), "export version 2: this acphost reads version 1"},
		{"no version", strings.Replace(doc(rec("agent", "demo")), `,"version":1`, ``, 1), "export version 0"},
		{"unknown field", strings.Replace(doc(rec("agent", "demo")), `"version":1`, `"version":1,"hook":"x"`, 1), `unknown field "hook"`},
		{"relative cwd", doc(rec("agent", "demo", "cwd", "rel/dir")), "is not absolute"},
		{"empty id", doc(rec("agent", "demo", "id", "")), "no session id"},
		{"control in id", doc(rec("agent", "demo", "id", "a\x1b[2Jb")), "control characters"},
		{"long id", doc(rec("agent", "demo", "id", strings.Repeat("i", 2000))), "over 1024 bytes"},
		{"two documents", doc(rec("agent", "demo")) + doc(rec("agent", "demo")), "more than one JSON value"},
		{"bad entry", strings.Replace(doc(rec("agent", "demo")), `"transcript":[]`, `"transcript":[{"type":"exec","text":"x"}]`, 1), `unknown type "exec"`},
		{"oversized", doc(rec("agent", "demo", "title", strings.Repeat("t", sessions.MaxImportBytes))), "over 16 MiB: not imported"},
	}
	for _, c := range refused {
		r := importDoc(c.doc)
		if r.code != exitFailed || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "acphost:") != 1 {
			t.Errorf("%s: exit %d, want %d with %q said once; stderr:\n%s", c.name, r.code, exitFailed, c.want, r.stderr)
		}
		if n := count(); n != 0 {
			t.Fatalf("%s: refused, yet %d record(s) were added", c.name, n)
		}
	}
	// Whatever was refused, --resume has nothing to run.
	if r := runIn(t, dir, extra, nil, "", "--resume", "imp-1", "-p", "x"); r.code != exitUsage {
		t.Errorf("--resume of a refused import: exit %d", r.code)
	}

	// A named agent with a planted command: imported, the command dropped
	// for the configuration's; --resume runs the configured agent.
	r := importDoc(doc(rec("agent", "mine", "id", "m1", "command", planted, "pid", os.Getpid())))
	if r.code != 0 {
		t.Fatalf("import of mine: exit %d: %s", r.code, r.stderr)
	}
	r = runIn(t, dir, extra, nil, "", "sessions", "show", "--json", "m1")
	var sj showJSON
	if err := json.Unmarshal([]byte(r.stdout), &sj); err != nil {
		t.Fatal(err)
	}
	if sj.Record.PID != 0 || len(sj.Record.Command) == 0 || sj.Record.Command[0] != binPath || sj.Command[0] != binPath {
		t.Errorf("imported record: %+v (shown command %q): the planted command or pid was kept", sj.Record, sj.Command)
	}
	r = runIn(t, dir, extra, nil, "", "--resume", "m1", "--permission", "allow", "-p", "x")
	if r.code != 0 || !strings.Contains(r.stdout, "mine answered") {
		t.Errorf("--resume m1: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Lstat(pwned); err == nil {
		t.Fatalf("an imported record made --resume run its planted command")
	}
	// The same again: refused without --force, taken with it.
	r = importDoc(doc(rec("agent", "mine", "id", "m1")))
	if r.code != exitFailed || !strings.Contains(r.stderr, "already recorded; --force replaces it") {
		t.Errorf("duplicate: exit %d: %s", r.code, r.stderr)
	}
	if r := importDoc(doc(rec("agent", "mine", "id", "m1", "title", "again")), "--force"); r.code != 0 {
		t.Errorf("duplicate --force: exit %d: %s", r.code, r.stderr)
	}
	if n := count(); n != 1 {
		t.Errorf("%d records after --force, want 1", n)
	}
	// A built-in agent's command is the built-in one.
	if r := importDoc(doc(rec("agent", "claude", "id", "c1", "command", planted))); r.code != 0 {
		t.Fatalf("import of claude: %d %s", r.code, r.stderr)
	}
	recs, err := (&state.Store{Dir: stateDir}).List()
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range recs {
		if rc.ID == "c1" && strings.Join(rc.Command, " ") != strings.Join(agents.Builtin["claude"].Command, " ") {
			t.Errorf("claude's record holds %q, not the built-in command", rc.Command)
		}
	}
	// Usage errors.
	if r := runIn(t, dir, extra, nil, "", "sessions", "import"); r.code != exitUsage || !strings.Contains(r.stderr, "Run 'acphost sessions --help'") {
		t.Errorf("import without a file: exit %d: %s", r.code, r.stderr)
	}
}

// prune removes the sessions last used before the cutoff (and their
// transcripts), only of the agent asked, never one an acphost process has
// open; --dry-run removes nothing.
func TestSessionsPrune(t *testing.T) {
	extra, _, stateDir := isolated(t)
	st := &state.Store{Dir: stateDir}
	old := time.Now().Add(-40 * 24 * time.Hour)
	day := time.Now().Add(-25 * time.Hour)
	for _, r := range []state.Record{
		{ID: "old-closed", Agent: agents.Demo, Cwd: "/", Created: old, LastUsed: old},
		{ID: "old-open", Agent: agents.Demo, Cwd: "/", Created: old, LastUsed: old, PID: os.Getpid()}, // this test process is alive
		{ID: "old-mine", Agent: "mine", Cwd: "/", Created: old, LastUsed: old},
		{ID: "recent", Agent: agents.Demo, Cwd: "/", Created: day, LastUsed: day},
	} {
		if err := st.Put(r); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendTranscript(r, []state.Entry{{Time: r.LastUsed, Type: state.EntryPrompt, Text: "hi"}}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() string {
		recs, err := st.List()
		if err != nil {
			t.Fatal(err)
		}
		var l []string
		for _, r := range recs {
			l = append(l, r.ID)
		}
		return strings.Join(l, " ")
	}
	transcriptOf := func(id, agent string) bool {
		_, err := os.Lstat(st.TranscriptPath(state.Record{ID: id, Agent: agent}))
		return err == nil
	}
	cwd := t.TempDir()

	r := runIn(t, cwd, extra, nil, "", "sessions", "prune", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would remove old-closed") || !strings.Contains(r.stdout, "would remove old-mine") ||
		!strings.Contains(r.stdout, "kept old-open (demo): open (pid") || strings.Contains(r.stdout, "recent") {
		t.Errorf("--dry-run: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := ids(); len(strings.Fields(got)) != 4 {
		t.Errorf("--dry-run removed something: %s", got)
	}

	r = runIn(t, cwd, extra, nil, "", "sessions", "prune", "--agent", "demo")
	if r.code != 0 || !strings.Contains(r.stdout, "removed old-closed") || strings.Contains(r.stdout, "old-mine") {
		t.Errorf("prune --agent demo: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := ids(); strings.Contains(got, "old-closed") || !strings.Contains(got, "old-open") || !strings.Contains(got, "old-mine") || !strings.Contains(got, "recent") {
		t.Errorf("after prune --agent demo: %s", got)
	}
	if transcriptOf("old-closed", agents.Demo) || !transcriptOf("old-open", agents.Demo) {
		t.Errorf("prune removed the wrong transcripts")
	}

	r = runIn(t, cwd, extra, nil, "", "sessions", "prune", "--older-than", "12h")
	if r.code != 0 || !strings.Contains(r.stdout, "removed recent") || !strings.Contains(r.stdout, "removed old-mine") {
		t.Errorf("prune --older-than 12h: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := ids(); got != "old-open" {
		t.Errorf("after prune --older-than 12h: %q, want only the open one", got)
	}
	if transcriptOf("recent", agents.Demo) || transcriptOf("old-mine", "mine") {
		t.Errorf("pruned records left their transcripts")
	}
	r = runIn(t, cwd, extra, nil, "", "sessions", "prune")
	if r.code != 0 || !strings.Contains(r.stdout, "no session to remove") {
		t.Errorf("nothing to prune: exit %d:\n%s", r.code, r.stdout)
	}
	for _, bad := range []string{"soon", "-3d", "0", "0d"} {
		if r := runIn(t, cwd, extra, nil, "", "sessions", "prune", "--older-than", bad); r.code != exitUsage || strings.Count(r.stderr, "acphost:") != 1 {
			t.Errorf("--older-than %s: exit %d: %s", bad, r.code, r.stderr)
		}
	}
}

// Every sessions subcommand prints the usage on stdout for --help; a bad
// command line is exit status 2 with the error said once.
func TestSessionsUsage(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	for _, sub := range []string{"show", "history", "export", "import", "prune"} {
		r := runIn(t, dir, extra, nil, "", "sessions", sub, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "acphost sessions history ID|NAME|last") || r.stderr != "" {
			t.Errorf("sessions %s --help: exit %d; stdout:\n%s\nstderr:\n%s", sub, r.code, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{{"show"}, {"history", "a", "b"}, {"history", "last", "--limit", "-1"}, {"export", "--bogus", "last"}, {"prune", "extra"}, {"bogus"}} {
		r := runIn(t, dir, extra, nil, "", append([]string{"sessions"}, args...)...)
		if r.code != exitUsage || strings.Count(r.stderr, "acphost: ") > 1 {
			t.Errorf("sessions %v: exit %d, want %d; stderr:\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
	r := runIn(t, dir, extra, nil, "", "sessions", "show", "nosuch")
	if r.code != exitFailed || r.stderr != "acphost: sessions show: no session \"nosuch\" recorded (acphost sessions lists them)\n" {
		t.Errorf("show nosuch: exit %d; stderr %q", r.code, r.stderr)
	}
}

// TestHistoryShowsARejectedToolRejected: the demo's tool call, rejected
// (the demo reports it completed all the same), is ✗ rejected in
// sessions history as it was in the live view, not ✓.
func TestHistoryShowsARejectedToolRejected(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	if r := runIn(t, dir, extra, nil, "", "--permission", "reject", "-p", "list files"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	r := runIn(t, dir, extra, nil, "", "sessions", "history", "last")
	if !strings.Contains(r.stdout, "✗ ls (execute, rejected") || strings.Contains(r.stdout, "✓ ls") {
		t.Errorf("history does not show the rejected call rejected:\n%s\n%s", r.stdout, r.stderr)
	}
}
