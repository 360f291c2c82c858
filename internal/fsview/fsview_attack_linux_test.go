//go:build linux

package fsview

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// openPty opens a pseudo-terminal as a user's terminal is: the host's
// side holds it open. It returns the terminal's path.
func openPty(t *testing.T) string {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	name := "/dev/pts/" + strconv.Itoa(int(n))
	s, err := os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return name
}

// TestAttackViewKeepsTheUsersTerminalsOutOfReach: a terminal the user has
// open (the one acphost runs in, another shell's) cannot be opened from the
// view, so the agent cannot type into it (TIOCSTI: a command the user's
// shell runs outside every confinement) nor write on it; a terminal of the
// agent's own (script, node-pty) still works.
func TestAttackViewKeepsTheUsersTerminalsOutOfReach(t *testing.T) {
	pts := openPty(t)
	p := newPlace(t)
	out := run(t, p.view(), `"$0" -test.run '^TestHelperTerminal$' -- "$1" 2>&1`, os.Args[0], pts)
	if strings.Contains(out, "opened "+pts) || strings.Contains(out, "injected") {
		t.Errorf("the program reached the user's terminal %s:\n%s", pts, out)
	}
	if !strings.Contains(out, "own terminal ok") {
		t.Errorf("the program cannot open a terminal of its own:\n%s", out)
	}
}

// TestHelperTerminal opens the terminal named after "--" and types into
// it, then opens a terminal of its own, when run by
// TestAttackViewKeepsTheUsersTerminalsOutOfReach; it does nothing otherwise.
func TestHelperTerminal(t *testing.T) {
	i := slices.Index(os.Args, "--")
	if i < 0 || i+1 >= len(os.Args) {
		return
	}
	if f, err := os.OpenFile(os.Args[i+1], os.O_RDWR|syscall.O_NOCTTY, 0); err != nil {
		fmt.Println("refused:", err)
	} else {
		fmt.Println("opened", os.Args[i+1])
		c := byte('x')
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCSTI, uintptr(unsafe.Pointer(&c))); e == 0 {
			fmt.Println("injected")
		}
		f.Close()
	}
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		fmt.Println("own terminal:", err)
		return
	}
	defer m.Close()
	var unlock int32
	var n uint32
	syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock)))
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		fmt.Println("own terminal:", e)
		return
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		fmt.Println("own terminal:", err)
		return
	}
	s.Close()
	fmt.Println("own terminal ok")
}

// capabilities the agent's process reports in its status, by line name.
func capabilities(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	caps := map[string]uint64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		name, hex, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasPrefix(name, "Cap") {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		caps[name] = v
	}
	return caps
}

// TestAttackViewLeavesRootNoWayOut: an agent run as root is root in its
// view, but without the capabilities that reach past a mount namespace and
// Landlock — loading a kernel module, BPF, raw I/O, tracing, mounting,
// opening files by handle — in any of its sets, so no program it runs
// gets them back either.
func TestAttackViewLeavesRootNoWayOut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("as a normal user the program gets no capability at all (TestViewLeavesTheProgramNoCapability)")
	}
	p := newPlace(t)
	caps := capabilities(t, run(t, p.view(), `grep -E '^Cap' /proc/self/status`))
	if len(caps) == 0 {
		t.Fatal("no capability line in the program's status")
	}
	dangerous := map[string]uint{"CAP_DAC_READ_SEARCH": 2, "CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17,
		"CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_NET_ADMIN": 12, "CAP_BPF": 39,
		"CAP_PERFMON": 38, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34}
	for set, v := range caps {
		for name, bit := range dangerous {
			if v&(1<<bit) != 0 {
				t.Errorf("the program holds %s in %s (%016x)", name, set, v)
			}
		}
	}
	if caps["CapEff"]&(1<<1) == 0 {
		t.Errorf("root lost CAP_DAC_OVERRIDE (%016x): it could not read a file not its own", caps["CapEff"])
	}
}

// TestAttackViewIgnoresAnInheritedMarker: a program that links the
// package and is started with the view's marker in its environment (left
// in a shell rc file, passed on by a tool) but not by Start runs as itself.
func TestAttackViewIgnoresAnInheritedMarker(t *testing.T) {
	for _, fds := range []string{"0,1", "3,4", "", "x"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperNothing$")
		cmd.Env = append(os.Environ(), marker+"="+fds)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Errorf("with %s=%s the program did not run: %v\n%s", marker, fds, err, out)
		}
	}
}

// TestHelperNothing does nothing.
func TestHelperNothing(t *testing.T) {}

// TestAttackViewScratchIsNeverFollowed: a scratch directory swapped for a
// link (the agent writes the temporary directory it lies in) is not
// mounted through, and the start fails rather than runs without the view.
func TestAttackViewScratchIsNeverFollowed(t *testing.T) {
	p := newPlace(t)
	for name, target := range map[string]string{"dangling": filepath.Join(p.outside, "none"), "proc": "/proc", "project": p.project} {
		t.Run(name, func(t *testing.T) {
			v := p.view()
			v.Scratch = filepath.Join(t.TempDir(), "scratch")
			if err := os.Symlink(target, v.Scratch); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("/bin/true")
			cmd.Dir = v.Dir
			err := Start(cmd, v, nil)
			if err == nil {
				_ = cmd.Wait()
				t.Fatal("the view was made on a scratch directory that is a link")
			}
			if errors.Is(err, ErrUnavailable) {
				t.Fatalf("Start: %v; want an error the caller does not take for a view that cannot be had", err)
			}
		})
	}
}

// TestAttackViewCannotReachTheHostThroughProc: the host's root and
// working directory seen through /proc (the real trees, not the view's)
// and its mount namespace are out of the program's reach.
func TestAttackViewCannotReachTheHostThroughProc(t *testing.T) {
	p := newPlace(t)
	host := strconv.Itoa(os.Getpid())
	out := run(t, p.view(), `
		echo x > "/proc/$0/root$1/via-root" 2>/dev/null && echo ROOT-WRITTEN
		echo x > "/proc/$0/cwd/via-cwd" 2>/dev/null && echo CWD-WRITTEN
		ls "/proc/$0/root/" >/dev/null 2>&1 && echo ROOT-LISTED
		nsenter -m -t "$0" true 2>/dev/null && echo NSENTERED
		echo done
	`+"\n", host, p.project)
	if !strings.Contains(out, "done") {
		t.Fatalf("the program did not run to its end:\n%s", out)
	}
	for _, bad := range []string{"ROOT-WRITTEN", "CWD-WRITTEN", "ROOT-LISTED", "NSENTERED"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s:\n%s", bad, out)
		}
	}
	for _, f := range []string{"via-root", "via-cwd"} {
		if _, err := os.Stat(filepath.Join(p.project, f)); err == nil {
			t.Errorf("%s written in the project", f)
		}
	}
}

// TestViewLeavesTheHostsMountsAlone: the host's mount table is the same
// after many views were made and their programs ended (as root no user
// namespace keeps a mount from propagating: the view makes every mount
// private first).
func TestViewLeavesTheHostsMountsAlone(t *testing.T) {
	before, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	p := newPlace(t)
	for range 20 {
		run(t, p.view(), `true`)
	}
	after, _ := os.ReadFile("/proc/self/mountinfo")
	if string(before) != string(after) {
		t.Errorf("the host's mounts changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestAttackViewLeavesNoDescriptorOfTheRealTree: a descriptor the host
// holds without close-on-exec (one it inherited, or opened outside Go's
// os package) is not the program's: through it the program would write a
// project file the view shows read-only.
func TestAttackViewLeavesNoDescriptorOfTheRealTree(t *testing.T) {
	p := newPlace(t)
	f, err := os.OpenFile(filepath.Join(p.project, "main.go"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Without close-on-exec, at a number past those a start moves
	// descriptors through (and one a shell redirects from).
	const fd = 9
	if err := syscall.Dup3(int(f.Fd()), fd, 0); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	out := run(t, p.view(), `echo planted >&"$0" 2>/dev/null && echo WRITTEN; echo done`, strconv.Itoa(fd))
	if strings.Contains(out, "WRITTEN") {
		t.Errorf("the program wrote through the host's descriptor %d:\n%s", fd, out)
	}
	if b, _ := os.ReadFile(filepath.Join(p.project, "main.go")); string(b) != "package main\n" {
		t.Errorf("the project's file changed: %q", b)
	}
}

// TestAttackViewLinksNothingIntoTheProject: from the places it writes, the
// program can neither hard-link nor exchange a project file into them
// (each tree is a mount of its own: EXDEV), nor write one through a link.
func TestAttackViewLinksNothingIntoTheProject(t *testing.T) {
	p := newPlace(t)
	out := run(t, p.view(), `
		ln "$2/main.go" "$1/hard" 2>/dev/null && echo x >> "$1/hard" && echo HARD-LINKED
		ln "$2/main.go" "$0/hard" 2>/dev/null && echo x >> "$0/hard" && echo HOME-HARD-LINKED
		mv "$2/main.go" "$1/moved" 2>/dev/null && echo MOVED
		ln -s "$2/main.go" "$1/soft" && { echo x >> "$1/soft"; } 2>/dev/null && echo SOFT-WRITTEN
		ln -s "$2" "$1/dir" && { echo x > "$1/dir/new.go"; } 2>/dev/null && echo DIR-WRITTEN
		echo done
	`+"\n", p.home, p.state, p.project)
	if !strings.Contains(out, "done") {
		t.Fatalf("the program did not run to its end:\n%s", out)
	}
	for _, bad := range []string{"HARD-LINKED", "HOME-HARD-LINKED", "MOVED", "SOFT-WRITTEN", "DIR-WRITTEN"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s:\n%s", bad, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(p.project, "main.go")); string(b) != "package main\n" {
		t.Errorf("the project's file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(p.project, "new.go")); err == nil {
		t.Error("new.go written in the project")
	}
}
