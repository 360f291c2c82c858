//go:build unix

package main

import (
	"os"
	"strings"
	"testing"
)

// TestTerminalLoginAsksFirst: without --yes a terminal login runs only
// once the person at the terminal says y; with nobody at a terminal it is
// refused.
func TestTerminalLoginAsksFirst(t *testing.T) {
	script, authFile := loginScript(t, false)
	r := runWith(t, script, "y\n", "login")
	if r.code != exitUsage || !strings.Contains(r.stderr, "pass --yes") {
		t.Errorf("no terminal: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(authFile); err == nil {
		t.Fatal("the login ran without a yes")
	}
	// n first: once y has run, the agent is logged in and asks for nothing.
	for _, c := range []struct {
		answer string
		ran    bool
	}{{"n", false}, {"y", true}} {
		answer, ran := c.answer, c.ran
		p := startPane(t, script, nil, "login")
		p.waitFor("run it? [y/N]", 1)
		p.typeLine(answer)
		if ran {
			p.waitFor("logged in with tui", 1)
		} else {
			p.waitFor("not run", 1)
		}
		_, err := os.Stat(authFile)
		if (err == nil) != ran {
			t.Errorf("answered %s: the login ran = %v", answer, err == nil)
		}
	}
}
