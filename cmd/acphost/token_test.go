//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestServeKeepsTheTokenOutOfArgv (issue 31.2): acphost serve used to
// print ws://…/acp?token=T for `acphost --url` "as it is", which put the
// token in the client's /proc/PID/cmdline for every user of the machine.
// Now it prints the URL and a command naming a file only the person can
// read; that command works, and holds no token. A token still given on a
// command line (in the URL, or --token) is taken with a warning; a token
// file others may read is refused; --token-file - reads stdin.
func TestServeKeepsTheTokenOutOfArgv(t *testing.T) {
	t.Parallel()
	needSignals(t)
	agent := remoteDemo(t)[1:]
	srv := start(t, nil, append([]string{"serve", "--listen", "127.0.0.1:0", "--"}, agent...)...)
	defer func() {
		srv.signal(syscall.SIGTERM)
		srv.wait()
	}()
	url, _ := srv.line()
	command, _ := srv.line()
	words := strings.Fields(command)
	var file string
	for i, w := range words {
		if w == "--token-file" && i+1 < len(words) {
			file = words[i+1]
		}
	}
	if !strings.HasPrefix(url, "ws://127.0.0.1:") || strings.Contains(url, "token") || file == "" || words[0] != "acphost" {
		t.Fatalf("serve printed %q and %q; want the bare URL, then a command with --token-file", url, command)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the token file %s: %v, %v", file, fi, err)
	}
	b, _ := os.ReadFile(file)
	tok := strings.TrimSpace(string(b))
	if len(tok) < 32 || strings.Contains(url+command, tok) {
		t.Fatalf("the printed lines hold the token (or it is short: %d)", len(tok))
	}

	// The printed command, as printed (its --cwd a directory of this test).
	args := append([]string{}, words[1:]...)
	for i := range args {
		if i > 0 && args[i-1] == "--cwd" {
			args[i] = t.TempDir()
		}
	}
	r := runWith(t, nil, "", append(args, "--permission", "allow", "--json", "-p", "list files")...)
	if r.code != 0 || strings.Contains(r.stderr, "command line") {
		t.Fatalf("the printed command: exit %d; stderr:\n%s", r.code, r.stderr)
	}

	// A token in the URL, or with --token: taken, and warned about.
	for _, extra := range [][]string{{"--url", url + "?token=" + tok}, {"--url", url, "--token", tok}} {
		r = runWith(t, nil, "", append(extra, "--cwd", t.TempDir(), "--permission", "allow", "--json", "-p", "list files")...)
		if r.code != 0 || !strings.Contains(r.stderr, "every user of this machine can read") {
			t.Errorf("%v: exit %d; want it to work, with a warning; stderr:\n%s", extra[2:], r.code, r.stderr)
		}
	}

	// stdin.
	r = runWith(t, nil, tok+"\n", "--url", url, "--token-file", "-", "--cwd", t.TempDir(), "--permission", "allow", "--json", "-p", "list files")
	if r.code != 0 {
		t.Errorf("--token-file -: exit %d; stderr:\n%s", r.code, r.stderr)
	}

	// A file others may read is refused.
	open := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(open, []byte(tok), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runWith(t, nil, "", "--url", url, "--token-file", open, "--cwd", t.TempDir(), "-p", "x")
	if r.code != exitUsage || !strings.Contains(r.stderr, "chmod 600") {
		t.Errorf("a token file of mode 644: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}
