//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestImportedControlPathIsNotDialled: an imported record is hostile, and
// its "control" member names the socket acphost cancel and --no-wait
// connect to and write to. A record must never bring one: the path is of
// the machine that exported it (or of whatever socket the file's author
// picked, e.g. one in the user's $XDG_RUNTIME_DIR). After an import,
// acphost cancel dials nothing, and export does not carry the path out.
func TestImportedControlPathIsNotDialled(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	// A socket of the user's own, in a private directory: askControl
	// accepts it.
	sockDir := filepath.Join(t.TempDir(), "other")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "some-daemon.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	doc, _ := json.Marshal(map[string]any{"version": 1, "transcript": []any{},
		"record": map[string]any{"id": "imp-c", "agent": "demo", "cwd": dir, "created": time.Now(), "lastUsed": time.Now(), "control": sock}})
	f := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(f, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runIn(t, dir, extra, nil, "", "sessions", "import", f); r.code != 0 {
		t.Fatalf("import: exit %d: %s", r.code, r.stderr)
	}
	if recs := records(t, dir, extra); len(recs) != 1 || recs[0].Control != "" {
		t.Errorf("the imported record keeps the control path it brought: %+v", recs)
	}
	r := runIn(t, dir, extra, nil, "", "cancel", "imp-c")
	if r.code != exitFailed || !strings.Contains(r.stderr, "no acphost process has session imp-c open") {
		t.Errorf("cancel of an imported session: exit %d; stderr %q", r.code, r.stderr)
	}
	// Had anything connected, it would wait in the backlog.
	_ = ln.(*net.UnixListener).SetDeadline(time.Now().Add(200 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Errorf("acphost cancel connected to the socket an imported record named")
	} else if ne := (net.Error)(nil); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatal(err)
	}
	if r := runIn(t, dir, extra, nil, "", "sessions", "export", "imp-c"); r.code != 0 || strings.Contains(r.stdout, `"control"`) {
		t.Errorf("export: exit %d, carries the control path out:\n%s", r.code, r.stdout)
	}
}
