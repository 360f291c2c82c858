//go:build unix

package control

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/acphost/acphost/internal/testutil"
)

// In process: hostile connections end within the deadline, the bound on
// connections served at once holds, and Close leaves no goroutine behind.
func TestControlServerLeavesNoGoroutine(t *testing.T) {
	base := runtime.NumGoroutine()
	stateDir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	handled := make(chan Request, 10)
	s, err := Listen(stateDir, func(req Request) Reply {
		handled <- req
		return Reply{OK: true, Running: true}
	})
	if err != nil {
		t.Fatal(err)
	}
	s.deadline.Store(int64(300 * time.Millisecond))
	var conns []net.Conn
	for i := 0; i < controlConns+3; i++ { // never finishing their lines
		c, err := net.Dial("unix", s.Path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(`{"op"`))
		conns = append(conns, c)
	}
	// The slow writers are cut off at the deadline; then a request works.
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(readTimeout))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("a slow writer got an answer")
		}
		c.Close()
	}
	waitFor(t, "the served connections to end", func() bool { return len(s.sem) == 0 })
	rep, err := Ask(s.Path, Request{Op: OpCancel, Session: "s"})
	if err != nil || !rep.Running || rep.PID != os.Getpid() {
		t.Fatalf("%+v %v", rep, err)
	}
	if req := <-handled; req.Op != OpCancel || req.Session != "s" {
		t.Errorf("handled %+v", req)
	}
	// One held open while Close runs is ended by it.
	held, err := net.Dial("unix", s.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	s.deadline.Store(int64(time.Hour))
	waitFor(t, "the held connection to be served", func() bool { return len(s.sem) == 1 })
	s.Close()
	if _, err := os.Lstat(s.Path); !os.IsNotExist(err) {
		t.Errorf("the socket outlived Close: %v", err)
	}
	if _, err := Ask(s.Path, Request{Op: OpCancel}); err != ErrNoController {
		t.Errorf("after Close: %v", err)
	}
	if !testutil.GoroutinesBackTo(base) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines left:\n%s", buf[:runtime.Stack(buf, true)])
	}
}

// TestSweepSparesASocketBeingOpened: an acphost opening its control
// socket binds the path, then listens; in between, a connection is
// refused. Another acphost sweeping stale sockets at that moment removed
// the new one's path: its chat ran unreachable by acphost cancel, and
// --no-wait opened its session a second time. A socket is stale only
// once it has refused connections for a while.
func TestSweepSparesASocketBeingOpened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bound := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Close(fd) })
		if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: p}); err != nil {
			t.Fatal(err)
		}
		return p // bound, not yet listening
	}
	opening, stale := bound("opening.sock"), bound("stale.sock")
	old := time.Now().Add(-2 * staleSocketAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	sweepStaleSockets(dir)
	if _, err := os.Lstat(opening); err != nil {
		t.Errorf("the socket of an acphost about to listen was swept: %v", err)
	}
	if _, err := os.Lstat(stale); err == nil {
		t.Errorf("a socket refusing connections for %v was not swept", 2*time.Minute)
	}
}

// readTimeout bounds one wait, so a broken build fails instead of hanging;
// it is never what the test waits for.
const readTimeout = 60 * time.Second

// waitFor polls (with a deadline) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, readTimeout, func() (bool, string) { return cond(), "timed out waiting for " + what })
}
