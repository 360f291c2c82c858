package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
)

// TestRecordWritesTheWireForAReplay: --record writes the wire as NDJSON
// (0600), and the recording played back as the agent
// (fakeagent.ReplayCommand) gives the same turn: a bug report becomes a
// regression test.
func TestRecordWritesTheWireForAReplay(t *testing.T) {
	extra, configFile, _ := isolated(t)
	rec := filepath.Join(t.TempDir(), "wire.jsonl")
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("recorded answer"))}}}}
	r := runIn(t, t.TempDir(), extra, script, "", "--no-store", "--record", rec, "-p", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	fi, err := os.Stat(rec)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the recording: %v %v", fi, err)
	}
	b, _ := os.ReadFile(rec)
	for _, want := range []string{`"dir":"send"`, `"dir":"recv"`, `"session/prompt"`, "recorded answer"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the recording lacks %s", want)
		}
	}
	_, args, env, err := fakeagent.ReplayCommand(rec)
	if err != nil {
		t.Fatal(err)
	}
	agentEnv := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		agentEnv[k] = v
	}
	writeJSON(t, configFile, map[string]any{"agents": map[string]any{"replayed": map[string]any{
		"command": append([]string{binPath}, args...), "env": agentEnv}}})
	r = runIn(t, t.TempDir(), extra, nil, "", "--no-store", "--agent", "replayed", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "recorded answer") {
		t.Errorf("the replay: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestWebTurnsGoToTheTranscript: a turn run in acphost web is kept in the
// session's transcript as a terminal turn is, so acphost sessions history
// shows it.
func TestWebTurnsGoToTheTranscript(t *testing.T) {
	st := &state.Store{Dir: filepath.Join(t.TempDir(), "acphost")}
	cwd := t.TempDir()
	w := newWebStore(st, config{agentName: agents.Demo, cwd: cwd})
	now := time.Now()
	if err := w.Put(web.SessionRecord{ID: "w1", Cwd: cwd, LastUsed: now}); err != nil {
		t.Fatal(err)
	}
	resp := acphost.Response{Text: "the answer", StopReason: acp.StopEndTurn,
		ToolCalls: []acp.ToolCall{{ID: "t1", Title: "ls", Kind: acp.ToolExecute, Status: acp.StatusCompleted}}}
	if err := w.RecordTurn("w1", web.TurnRecord{Prompt: "the prompt", Response: resp, Started: now, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	recs, err := st.List()
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %v %v", recs, err)
	}
	es, _, err := st.ReadTranscript(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range es {
		types = append(types, e.Type+":"+e.Text+e.Title)
	}
	if want := []string{"prompt:the prompt", "tool:ls", "answer:the answer", "end:"}; !slices.Equal(types, want) {
		t.Errorf("transcript %q, want %q", types, want)
	}
}

// TestRecordingIsBounded: the --record file takes whole entries up to its
// bound and nothing after the first that does not fit, so what it keeps
// still replays, and it says it was cut.
func TestRecordingIsBounded(t *testing.T) {
	var buf strings.Builder
	r := &boundedRecording{w: &buf, left: 10}
	for _, e := range []string{"aaaa\n", "bbbb\n", "cc\n", "d\n"} {
		if n, err := r.Write([]byte(e)); n != len(e) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", e, n, err)
		}
	}
	if buf.String() != "aaaa\nbbbb\n" || !r.cut {
		t.Errorf("kept %q, cut %v", buf.String(), r.cut)
	}
}
