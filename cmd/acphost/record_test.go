package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
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
