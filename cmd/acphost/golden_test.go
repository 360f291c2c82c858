//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// durations and the like vary from run to run; the golden screens hold
// placeholders for them.
var (
	goldenDuration = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m)\b`)
	goldenTempDir  = regexp.MustCompile(`/tmp/[^\s]+`)
	goldenVersion  = regexp.MustCompile(`acphost \d+\.\d+\.\d+(-\S+)?`)
	goldenContain  = regexp.MustCompile(`· containment: (cgroup|namespace|group)\b`) // the machine's
	goldenDemoID   = regexp.MustCompile(`\bdemo-[0-9a-f]{8}\b`)
)

func normalizeScreen(s string) string {
	s = goldenTempDir.ReplaceAllString(s, "<tmp>")
	s = goldenDuration.ReplaceAllString(s, "<d>")
	s = goldenVersion.ReplaceAllString(s, "acphost <version>")
	s = goldenContain.ReplaceAllString(s, "· containment: <containment>")
	s = goldenDemoID.ReplaceAllString(s, "demo-<id>")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

// TestGoldenScreens: what a person sees in a terminal, for the built-in
// agent's turn, allowed and rejected, compared with testdata/golden
// (ACPHOST_UPDATE_GOLDEN=1 rewrites them; look at the diff before
// committing).
func TestGoldenScreens(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"demo-allow", []string{"--permission", "allow", "-p", "list files"}},
		{"demo-reject", []string{"--permission", "reject", "-p", "list files"}},
		{"demo-plan", []string{"--permission", "plan", "-p", "list files"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra, _, _ := isolated(t)
			p := startPane(t, nil, append(extra, "COLUMNS=120"), tc.args...)
			compareGolden(t, tc.name, p.waitFor("[exited 0]", 1))
		})
	}
}

// TestGoldenNamedScreen: the second run of -s NAME continues the demo
// agent's session: the replayed conversation dimmed, then the header
// naming the session by name and id.
func TestGoldenNamedScreen(t *testing.T) {
	extra, _, _ := isolated(t)
	proj := t.TempDir()
	if r := runIn(t, proj, extra, nil, "", "--cwd", proj, "-s", "fix", "--permission", "allow", "-p", "list files"); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	p := startPane(t, nil, append(extra, "COLUMNS=120"), "--cwd", proj, "-s", "fix", "--permission", "reject", "-p", "again")
	compareGolden(t, "demo-named-continued", p.waitFor("[exited 0]", 1))
}

// compareGolden compares screen, normalized, with testdata/golden/name.txt
// (ACPHOST_UPDATE_GOLDEN=1 writes it).
func compareGolden(t *testing.T, name, screen string) {
	t.Helper()
	got := normalizeScreen(screen)
	path := filepath.Join("testdata", "golden", name+".txt")
	if os.Getenv("ACPHOST_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (ACPHOST_UPDATE_GOLDEN=1 writes it)", err)
	}
	if got != string(want) {
		t.Errorf("the screen differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// claudeAgent is Claude's adapter as the mode screens need it: its modes
// (default asks, plan changes nothing), session/load, and a history in
// dir (which --writable keeps writable under plan mode's kernel layer)
// where it stores each session and the mode it was last set to; it
// records what it receives in dir/record.ndjson. remembers false: it
// stores nothing, so a restarted process loads no session, as Claude
// cannot load one that never had a prompt.
func claudeAgent(dir string, remembers bool) *fakeagent.Script {
	s := &fakeagent.Script{
		Name:              "@agentclientprotocol/claude-agent-acp",
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		NewSessionResult: json.RawMessage(`{"modes":{"currentModeId":"default","availableModes":[
			{"id":"default","name":"Default"},{"id":"acceptEdits","name":"Accept Edits"},
			{"id":"plan","name":"Plan Mode"},{"id":"bypassPermissions","name":"Bypass Permissions"}]}}`),
		ReadOnlyModes: []string{"plan"},
		AskingModes:   []string{"default"},
		RecordFile:    filepath.Join(dir, "record.ndjson"),
		Turns:         []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answered"))}}},
	}
	if remembers {
		s.HistoryFile = filepath.Join(dir, "history.ndjson")
	} else {
		s.ForgetSessions = true
	}
	return s
}

// agentModes are the modes the agent was set to, across its processes.
func agentModes(t *testing.T, dir string) []string {
	t.Helper()
	msgs, err := fakeagent.ReadRecord(filepath.Join(dir, "record.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range msgs {
		if m.Method == "session/set_mode" {
			var p struct {
				ModeID string `json:"modeId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			ids = append(ids, p.ModeID)
		}
	}
	return ids
}

// waitIdle waits until the chat waits for a line between turns (its last
// line is the bare prompt), so what is typed next is not queued.
func waitIdle(p *pane) {
	p.t.Helper()
	testutil.Until(p.t, readTimeout, func() (bool, string) {
		lines := strings.Split(strings.TrimRight(p.screen(), "\n "), "\n")
		last := strings.TrimSpace(lines[len(lines)-1])
		return last == ">", "the chat never waited for a line:\n" + p.screen()
	})
}

// TestGoldenModeScreens: the header names the mode the agent is in and
// the layers that hold, after --mode, --resume and /plan (and the restart
// /plan makes) — not the mode that was asked for.
func TestGoldenModeScreens(t *testing.T) {
	if !acphost.CanConfine() {
		t.Skip("the screens show plan mode's kernel layer (Linux Landlock), which is not available here")
	}
	t.Run("mode-under-plan", func(t *testing.T) {
		dir := t.TempDir()
		extra, _, _ := isolated(t)
		p := startPane(t, claudeAgent(dir, true), append(extra, "COLUMNS=160"),
			"--writable", dir, "--mode", "default", "--permission", "plan", "-p", "hi")
		compareGolden(t, "claude-mode-under-plan", p.waitFor("[exited 0]", 1))
		if got := strings.Join(agentModes(t, dir), " "); got != "plan" {
			t.Errorf("modes set: %q, want the agent held in plan", got)
		}
	})
	t.Run("resume", func(t *testing.T) {
		dir := t.TempDir()
		extra, _, _ := isolated(t)
		script := claudeAgent(dir, true)
		proj := t.TempDir()
		if r := runIn(t, proj, extra, script, "", "--cwd", proj, "--writable", dir, "--permission", "ask", "--non-interactive-permissions", "deny", "-p", "one"); r.code != 0 {
			t.Fatalf("first run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		p := startPane(t, script, append(extra, "COLUMNS=160"),
			"--cwd", proj, "--writable", dir, "--resume", "last", "--permission", "plan", "-p", "two")
		compareGolden(t, "claude-resume-plan", p.waitFor("[exited 0]", 1))
		if got := strings.Join(agentModes(t, dir), " "); got != "plan" {
			t.Errorf("modes set: %q, want plan as the session was loaded and nothing after", got)
		}
		p = startPane(t, script, append(extra, "COLUMNS=160"),
			"--cwd", proj, "--writable", dir, "--resume", "last", "--permission", "ask", "--non-interactive-permissions", "deny", "-p", "three")
		compareGolden(t, "claude-resume-ask", p.waitFor("[exited 0]", 1))
		if got := strings.Join(agentModes(t, dir), " "); got != "plan default" {
			t.Errorf("modes set: %q, want the agent out of plan mode", got)
		}
	})
	t.Run("plan-on-in-chat", func(t *testing.T) {
		dir := t.TempDir()
		extra, _, _ := isolated(t)
		p := startPane(t, claudeAgent(dir, false), append(extra, "COLUMNS=160"), "--writable", dir)
		p.waitFor("> ", 1)
		p.typeLine("/plan on")
		p.waitFor("plan mode on", 1)
		p.typeLine("hello")
		p.waitFor("✓ end_turn", 1)
		waitIdle(p)
		p.typeLine("/plan off")
		p.waitFor("plan mode off", 1)
		// Between turns the conversation is lost with the session the
		// restarted agent cannot load: the turn says so, and the CLI sends
		// the prompt again on the fresh session.
		p.typeLine("again")
		p.waitFor("✓ end_turn", 2)
		waitIdle(p)
		p.typeLine("/quit")
		compareGolden(t, "claude-plan-on-in-chat", p.waitFor("[exited 0]", 1))
	})
}
