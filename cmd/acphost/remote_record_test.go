//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/token"
)

// TestURLSessionIsRecorded: a --url session names the served agent in
// the header (not "(built-in demo)"), is recorded with its URL (never the
// token), and --resume reaches it again with the token from the
// environment.
func TestURLSessionIsRecorded(t *testing.T) {
	needSignals(t)
	extra, _, stateDir := isolated(t)
	agent := remoteDemo(t)[1:]
	srv := start(t, nil, append([]string{"serve", "--listen", "127.0.0.1:0", "--token", "s3cret", "--"}, agent...)...)
	url, ok := srv.line()
	if !ok || !strings.HasPrefix(url, "ws://127.0.0.1:") {
		t.Fatalf("serve printed %q; stderr: %s", url, srv.stderr.String())
	}
	dir := t.TempDir()
	r := runIn(t, dir, extra, nil, "", "--url", url, "--token", "s3cret", "--cwd", dir, "--permission", "allow", "-p", "list files")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	header, _, _ := strings.Cut(r.stdout, "\n")
	if strings.Contains(header, "built-in demo") || !strings.Contains(header, "fakeagent 0.0.0 at "+url) {
		t.Errorf("the header does not name the served agent: %q", header)
	}
	if r.stderr != "" && strings.Contains(r.stderr, "not recorded") {
		t.Errorf("stderr: %s", r.stderr)
	}
	ls := runIn(t, dir, extra, nil, "", "sessions")
	if ls.code != 0 || !strings.Contains(ls.stdout, url) {
		t.Fatalf("acphost sessions does not list the --url session: exit %d\n%s\n%s", ls.code, ls.stdout, ls.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(stateDir, "sessions.json")); strings.Contains(string(b), "s3cret") || !strings.Contains(string(b), url) {
		t.Errorf("the record lacks the URL or holds the token:\n%s", b)
	}
	// The demo keeps no sessions: reaching it (the URL, the token from the
	// environment) is what shows, as its answer that it cannot load one.
	again := runIn(t, dir, append(extra, token.Env+"=s3cret"), nil, "", "--resume", "last", "--permission", "allow", "-p", "list files")
	if again.code != exitFailed || !strings.Contains(again.stderr, "the agent offers neither session/load nor session/resume") {
		t.Errorf("--resume of the --url session: exit %d\n%s\n%s", again.code, again.stdout, again.stderr)
	}
	srv.signal(syscall.SIGTERM)
	srv.wait()
}

// TestDemoRunsAreSessionsOfTheirOwn: two runs of the demo agent, in two
// directories, are two records, not one session s1 merged.
func TestDemoRunsAreSessionsOfTheirOwn(t *testing.T) {
	extra, _, _ := isolated(t)
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if r := runIn(t, dir, extra, nil, "", "--permission", "allow", "-p", "list files"); r.code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
	}
	r := runIn(t, a, extra, nil, "", "sessions", "--json")
	var recs []state.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(recs) != 2 || recs[0].ID == recs[1].ID {
		t.Errorf("want two sessions with ids of their own: %+v", recs)
	}
}
