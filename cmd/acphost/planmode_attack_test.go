package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"

	"github.com/acphost/acphost"
)

// Plan mode's kernel layer keeps writable only the --writable directories
// outside the project: not one inside it (--writable ./build), nor one
// that reaches it through a symlink, which Landlock follows.
func TestPlanConfinementKeepsNoWritableDirOfTheProject(t *testing.T) {
	if !acphost.CanConfine() {
		t.Skip("Landlock is not available here")
	}
	proj, other := t.TempDir(), t.TempDir()
	link := filepath.Join(other, "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(other, "cache")
	cfg := config{writable: []string{filepath.Join(proj, "build"), link, filepath.Join(link, "sub"), cache, proj}}
	c := confinement(cfg, proj)
	if !slices.Equal(c.PlanWritable, []string{cache}) {
		t.Fatalf("PlanWritable %q, want only %q", c.PlanWritable, cache)
	}
	if len(c.Writable) != len(cfg.writable) {
		t.Fatalf("Writable %q: outside plan mode --writable holds as given", c.Writable)
	}
}

// An agent whose mode id is 8 KiB, an escape sequence in it, under
// --permission reject: the header stays one line of bounded length with
// no escape, whatever the agent names its modes.
func TestHeaderBoundsTheAgentsModeNames(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("auto\x1b[31m", 8<<10/9)
	id, _ := json.Marshal(long)
	script := &fakeagent.Script{
		NewSessionResult: json.RawMessage(`{"modes":{"currentModeId":` + string(id) + `,"availableModes":[{"id":` + string(id) + `}]}}`),
		Turns:            []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}}},
	}
	r := runIn(t, dir, nil, script, "", "--permission", "reject", "-p", "go")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if len(line) > 1024 || strings.Contains(line, "\x1b[31m") {
			t.Fatalf("a header line of %d bytes: %.200q…", len(line), line)
		}
	}
}
