package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLongStateDirIsBound: a state directory so deep that the socket's
// path passes a unix socket's 107 bytes is still bound, answers Ask and
// Answers, is swept when stale like any other, and Close removes it —
// through the directory's descriptor, which is closed again (no
// descriptor is left open by the bind or by a dial).
func TestLongStateDirIsBound(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60), "state")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	fds := openFDs(t)
	s, err := Listen(stateDir, func(req Request) Reply { return Reply{OK: true, Running: true} })
	if err != nil {
		t.Fatalf("Listen with a %d-byte socket path: %v", len(filepath.Join(stateDir, "run", "0123456789abcdef.sock")), err)
	}
	if len(s.Path) <= 107 {
		t.Fatalf("the test's path is too short to test anything: %d bytes", len(s.Path))
	}
	if !strings.HasPrefix(s.Path, stateDir) {
		t.Errorf("Path %q is not the socket's real path", s.Path)
	}
	if fi, err := os.Lstat(s.Path); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("no socket at %s: %v", s.Path, err)
	}
	rep, err := Ask(s.Path, Request{Op: OpCancel, Session: "s"})
	if err != nil || !rep.Running {
		t.Fatalf("Ask over the long path: %+v %v", rep, err)
	}
	if !Answers(s.Path) {
		t.Error("Answers says nobody listens on the long path")
	}
	s.Close()
	if _, err := os.Lstat(s.Path); !os.IsNotExist(err) {
		t.Errorf("Close left the socket: %v", err)
	}
	if _, err := Ask(s.Path, Request{Op: OpCancel}); err != ErrNoController {
		t.Errorf("Ask after Close: %v, want ErrNoController", err)
	}
	if after := openFDs(t); after != fds {
		t.Errorf("open descriptors: %d before, %d after", fds, after)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
