//go:build linux

package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Group is one cgroup v2 directory holding one process tree. Its methods
// are safe for concurrent use.
type Group struct {
	dir  string
	fd   int // the open directory, for CLONE_INTO_CGROUP
	once sync.Once
	err  error
}

// host is this process's directory of groups.
var host struct {
	mu     sync.Mutex
	parent string // the host's own cgroup, where its directory is made
	name   string // acphost-<pid>-<start>
	err    error  // why there is none (sticky)
	probed bool
	made   bool // the directory exists
	refs   int  // live groups in it
	watch  *watcher
}

// seq numbers the groups of this process.
var seq atomic.Int64

// noKill makes Kill emulate cgroup.kill (tests of old kernels).
var noKill atomic.Bool

// New creates a group named prefix plus a number in this process's
// directory; see the package documentation. Call Remove when done.
func New(prefix string) (*Group, error) {
	host.mu.Lock()
	defer host.mu.Unlock()
	if !host.probed {
		host.probed = true
		host.parent, host.err = ownCgroup()
		if host.err == nil {
			host.name = hostName(os.Getpid())
			_, _ = sweepStale(host.parent, host.name)
		}
	}
	if host.err != nil {
		return nil, host.err
	}
	hostDir := filepath.Join(host.parent, host.name)
	if !host.made {
		if err := os.Mkdir(hostDir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, unavailable("creating %s: %v", hostDir, err)
		}
		host.made = true
		host.watch = watch(hostDir)
	}
	dir := filepath.Join(hostDir, prefix+strconv.FormatInt(seq.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		releaseLocked()
		return nil, unavailable("creating %s: %v", dir, err)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		releaseLocked()
		return nil, unavailable("opening %s: %v", dir, err)
	}
	host.refs++
	return &Group{dir: dir, fd: fd}, nil
}

// releaseLocked removes the host directory once no group is left in it;
// host.mu is held.
func releaseLocked() {
	if host.refs > 0 || !host.made {
		return
	}
	// By tree: an agent that could write there may have made groups of its
	// own beneath (and put processes in them).
	err := removeTree(filepath.Join(host.parent, host.name), time.Second)
	if err == nil {
		host.made = false
		host.watch.stop()
		host.watch = nil
	}
}

// Watched reports whether the host's watcher runs: a host that dies then
// has its groups killed whole, which makes a parent-death signal (and the
// locked thread it needs) unnecessary for their processes.
func (g *Group) Watched() bool {
	host.mu.Lock()
	defer host.mu.Unlock()
	return host.watch.watched()
}

// Path is the group's directory.
func (g *Group) Path() string { return g.dir }

// Attach has a process started with a enter the group as it is cloned
// and, where that keeps it in (the cgroup2 mount has nsdelegate, as
// systemd mounts it) and this process may (CAP_SYS_ADMIN), a cgroup
// namespace rooted at the group, made in the child once it is in the
// group: the kernel then refuses to move it to a group outside, even for a
// process that may write there. Without nsdelegate a namespace is no
// boundary, and a process that may write another group's cgroup.procs
// (root, or the owner of a delegated subtree; never a confined one) can
// leave its own.
func (g *Group) Attach(a *syscall.SysProcAttr) {
	a.UseCgroupFD, a.CgroupFD = true, g.fd
	if mayUnshareCgroup() {
		a.Unshareflags |= syscall.CLONE_NEWCGROUP
	}
}

// mayUnshareCgroup reports whether a cgroup namespace is a boundary here
// (nsdelegate) and this process holds CAP_SYS_ADMIN, which
// unshare(CLONE_NEWCGROUP) needs.
var mayUnshareCgroup = sync.OnceValue(func() bool { return nsDelegate() && HasCapSysAdmin() })

// HasCapSysAdmin reports whether this process holds CAP_SYS_ADMIN in its
// effective set (what unshare(2) of a cgroup or PID namespace needs
// without a user namespace).
var HasCapSysAdmin = sync.OnceValue(func() bool {
	const capSysAdmin = 21
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && caps&(1<<capSysAdmin) != 0
		}
	}
	return false
})

// Populated reports whether any process is left in the group or beneath.
func (g *Group) Populated() bool {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
	if err != nil {
		return false // gone
	}
	return bytes.Contains(b, []byte("populated 1"))
}

// Kill sends SIGKILL to every process in the group and its descendants.
func (g *Group) Kill() error { return kill(g.dir) }

// Remove kills what is left in the group, waits at most timeout for it to
// empty, and removes its directory (and any the processes made beneath
// it). It is idempotent; a group still populated at the deadline (a
// process in uninterruptible sleep) is left in place, and the error says
// so.
func (g *Group) Remove(timeout time.Duration) error {
	g.once.Do(func() {
		defer syscall.Close(g.fd)
		g.err = removeTree(g.dir, timeout)
		host.mu.Lock()
		host.refs--
		releaseLocked()
		host.mu.Unlock()
	})
	return g.err
}

func kill(dir string) error {
	if !noKill.Load() {
		err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return freezeAndKill(dir)
}

// freezeAndKill stands in for cgroup.kill (before Linux 5.14): frozen, the
// processes cannot fork, so the pids listed are all there are; SIGKILL ends
// frozen processes too.
func freezeAndKill(dir string) error {
	freeze := filepath.Join(dir, "cgroup.freeze")
	if err := os.WriteFile(freeze, []byte("1"), 0); err != nil {
		return fmt.Errorf("cgroup: freezing %s: %w", dir, err)
	}
	defer os.WriteFile(freeze, []byte("0"), 0)
	if err := waitEvent(dir, "frozen 1", time.Second); err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
}

// waitEvent polls dir's cgroup.events until it has line or timeout
// passes. (A write to cgroup.events is notified with inotify IN_MODIFY; a
// poll with growing intervals is as quick for the few milliseconds a kill
// takes, and simpler.)
func waitEvent(dir, line string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(line)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: %s: no %q after %v", dir, line, timeout)
		}
		time.Sleep(wait) // polling the kernel's state, with a deadline
	}
}

// removeTree kills everything in dir, waits for it to empty and removes
// dir and the groups beneath it, deepest first.
func removeTree(dir string, timeout time.Duration) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := kill(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cgroup: killing %s: %w", dir, err)
		}
		err := waitEvent(dir, "populated 0", min(time.Until(deadline), time.Second))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return err
		}
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && err != syscall.ENOENT {
			return fmt.Errorf("cgroup: removing %s: %w", dirs[i], err)
		}
	}
	return nil
}

// ownCgroup returns the directory of this process's cgroup v2 group, if
// it can hold groups of ours.
func ownCgroup() (string, error) {
	mount, root, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", unavailable("%v", err)
	}
	var own string
	found := false
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			own, found = p, true
		}
	}
	if !found {
		return "", unavailable("this process is in no cgroup v2 group (cgroup v1 only)")
	}
	rel, ok := strings.CutPrefix(own, root)
	if !ok && root != "/" {
		return "", unavailable("own cgroup %s is outside the cgroup2 mount's root %s", own, root)
	}
	dir := filepath.Join(mount, rel)
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return "", unavailable("own cgroup %s is not writable (no delegation): %v", dir, err)
	}
	return dir, nil
}

// cgroup2Mount finds the cgroup2 file system in /proc/self/mountinfo: its
// mount point and the cgroup path mounted there.
// nsDelegate reports whether the cgroup2 mount has the nsdelegate option.
func nsDelegate() bool {
	_, _, super, err := cgroup2MountInfo()
	return err == nil && slices.Contains(strings.Split(super, ","), "nsdelegate")
}

func cgroup2Mount() (mount, root string, err error) {
	mount, root, _, err = cgroup2MountInfo()
	return mount, root, err
}

// cgroup2MountInfo finds the cgroup2 mount: where, its root, and its super
// options.
func cgroup2MountInfo() (mount, root, super string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", "", unavailable("%v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, typ := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(typ) > 0 && typ[0] == "cgroup2" {
			if len(typ) > 2 {
				super = typ[2]
			}
			return unescape(fields[4]), unescape(fields[3]), super, nil
		}
	}
	return "", "", "", unavailable("no cgroup2 file system is mounted")
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hostName names the directory of the host process pid: its pid and its
// start time, so that a reused pid is not taken for the host.
func hostName(pid int) string {
	return fmt.Sprintf("acphost-%d-%d", pid, startTime(pid))
}

// startTime is field 22 of /proc/pid/stat (clock ticks since boot), or 0.
func startTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(fields[19], 10, 64)
	return n
}

// SweepStale removes the directories of dead hosts beside this process's
// own, killing what they still hold, and returns the ones it removed. New
// calls it once per process.
func SweepStale() ([]string, error) {
	parent, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	return sweepStale(parent, hostName(os.Getpid()))
}

func sweepStale(parent, own string) ([]string, error) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil, err
	}
	var swept []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		pid, start, ok := parseHostDir(name)
		if !e.IsDir() || name == own || !ok || start != 0 && startTime(pid) == start {
			continue // not ours, or a live host
		}
		dir := filepath.Join(parent, name)
		if err := removeTree(dir, 5*time.Second); err != nil {
			errs = append(errs, err)
			continue
		}
		swept = append(swept, dir)
	}
	return swept, errors.Join(errs...)
}
