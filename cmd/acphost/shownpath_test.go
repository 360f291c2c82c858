package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// TestDiffPathsAreRelativeToTheSession: a proposed edit of a file in the
// session's directory shows its path relative to it (a/main.go, not
// a//tmp/…/main.go); a path outside stays whole.
func TestDiffPathsAreRelativeToTheSession(t *testing.T) {
	dir := t.TempDir()
	inside := filepath.Join(dir, "src", "main.go")
	perm := func(id, path string) fakeagent.Step {
		p, _ := json.Marshal(map[string]any{
			"toolCall": map[string]any{"toolCallId": id, "title": "edit", "kind": "edit",
				"locations": []any{map[string]any{"path": path}},
				"content":   []any{map[string]any{"type": "diff", "path": path, "oldText": "a\n", "newText": "b\n"}}},
			"options": []any{map[string]any{"optionId": "ok", "name": "Allow", "kind": "allow_once"}, map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"}},
		})
		return fakeagent.Ask(p)
	}
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{perm("e1", inside), perm("e2", "/etc/elsewhere.conf")}}}}
	r := runIn(t, dir, nil, script, "", "--permission", "reject", "-p", "edit")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"  diff src/main.go ", "--- a/src/main.go", "+++ b/src/main.go", "  file: src/main.go\n",
		"  diff /etc/elsewhere.conf ", "+++ b/etc/elsewhere.conf"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, dir) {
		t.Errorf("the session's directory is spelled out:\n%s", r.stdout)
	}
}
