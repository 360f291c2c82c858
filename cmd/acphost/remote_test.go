//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/sshtest"
)

// remoteDemo is the agent command that runs the built-in demo agent (this
// acphost binary) on the "remote" host.
func remoteDemo(t *testing.T) []string {
	b, err := json.Marshal(fakeagent.Demo())
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--", "env", "ACPHOST_FAKEAGENT_MODE=agent", "ACPHOST_FAKEAGENT_SCRIPT=" + string(b), "GORACE=atexit_sleep_ms=0", binPath}
}

func TestSSHRunsTheAgentOnTheRemoteHost(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	args := append([]string{"--ssh", srv.User + "@" + srv.Addr, "--ssh-identity", srv.Identity, "--ssh-known-hosts", srv.KnownHosts,
		"--permission", "allow", "--json", "-p", "list files"}, remoteDemo(t)...)
	r := runWith(t, nil, "", args...)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	evs := events(t, r.stdout)
	res := ofType(evs, "result")
	if len(res) != 1 || resultText(res[0]) == "" {
		t.Fatalf("want one result with text, got %v", types(evs))
	}
	home, _ := os.UserHomeDir()
	if !strings.Contains(r.stdout, home) && !strings.Contains(r.stderr, "") {
		t.Logf("stdout: %s", r.stdout)
	}
}

func TestSSHRefusesAnUnknownHost(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--ssh", srv.User + "@" + srv.Addr, "--ssh-identity", srv.Identity, "--ssh-known-hosts", empty, "-p", "x"}, remoteDemo(t)...)
	r := runWith(t, nil, "", args...)
	if r.code != exitFailed || !strings.Contains(r.stderr, "host key unknown") {
		t.Fatalf("exit %d; want 1 and the unknown host named; stderr:\n%s", r.code, r.stderr)
	}
}

func TestSSHFlagsUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--ssh", "host", "-p", "x"},                           // no agent command: the built-in one is local
		{"--ssh", "host", "--fs", "-p", "x", "--", "agent"},    // host files
		{"--ssh", "host", "--writable", "/tmp", "--", "agent"}, // Landlock
		{"--ssh-insecure", "-p", "x"},                          // no --ssh
		{"--ssh", "host", "--cwd", "relative", "--", "agent"},  // a remote cwd must be absolute
	} {
		r := runWith(t, nil, "", args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d; stderr: %s", args, r.code, exitUsage, r.stderr)
		}
	}
}

func TestServeAndURLRunTheAgentOverWebSocket(t *testing.T) {
	t.Parallel()
	needSignals(t)
	agent := remoteDemo(t)[1:] // without the "--"
	srv := start(t, nil, append([]string{"serve", "--listen", "127.0.0.1:0", "--token", "s3cret", "--"}, agent...)...)
	url, ok := srv.line()
	if !ok || !strings.HasPrefix(url, "ws://127.0.0.1:") {
		t.Fatalf("serve printed %q; stderr: %s", url, srv.stderr.String())
	}
	r := runWith(t, nil, "", "--url", url, "--token", "s3cret", "--cwd", t.TempDir(), "--permission", "allow", "--json", "-p", "list files")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if res := ofType(events(t, r.stdout), "result"); len(res) != 1 || resultText(res[0]) == "" {
		t.Fatalf("want one result with text; stdout:\n%s", r.stdout)
	}
	r = runWith(t, nil, "", "--url", url, "--token", "wrong", "--cwd", "/", "-p", "x")
	if r.code != exitFailed {
		t.Fatalf("a wrong token: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	srv.signal(syscall.SIGTERM)
	if _, code := srv.wait(); code != 0 {
		t.Fatalf("serve after SIGTERM: exit %d; stderr: %s", code, srv.stderr.String())
	}
}

func TestServeRefusesBeyondLoopbackWithoutAToken(t *testing.T) {
	t.Parallel()
	r := runWith(t, nil, "", "serve", "--listen", "0.0.0.0:0", "--", "agent")
	if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "token") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestURLFlagsUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--url", "http://host/acp", "--cwd", "/", "-p", "x"},
		{"--url", "ws://host/acp", "-p", "x"},
		{"--url", "ws://host/acp", "--cwd", "/", "--", "agent"},
		{"--url", "ws://host/acp", "--ssh", "h", "--cwd", "/", "-p", "x"},
	} {
		if r := runWith(t, nil, "", args...); r.code != exitUsage {
			t.Errorf("%v: exit %d; stderr %s", args, r.code, r.stderr)
		}
	}
}

// TestServeIsNeverTokenless: `acphost serve` on loopback without --token
// used to serve every client that connected, with no credential at all:
// any other local user (loopback is not per user) or a DNS-rebound page
// drove an agent running as the person who started it. Now it makes a
// token up (kept in a file of the person's: TestServeKeepsTheTokenOutOfArgv)
// and a client without it is refused.
func TestServeIsNeverTokenless(t *testing.T) {
	t.Parallel()
	needSignals(t)
	agent := remoteDemo(t)[1:]
	srv := start(t, nil, append([]string{"serve", "--listen", "127.0.0.1:0", "--"}, agent...)...)
	url, ok := srv.line()
	if !ok || !strings.HasPrefix(url, "ws://127.0.0.1:") {
		t.Fatalf("serve printed %q; stderr: %s", url, srv.stderr.String())
	}
	defer func() {
		srv.signal(syscall.SIGTERM)
		srv.wait()
	}()
	r := runWith(t, nil, "", "--url", url, "--cwd", t.TempDir(), "--permission", "allow", "--json", "-p", "list files")
	if r.code == 0 {
		t.Errorf("a client with no token ran a turn on `acphost serve` (started without --token); stdout:\n%s", r.stdout)
	}
}
