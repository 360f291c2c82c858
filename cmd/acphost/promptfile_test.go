package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// TestPromptFromFile: -f PATH and -f - (stdin) send the whole text, lines
// and all, as one prompt, in order with -p; an empty file is an error.
func TestPromptFromFile(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script := &fakeagent.Script{RecordFile: record}
	file := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(file, []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runWith(t, script, "from\nstdin\n", "--json", "-p", "one", "-f", file, "--file", "-")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	msgs, _ := fakeagent.ReadRecord(record)
	var got []string
	for _, m := range msgs {
		if m.Method == "session/prompt" {
			got = append(got, string(m.Params))
		}
	}
	want := []string{`"text":"one"`, `"text":"first line\nsecond line"`, `"text":"from\nstdin"`}
	if len(got) != len(want) {
		t.Fatalf("%d prompts, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("prompt %d = %s, want %s", i, got[i], want[i])
		}
	}

	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runWith(t, script, "", "-f", empty); r.code != exitUsage || !strings.Contains(r.stderr, "is empty") {
		t.Errorf("-f empty: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if r := runWith(t, script, "x", "-f", "-", "-f", "-"); r.code != exitUsage || !strings.Contains(r.stderr, "given once") {
		t.Errorf("-f - twice: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}
