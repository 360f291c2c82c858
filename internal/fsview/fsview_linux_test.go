//go:build linux

package fsview

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acphost/acphost/internal/confine"
)

// place is a home holding a project and the agent's real state, and a
// directory outside every tree of the view.
type place struct{ home, project, state, outside, scratch string }

func newPlace(t *testing.T) place {
	root := t.TempDir()
	p := place{home: filepath.Join(root, "home"), outside: filepath.Join(root, "outside"), scratch: filepath.Join(root, "scratch")}
	p.project, p.state = filepath.Join(p.home, "project"), filepath.Join(p.home, ".agent")
	for _, d := range []string{p.project, p.state, p.outside, p.scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(p.project, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.home, ".profile"), []byte("# the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p place) view() View {
	return View{ReadOnly: []string{p.project}, Overlay: []string{p.home}, Writable: []string{p.state}, Scratch: p.scratch, Dir: p.project}
}

// run runs script in view v with args ($0, $1 …) and returns its output; it fails the test if
// the view could not be made.
func run(t *testing.T, v View, script string, args ...string) string {
	t.Helper()
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", script}, args...)...)
	cmd.Dir = v.Dir
	out := new(strings.Builder)
	cmd.Stdout, cmd.Stderr = out, out
	if err := Start(cmd, v, nil); err != nil {
		t.Fatalf("Start: %v", err)
	}
	_ = cmd.Wait()
	return out.String()
}

// TestViewKeepsTheProjectAndTheHomeUnchanged: in the view the program
// writes its home (a launcher's state) and its real state directory, and
// cannot write the project (read-only, by a relative path from its working
// directory too) nor anywhere outside the view (Landlock); afterwards only
// the state directory changed for real.
func TestViewKeepsTheProjectAndTheHomeUnchanged(t *testing.T) {
	p := newPlace(t)
	out := run(t, p.view(), `
		echo planted >> "$0/.profile" && echo home-ok
		mkdir -p "$0/.local/share/agent" && echo log > "$0/.local/share/agent/log" && echo share-ok
		echo s > "$1/session" && echo state-ok
		echo x > main.go 2>/dev/null || echo project-refused
		echo x > "$2/new.go" 2>/dev/null || echo project-new-refused
		rm -f "$2/main.go" 2>/dev/null; test -f "$2/main.go" && echo project-rm-refused
		echo x > "$3/f" 2>/dev/null || echo outside-refused
		cat "$0/.profile"
	`+"\n", p.home, p.state, p.project, p.outside)
	for _, want := range []string{"home-ok", "share-ok", "state-ok", "project-refused", "project-new-refused", "project-rm-refused", "outside-refused", "planted"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the program's output:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(p.home, ".profile")); string(b) != "# the user's\n" {
		t.Errorf("the real ~/.profile changed: %q", b)
	}
	for _, f := range []string{filepath.Join(p.home, ".local"), filepath.Join(p.project, "new.go"), filepath.Join(p.outside, "f")} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists for real", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(p.project, "main.go")); string(b) != "package main\n" {
		t.Errorf("the project's file changed: %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(p.state, "session")); err != nil || string(b) != "s\n" {
		t.Errorf("the real state directory did not get the write: %q %v", b, err)
	}
}

// TestViewCannotBeUndone: a program that makes a user namespace of its
// own (where it holds every capability) cannot lift the read-only project
// nor reach under the overlay: the mounts it inherits are locked, and
// Landlock forbids it to mount at all.
func TestViewCannotBeUndone(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	p := newPlace(t)
	out := run(t, p.view(), `
		unshare -Urm sh -c 'mount -o remount,rw,bind "$0" && echo x > "$0/main.go" && echo REMOUNTED' "$2" 2>&1
		unshare -Urm sh -c 'umount "$0" && echo x > "$0/main.go" && echo UNMOUNTED' "$2" 2>&1
		unshare -Urm sh -c 'umount -l "$1" && echo planted >> "$1/.profile" && echo HOME-UNMOUNTED' "$2" "$0" 2>&1
		mount -o remount,rw,bind "$2" 2>&1 && echo x > "$2/main.go" && echo REMOUNTED-HERE
		echo done
	`+"\n", p.home, p.state, p.project)
	if !strings.Contains(out, "done") {
		t.Fatalf("the program did not run to its end:\n%s", out)
	}
	for _, bad := range []string{"REMOUNTED", "UNMOUNTED", "HOME-UNMOUNTED", "REMOUNTED-HERE"} {
		if strings.Contains(out, bad+"\n") {
			t.Errorf("%s:\n%s", bad, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(p.project, "main.go")); string(b) != "package main\n" {
		t.Errorf("the project's file changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(p.home, ".profile")); string(b) != "# the user's\n" {
		t.Errorf("the real ~/.profile changed: %q", b)
	}
}

// TestViewOverAProtectedTree: state a launcher keeps inside the project
// (an overlay tree within a read-only one) is writable in a private copy;
// the rest of the project stays read-only.
func TestViewOverAProtectedTree(t *testing.T) {
	p := newPlace(t)
	inner := filepath.Join(p.project, ".agent-home")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	v := p.view()
	v.Overlay = append(v.Overlay, inner)
	out := run(t, v, `
		echo s > "$0/state" && echo inner-ok
		echo x > main.go 2>/dev/null || echo project-refused
	`+"\n", inner)
	for _, want := range []string{"inner-ok", "project-refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the program's output:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(inner, "state")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the write inside the project landed for real")
	}
}

// TestViewReportsAProgramThatCannotStart: a program that does not exist
// is the start's error, not a view error, and leaves nothing running.
func TestViewReportsAProgramThatCannotStart(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	p := newPlace(t)
	cmd := exec.Command("/bin/sh")
	cmd.Path = filepath.Join(p.outside, "no-such-agent")
	err := Start(cmd, p.view(), nil)
	if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no-such-agent") {
		t.Fatalf("Start: %v; want the program's own start error", err)
	}
}

// TestViewLeavesTheProgramNoCapability: as a normal user the view is made
// with capabilities of its user namespace; the program gets none of them.
func TestViewLeavesTheProgramNoCapability(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("as root the program is root: no user namespace is made (CI runs this as a normal user too)")
	}
	p := newPlace(t)
	out := run(t, p.view(), `grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasSuffix(line, "0000000000000000") {
			t.Errorf("the program holds capabilities: %s", line)
		}
	}
}

// TestViewScratchUnderAnOverlay: the scratch memory lies in a tree that
// is overlaid before the next overlay is mounted (the host's TMPDIR in
// /tmp, and the home after it).
func TestViewScratchUnderAnOverlay(t *testing.T) {
	p := newPlace(t)
	second := filepath.Join(t.TempDir(), "a-longer-path-than-the-first")
	if err := os.Mkdir(second, 0o755); err != nil {
		t.Fatal(err)
	}
	v := p.view()
	v.Overlay = []string{filepath.Dir(p.scratch), second}
	if out := run(t, v, `echo x > "$0/f" && echo second-ok`, second); out != "second-ok\n" {
		t.Errorf("output %q", out)
	}
}

// TestViewKeepsTheUsersSocketsOutOfReach: a unix socket the user's
// services listen on in an overlaid tree (a chat's control socket in the
// home, a session bus in the runtime directory) cannot be connected to
// from the view.
func TestViewKeepsTheUsersSocketsOutOfReach(t *testing.T) {
	p := newPlace(t)
	sock := filepath.Join(p.home, ".local", "control.sock")
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	out := run(t, p.view(), `"$0" -test.run '^TestHelperDial$' -- "$1" 2>&1`, os.Args[0], sock)
	if !strings.Contains(out, "dial refused") {
		t.Errorf("the program reached the socket:\n%s", out)
	}
	select {
	case <-accepted:
		t.Error("the server accepted a connection from the view")
	default:
	}
}

// TestHelperDial dials the unix socket named after "--" when run by
// TestViewKeepsTheUsersSocketsOutOfReach; it does nothing otherwise.
func TestHelperDial(t *testing.T) {
	i := slices.Index(os.Args, "--")
	if i < 0 || i+1 >= len(os.Args) {
		return
	}
	if c, err := net.Dial("unix", os.Args[i+1]); err != nil {
		fmt.Println("dial refused:", err)
	} else {
		fmt.Println("dial connected")
		c.Close()
	}
}

// TestViewStartRefusedForAnotherReasonIsNotTheViews: a start the kernel
// refuses for a reason of its own (here a working directory that does not
// exist) is that error, not ErrUnavailable: the caller must not take it
// for a view that cannot be had and start without one.
func TestViewStartRefusedForAnotherReasonIsNotTheViews(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	p := newPlace(t)
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	cmd.Dir = filepath.Join(p.outside, "gone")
	err := Start(cmd, p.view(), nil)
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Start: %v; want the start's own error", err)
	}
}
