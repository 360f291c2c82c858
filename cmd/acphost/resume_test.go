package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
)

// --resume re-attaches the recorded session as the warm one: the agent
// gets session/load and never a session/new, and the replay is shown.
func TestResumeOpensNoNewSession(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       filepath.Join(t.TempDir(), "history.json"),
		SessionID:         "keep-1",
		Turns: []fakeagent.Turn{
			{Prompt: "first", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer one"))}},
			{Prompt: "second", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer two"))}},
		},
	}
	if r := runIn(t, dir, extra, script, "", "-p", "first"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script.RecordFile = record // what the resuming run's agent receives
	r := runIn(t, dir, extra, script, "", "--resume", "last", "-p", "second")
	if r.code != 0 {
		t.Fatalf("--resume: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"continuing session keep-1", "answer one", "end of the replayed history", "session loaded", "session keep-1", "answer two"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--resume stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	if n := countMethod(msgs, "session/new"); n != 0 {
		t.Errorf("--resume sent %d session/new, want 0", n)
	}
	if n := countMethod(msgs, "session/load"); n != 1 {
		t.Errorf("%d session/load, want 1", n)
	}
	// Only one record: the resumed session, not a fresh one beside it.
	r = runIn(t, dir, extra, nil, "", "sessions", "--json")
	var recs []state.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) != 1 || recs[0].ID != "keep-1" {
		t.Errorf("sessions after --resume: %v %s", err, r.stdout)
	}
}

// TestNewSessionLetsGoOfTheOldRecord: after /new the session left behind
// is no longer recorded as open by this process (its pid and control
// socket cleared), so listings and acphost cancel do not point at it.
func TestNewSessionLetsGoOfTheOldRecord(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "first", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("one"))}},
		{Prompt: "second", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("two"))}},
	}}
	if r := runIn(t, dir, extra, script, "first\n/new\nsecond\n"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	r := runIn(t, dir, extra, nil, "", "sessions", "--json")
	var recs []state.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) != 2 {
		t.Fatalf("sessions: %v %s", err, r.stdout)
	}
	for _, rec := range recs {
		if rec.PID != 0 || rec.Control != "" {
			t.Errorf("session %s still names pid %d, control %q", rec.ID, rec.PID, rec.Control)
		}
	}
}

// TestContinueResumesTheLatestOrStartsOne: --continue continues this
// agent's latest session in the directory (session/load, no session/new),
// and where there is none starts a new one.
func TestContinueResumesTheLatestOrStartsOne(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       filepath.Join(t.TempDir(), "history.json"),
		SessionID:         "cont-1",
		Turns: []fakeagent.Turn{
			{Prompt: "first", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer one"))}},
			{Prompt: "second", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answer two"))}},
		},
	}
	r := runIn(t, dir, extra, script, "", "--continue", "-p", "first")
	if r.code != 0 || !strings.Contains(r.stdout, "starting a new one") {
		t.Fatalf("first --continue: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script.RecordFile = record
	r = runIn(t, dir, extra, script, "", "--continue", "-p", "second")
	if r.code != 0 || !strings.Contains(r.stdout, "continuing session cont-1") || !strings.Contains(r.stdout, "answer two") {
		t.Fatalf("second --continue: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	msgs, _ := fakeagent.ReadRecord(record)
	if countMethod(msgs, "session/new") != 0 || countMethod(msgs, "session/load") != 1 {
		t.Errorf("--continue: %d session/new, %d session/load", countMethod(msgs, "session/new"), countMethod(msgs, "session/load"))
	}
	if r := runIn(t, dir, extra, script, "", "--continue", "--resume", "last", "-p", "x"); r.code != exitUsage {
		t.Errorf("--continue with --resume: exit %d", r.code)
	}
}

// TestContinueTakesThisAgentsRecord: --continue continues the record it
// picked, not another agent's of the same session id (found again by id,
// it carried that agent's mode and directory).
func TestContinueTakesThisAgentsRecord(t *testing.T) {
	extra, configFile, stateDir := isolated(t)
	writeJSON(t, configFile, map[string]any{"agents": map[string]any{"other": map[string]any{"command": []string{"false"}}}})
	dir := t.TempDir()
	st := &state.Store{Dir: stateDir}
	now := time.Now()
	for _, r := range []state.Record{
		{ID: "chat-1", Agent: agents.Demo, Cwd: dir, LastUsed: now.Add(-time.Hour)},
		{ID: "chat-1", Agent: "other", Cwd: dir, Mode: "x-other", LastUsed: now},
	} {
		if err := st.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	script := &fakeagent.Script{AgentCapabilities: json.RawMessage(`{"loadSession":true}`)}
	r := runIn(t, dir, extra, script, "", "--continue", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "continuing session chat-1") || strings.Contains(r.stdout+r.stderr, "x-other") {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
