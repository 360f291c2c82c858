//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/acphost/acphost/internal/cgroup"
)

// ErrNoNamespace is matched by the errors of [NamespaceAvailable] (and of
// a start that needed a namespace and got none): this process may not make
// a PID namespace here. It matches errors.ErrUnsupported.
var ErrNoNamespace = fmt.Errorf("proc: no PID namespace: %w", errors.ErrUnsupported)

// NamespaceAvailable reports whether a process started with SetNamespace
// can be had here, nil if so, or why not (an error matching
// ErrNoNamespace). It starts a shell that way once per host process and
// remembers the answer.
func NamespaceAvailable() error { return namespaceProbe() }

var namespaceProbe = sync.OnceValue(func() error {
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	SetNamespace(cmd.SysProcAttr)
	if err := cmd.Run(); err != nil {
		return noNamespace(err)
	}
	return nil
})

// noNamespace wraps why a namespace was refused, naming the system's
// setting that refuses it where one does.
func noNamespace(err error) error {
	why := err.Error()
	for _, s := range []struct{ file, refuses string }{
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},             // Debian, older Ubuntu
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"}, // Ubuntu 23.10+
	} {
		if b, rerr := os.ReadFile(s.file); rerr == nil && strings.TrimSpace(string(b)) == s.refuses {
			why = fmt.Sprintf("%v (%s is %s)", err, s.file, s.refuses)
			break
		}
	}
	return fmt.Errorf("%w: %s", ErrNoNamespace, why)
}

// hostCanUnshare reports whether this process holds CAP_SYS_ADMIN, which
// a PID namespace needs without a user namespace.
var hostCanUnshare = cgroup.HasCapSysAdmin

// SetNamespace has the process started with a be PID 1 of a PID namespace
// of its own: when it dies the kernel kills every process left in the
// namespace, however detached, and no process inside can name (signal,
// ptrace) one outside. Without CAP_SYS_ADMIN the namespace is made through
// a user namespace that maps the user's own uid and gid to themselves
// (and nothing else), so the process keeps its identity and its files
// stay the user's. The maps are written by the thread that starts the
// process (Go's UidMappings); a confined start cannot write them from its
// restricted thread (Landlock refuses /proc), so StartRestricted writes
// them itself: see WriteIDMaps.
func SetNamespace(a *syscall.SysProcAttr) {
	a.Cloneflags |= syscall.CLONE_NEWPID
	if hostCanUnshare() {
		return
	}
	a.Cloneflags |= syscall.CLONE_NEWUSER
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
}

// Namespaced reports whether a starts its process in a PID namespace.
func Namespaced(a *syscall.SysProcAttr) bool {
	return a != nil && a.Cloneflags&syscall.CLONE_NEWPID != 0
}

// deferIDMaps takes the uid and gid maps off a (the thread that starts the
// process will not write them) and returns them for writeIDMaps; nil where
// a makes no user namespace.
func deferIDMaps(a *syscall.SysProcAttr) *idMaps {
	if a == nil || a.Cloneflags&syscall.CLONE_NEWUSER == 0 {
		return nil
	}
	m := &idMaps{uid: a.UidMappings, gid: a.GidMappings}
	a.UidMappings, a.GidMappings = nil, nil
	return m
}

type idMaps struct{ uid, gid []syscall.SysProcIDMap }

// write writes the maps of the user namespace of process pid, from the
// parent user namespace (as its owner): setgroups "deny" first, as the
// kernel requires of an unprivileged writer of gid_map.
func (m *idMaps) write(pid int) error {
	if m == nil {
		return nil
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	line := func(ms []syscall.SysProcIDMap) string {
		var b strings.Builder
		for _, x := range ms {
			fmt.Fprintf(&b, "%d %d %d\n", x.ContainerID, x.HostID, x.Size)
		}
		return b.String()
	}
	for _, f := range []struct{ name, data string }{
		{"setgroups", "deny"}, {"uid_map", line(m.uid)}, {"gid_map", line(m.gid)},
	} {
		if err := os.WriteFile(dir+f.name, []byte(f.data), 0); err != nil {
			return fmt.Errorf("proc: writing the user namespace's %s: %w", f.name, err)
		}
	}
	return nil
}

// A DeathWatch kills one process, a namespace's PID 1 that has no
// parent-death signal (a confined one: the thread that started it is
// gone), when the host dies: a shell waiting to read a pipe only the host
// writes, which the kernel closes when the host ends however it ends; the
// shell then SIGKILLs the process, and with it the kernel every process of
// its namespace. A process inside the namespace cannot name the shell to
// signal it. Stop ends the shell first, before the process is reaped (its
// pid then names nothing, or another process).
type DeathWatch struct {
	cmd  *exec.Cmd
	pipe *os.File // the host's write end
	once sync.Once
}

// deathScript kills $1 when its stdin ends without a line.
const deathScript = `read -r _ || kill -KILL "$1"`

// WatchDeath starts a DeathWatch for pid, or returns nil where no shell
// can be started (the process then outlives a host that dies, unless it
// exits on its stdin's end).
func WatchDeath(pid int) *DeathWatch {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", deathScript, "sh", strconv.Itoa(pid))
	cmd.Stdin = r
	// A process group of its own: the terminal's Ctrl-C for the host must
	// not end the watch before it is needed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil
	}
	return &DeathWatch{cmd: cmd, pipe: w}
}

// Stop ends the watch without killing its process and waits for the
// shell. It is idempotent, and safe on nil.
func (d *DeathWatch) Stop() {
	if d == nil {
		return
	}
	d.once.Do(func() {
		_, _ = d.pipe.Write([]byte("\n"))
		d.pipe.Close()
		_ = d.cmd.Wait()
	})
}
