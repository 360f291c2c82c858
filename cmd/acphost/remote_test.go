package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
