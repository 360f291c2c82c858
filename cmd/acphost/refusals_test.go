package main

import (
	"strings"
	"testing"
)

// TestRunThatRefusedEverythingSaysSo: a run with nobody to ask, whose
// every permission request was refused, exits 0 but ends with a line
// saying the agent did nothing it asked to, and how to let it.
func TestRunThatRefusedEverythingSaysSo(t *testing.T) {
	const said = "every permission the agent asked for was refused (1, --permission reject)"
	r := runWith(t, nil, "", "-p", "list files")
	if r.code != 0 || !strings.Contains(r.stderr, said) {
		t.Errorf("exit %d; stderr lacks %q:\n%s", r.code, said, r.stderr)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); !strings.Contains(lines[len(lines)-1], said) {
		t.Errorf("not the closing line:\n%s", r.stderr)
	}
	if r := runWith(t, nil, "", "--permission", "allow", "-p", "list files"); strings.Contains(r.stderr, "was refused") {
		t.Errorf("an allowed run says it was refused:\n%s", r.stderr)
	}
}
