package main

import (
	"strings"
	"syscall"
	"testing"
)

// TestServeNamedAgent: acphost serve --agent NAME serves the named agent
// (here the built-in demo), as --agent runs it everywhere else; both a
// name and a command, or neither, is a usage error.
func TestServeNamedAgent(t *testing.T) {
	needSignals(t)
	srv := start(t, nil, "serve", "--listen", "127.0.0.1:0", "--token", "s3cret", "--agent", "demo")
	url, ok := srv.line()
	if !ok || !strings.HasPrefix(url, "ws://127.0.0.1:") {
		t.Fatalf("serve printed %q; stderr: %s", url, srv.stderr.String())
	}
	r := runWith(t, nil, "", "--url", url, "--token", "s3cret", "--cwd", t.TempDir(), "--permission", "allow", "--json", "-p", "list files")
	if res := ofType(events(t, r.stdout), "result"); r.code != 0 || len(res) != 1 || resultText(res[0]) == "" {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	srv.signal(syscall.SIGTERM)
	srv.wait()

	for _, args := range [][]string{{"serve", "--agent", "demo", "--", "agent"}, {"serve"}, {"serve", "--agent", "no-such-agent"}} {
		if r := runWith(t, nil, "", args...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d; stderr: %s", args, r.code, exitUsage, r.stderr)
		}
	}
}

// TestSubcommandHelpSpellsFlagsWithTwoDashes: web and serve list their
// flags as --flag, as acphost's own usage does, never -flag.
func TestSubcommandHelpSpellsFlagsWithTwoDashes(t *testing.T) {
	for _, cmd := range []string{"web", "serve"} {
		r := runWith(t, nil, "", cmd, "--help")
		out := r.stdout + r.stderr
		if !strings.Contains(out, "\n  --listen ADDRESS\n") {
			t.Errorf("acphost %s --help lacks \"  --listen ADDRESS\":\n%s", cmd, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "-") && !strings.HasPrefix(strings.TrimSpace(l), "--") {
				t.Errorf("acphost %s --help: a single-dash flag: %q", cmd, l)
			}
		}
	}
}
