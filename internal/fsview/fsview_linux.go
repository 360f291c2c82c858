//go:build linux

package fsview

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/confine"
)

// marker names the environment variable that turns a start of the host's
// executable into the maker of a view: "SPEC,STATUS", the descriptors of
// the request to read and of the pipe to report a failure on.
const marker = "_ACPHOST_FSVIEW"

// setupWait bounds how long Start waits for the process to make its view
// and start its program.
const setupWait = 30 * time.Second

// request is what the host sends the process it started.
type request struct {
	View     View
	Landlock []string // what the program may write besides the view's places
	Path     string   // the program
	Args     []string
	Env      []string
	UserNS   bool // made through a user namespace (overlays take userxattr)
	Scratch  int  // the descriptor of View.Scratch in the process
}

// Start starts cmd's program in view v, confined by Landlock to writing
// only the view's Overlay and Writable trees and landlock (with the devices
// package confine allows). cmd's SysProcAttr gets a mount namespace (and,
// without CAP_SYS_ADMIN, a user namespace mapping the user's own ids, if it
// has none yet). cmd must be unstarted and is Wait-ed by the caller after a
// nil return; on error nothing is left running, and an error matching
// ErrUnavailable means the view could not be had (the caller may start cmd
// otherwise).
func Start(cmd *exec.Cmd, v View, landlock []string) error {
	if cmd.Err != nil {
		return cmd.Err
	}
	req := request{View: v, Landlock: landlock, Path: cmd.Path, Args: cmd.Args, Env: cmd.Env}
	if req.Env == nil {
		req.Env = os.Environ()
	}
	// The scratch directory by its descriptor, never by a link: it lies
	// where an earlier program may have written (a client's TMPDIR).
	scratch, err := openScratch(v.Scratch)
	if err != nil {
		return err
	}
	defer scratch.Close()
	specR, specW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer specW.Close()
	statR, statW, err := os.Pipe()
	if err != nil {
		specR.Close()
		return err
	}
	defer statR.Close()
	n := 3 + len(cmd.ExtraFiles)
	req.Scratch = n + 2
	cmd.ExtraFiles = append(cmd.ExtraFiles, specR, statW, scratch)
	cmd.Path, cmd.Args = "/proc/self/exe", []string{argv0}
	cmd.Env = append(slices.Clip(req.Env), marker+"="+strconv.Itoa(n)+","+strconv.Itoa(n+1))
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	req.UserNS = addNamespaces(cmd.SysProcAttr)
	err = cmd.Start()
	specR.Close()
	statW.Close()
	scratch.Close()
	if err != nil {
		if probe := namespacesProbe(); probe != nil {
			return unavailable(probe)
		}
		return err // refused for another reason than the view's (a cgroup, a limit, the directory)
	}
	fail := func(err error) error {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	_ = specW.SetWriteDeadline(time.Now().Add(setupWait))
	if err := json.NewEncoder(specW).Encode(req); err != nil {
		return fail(fmt.Errorf("fsview: sending the view: %w", err))
	}
	specW.Close()
	_ = statR.SetReadDeadline(time.Now().Add(setupWait))
	report, err := io.ReadAll(io.LimitReader(statR, 4096))
	switch {
	case err != nil:
		return fail(fmt.Errorf("fsview: waiting for the view: %w", err))
	case len(report) > 0:
		return fail(reported(string(report)))
	}
	return nil
}

// openScratch opens dir, which must be a directory itself, not a link to
// one: a link would have the view's memory mounted wherever it points
// (over /proc, where the view then cannot be made, and the caller would
// run the program without it). Its error is not ErrUnavailable.
func openScratch(dir string) (*os.File, error) {
	fd, err := syscall.Open(dir, oPath|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fsview: the scratch directory %s: %w", dir, err)
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// reported is the error a process reported: view errors match
// ErrUnavailable; the program's own start (exec) does not.
func reported(s string) error {
	if rest, ok := strings.CutPrefix(s, "view: "); ok {
		return unavailable(errors.New(rest))
	}
	return errors.New(strings.TrimPrefix(s, "exec: "))
}

// namespacesProbe reports why a process with the namespaces of a view
// cannot be started here (nil if it can), trying once per host process:
// a start that fails is the view's only if this fails too.
var namespacesProbe = sync.OnceValue(func() error {
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	addNamespaces(cmd.SysProcAttr)
	return cmd.Run()
})

// addNamespaces adds a mount namespace to a, through a user namespace
// unless this process holds CAP_SYS_ADMIN, and reports whether a makes a
// user namespace. The user keeps their own uid there, so the process would
// lose the namespace's capabilities when it executes the host again:
// CAP_SYS_ADMIN (to mount) and CAP_DAC_OVERRIDE (overlayfs makes its work
// directory with the mounter's credentials) are kept across that exec as
// ambient capabilities, and dropped before the program runs
// (dropCapabilities). In the namespace only the user's own ids are
// mapped, so neither reaches a file that is not the user's.
func addNamespaces(a *syscall.SysProcAttr) bool {
	a.Cloneflags |= syscall.CLONE_NEWNS
	if a.Cloneflags&syscall.CLONE_NEWUSER == 0 && !cgroup.HasCapSysAdmin() {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	if a.Cloneflags&syscall.CLONE_NEWUSER == 0 {
		return false
	}
	if os.Geteuid() != 0 {
		a.AmbientCaps = append(a.AmbientCaps, capDACOverride, capSysAdmin)
	}
	return true
}

const (
	capDACOverride = 1
	capSysAdmin    = 21
)

// rootKeeps are the capabilities a program started as root keeps in its
// view: Docker's default set, which acts on files and processes the view
// and Landlock already bound. Those that reach past them go, in every set,
// the bounding one included so that no program it runs gets them back:
// CAP_SYS_ADMIN (namespaces of other processes, mounts), CAP_SYS_MODULE
// and CAP_BPF (the kernel itself), CAP_SYS_RAWIO (I/O ports, raw devices),
// CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH (open_by_handle_at) and the like.
var rootKeeps = []uint{0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 27, 29, 31} // CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP

// dropCapabilities leaves this process (and so the program it executes)
// no capability as a normal user (ambient, inheritable, permitted and
// effective), and as root only rootKeeps (the bounding set too).
func dropCapabilities(root bool) error {
	const prCapAmbient, prCapAmbientClearAll, prCapbsetDrop = 47, 4, 24
	var keep uint64
	if root {
		for _, c := range rootKeeps {
			keep |= 1 << c
		}
		for c := uint(0); c < 64; c++ {
			if keep&(1<<c) != 0 {
				continue
			}
			// EINVAL: past the last capability this kernel knows. EPERM:
			// no CAP_SETPCAP; no_new_privs (set by Landlock's confinement)
			// then alone keeps the program within the permitted set.
			if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, uintptr(c), 0); errno != 0 {
				break
			}
		}
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("clearing ambient capabilities: %v", errno)
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: 0x20080522} // _LINUX_CAPABILITY_VERSION_3
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("reading capabilities: %v", errno)
	}
	for i := range data {
		data[i].permitted &= uint32(keep >> (32 * i))
		data[i].effective, data[i].inheritable = data[i].permitted, 0
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("dropping capabilities: %v", errno)
	}
	return nil
}

// init makes the view when this process was started by Start, and
// replaces itself with the program; it returns at once in any other.
func init() {
	spec, stat, ok := started()
	if !ok {
		return
	}
	status := os.NewFile(uintptr(stat), "status")
	syscall.CloseOnExec(stat)
	err := become(spec)
	// Only a failure comes back: a successful exec never returns.
	_, _ = status.WriteString(err.Error())
	syscall.Exit(126)
}

// argv0 is the name Start gives the process it starts.
const argv0 = "acphost-fsview"

// started reports whether this process was started by Start, and the
// descriptors of its request and status pipes: its name is argv0 and the
// marker names two descriptors past the standard ones. A program that only
// inherited the marker (a tool that passes its environment on, a shell rc
// file) runs as itself.
func started() (spec, stat int, ok bool) {
	fds, ok := syscall.Getenv(marker)
	if !ok || len(os.Args) != 1 || os.Args[0] != argv0 {
		return 0, 0, false
	}
	specFD, statFD, _ := strings.Cut(fds, ",")
	spec, err1 := strconv.Atoi(specFD)
	stat, err2 := strconv.Atoi(statFD)
	if err1 != nil || err2 != nil || spec < 3 || stat < 3 || spec == stat {
		return 0, 0, false
	}
	return spec, stat, true
}

// become reads the request, makes the view, confines this process and
// executes the program; it returns only why it could not.
func become(specFD int) error {
	// Every descriptor from the request's on is this package's or one the
	// host held without close-on-exec (inherited, or opened outside Go's
	// os package); the program gets none of them: through one of the real
	// tree it would write what the view shows read-only.
	const sysCloseRange, closeRangeCloexec = 436, 1 << 2
	if _, _, errno := syscall.RawSyscall(sysCloseRange, uintptr(specFD), ^uintptr(0), closeRangeCloexec); errno != 0 {
		return fmt.Errorf("view: closing the host's descriptors on exec: %v", errno)
	}
	spec := os.NewFile(uintptr(specFD), "view")
	var req request
	err := json.NewDecoder(spec).Decode(&req)
	spec.Close()
	if err != nil {
		return fmt.Errorf("view: reading the request: %v", err)
	}
	writable, err := makeView(req.View, req.Scratch, req.UserNS)
	syscall.Close(req.Scratch)
	if err != nil {
		return fmt.Errorf("view: %v", err)
	}
	if req.View.Dir != "" {
		if err := syscall.Chdir(req.View.Dir); err != nil {
			return fmt.Errorf("view: entering %s: %v", req.View.Dir, err)
		}
	}
	if err := dropCapabilities(os.Geteuid() == 0); err != nil {
		return fmt.Errorf("view: %v", err)
	}
	if err := confine.RestrictThread(append(writable, req.Landlock...)); err != nil {
		return fmt.Errorf("view: %v", err)
	}
	env := slices.DeleteFunc(req.Env, func(kv string) bool { return strings.HasPrefix(kv, marker+"=") })
	err = syscall.Exec(req.Path, req.Args, env)
	return fmt.Errorf("exec: %s: %v", req.Path, err)
}

// Mount calls the syscall package lacks (numbers shared by every
// architecture Go supports but MIPS).
const (
	sysOpenTree     = 428
	sysMoveMount    = 429
	sysMountSetattr = 442

	openTreeClone       = 1
	openTreeCloexec     = syscall.O_CLOEXEC
	atRecursive         = 0x8000
	atEmptyPath         = 0x1000
	atFDCWD             = ^uintptr(99) // -100
	moveMountFEmptyPath = 0x4
	mountAttrRdonly     = 0x1
	oPath               = 0x200000 // O_PATH on every architecture Go supports
)

// mountAttr is struct mount_attr, version 0 (MOUNT_ATTR_SIZE_VER0).
type mountAttr struct{ set, clr, propagation, userns uint64 }

// makeView makes v in this process's (new) mount namespace and returns the
// directories Landlock is to let the program write: the overlays and the
// writable directories that exist.
func makeView(v View, scratchDir int, userNS bool) ([]string, error) {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("making the mounts private: %v", err)
	}
	if err := ownTerminals(); err != nil {
		return nil, err
	}
	// The real trees, taken before any overlay hides them.
	readOnly, err := cloneTrees(v.ReadOnly)
	if err != nil {
		return nil, err
	}
	writable, err := cloneTrees(v.Writable)
	if err != nil {
		return nil, err
	}
	size := v.ScratchBytes
	if size <= 0 {
		size = DefaultScratchBytes
	}
	// The scratch memory by its descriptor: an overlay over a tree that
	// holds v.Scratch hides it from its path.
	scratch, err := scratchMemory(v.Scratch, scratchDir, size)
	if err != nil {
		return nil, fmt.Errorf("the scratch memory at %s: %v", v.Scratch, err)
	}
	defer syscall.Close(scratch)
	scratchPath := "/proc/self/fd/" + strconv.Itoa(scratch)
	outer, inner := splitOverlays(v.Overlay, v.ReadOnly)
	var places []string
	layer := 0
	overlay := func(dirs []string) error {
		for _, d := range dirs {
			layer++
			if err := mountOverlay(d, filepath.Join(scratchPath, strconv.Itoa(layer)), userNS); err != nil {
				return err
			}
			places = append(places, d)
		}
		return nil
	}
	if err := overlay(outer); err != nil {
		return nil, err
	}
	// Writable before read-only: a writable directory that holds a
	// read-only tree must not uncover it.
	for _, t := range writable {
		if err := t.attach(false); err != nil {
			return nil, err
		}
		places = append(places, t.path)
	}
	for _, t := range readOnly {
		if err := t.attach(true); err != nil {
			return nil, err
		}
	}
	if err := overlay(inner); err != nil {
		return nil, err
	}
	return places, nil
}

// scratchMemory mounts a tmpfs of size bytes on the directory at path,
// which must be the one the host opened (checked: never where a link
// points), and returns a descriptor of that tmpfs's root (reopening the
// directory by a descriptor would give the directory under it).
func scratchMemory(path string, checked int, size int64) (int, error) {
	// The descriptor the host checked is of its own namespace, where
	// nothing can be mounted from here: the same directory is opened
	// again here, and must be that one.
	dir, err := syscall.Open(path, oPath|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer syscall.Close(dir)
	var a, b syscall.Stat_t
	if err := syscall.Fstat(dir, &a); err != nil {
		return -1, err
	}
	if err := syscall.Fstat(checked, &b); err != nil {
		return -1, err
	}
	if a.Dev != b.Dev || a.Ino != b.Ino {
		return -1, errors.New("replaced since the host opened it")
	}
	const (
		sysFsopen, sysFsconfig, sysFsmount   = 430, 431, 432
		fsopenCloexec, fsmountCloexec        = 1, 1
		fsconfigSetString, fsconfigCmdCreate = 1, 6
		mountAttrNosuid, mountAttrNodev      = 0x2, 0x4
		moveMountTEmptyPath                  = 0x40
	)
	name, _ := syscall.BytePtrFromString("tmpfs")
	fs, _, errno := syscall.Syscall(sysFsopen, uintptr(unsafe.Pointer(name)), fsopenCloexec, 0)
	if errno != 0 {
		return -1, errno
	}
	defer syscall.Close(int(fs))
	for _, kv := range [][2]string{{"source", "acphost-view"}, {"mode", "0700"}, {"size", strconv.FormatInt(size, 10)}} {
		k, _ := syscall.BytePtrFromString(kv[0])
		val, _ := syscall.BytePtrFromString(kv[1])
		if _, _, errno := syscall.Syscall6(sysFsconfig, fs, fsconfigSetString, uintptr(unsafe.Pointer(k)), uintptr(unsafe.Pointer(val)), 0, 0); errno != 0 {
			return -1, fmt.Errorf("%s=%s: %v", kv[0], kv[1], errno)
		}
	}
	if _, _, errno := syscall.Syscall6(sysFsconfig, fs, fsconfigCmdCreate, 0, 0, 0, 0); errno != 0 {
		return -1, errno
	}
	m, _, errno := syscall.Syscall(sysFsmount, fs, fsmountCloexec, mountAttrNosuid|mountAttrNodev)
	if errno != 0 {
		return -1, errno
	}
	empty, _ := syscall.BytePtrFromString("")
	if _, _, errno := syscall.Syscall6(sysMoveMount, m, uintptr(unsafe.Pointer(empty)), uintptr(dir), uintptr(unsafe.Pointer(empty)),
		moveMountFEmptyPath|moveMountTEmptyPath, 0); errno != 0 {
		syscall.Close(int(m))
		return -1, errno
	}
	return int(m), nil
}

// ownTerminals gives the view a pseudo-terminal file system of its own on
// /dev/pts: the user's terminals (the one acphost runs in, other shells')
// are not there to be opened — and typed into (TIOCSTI: a command the
// user's shell runs outside every confinement) — while /dev/ptmx makes
// the program's own (the kernel takes the instance at "pts" beside it).
func ownTerminals() error {
	if !exists("/dev/pts") {
		return nil
	}
	if err := syscall.Mount("devpts", "/dev/pts", "devpts", syscall.MS_NOSUID|syscall.MS_NOEXEC,
		"newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("a terminal file system of its own on /dev/pts: %v", err)
	}
	return nil
}

// splitOverlays sorts the overlay trees that exist into those outside
// every read-only tree (mounted first) and those inside one (mounted over
// its read-only view), dropping in each a tree that lies in another.
func splitOverlays(overlays, readOnly []string) (outer, inner []string) {
	dirs := slices.Clone(overlays)
	slices.SortFunc(dirs, func(a, b string) int { return len(a) - len(b) })
	within := func(dirs []string, d string) bool {
		return slices.ContainsFunc(dirs, func(k string) bool { return confine.Within(k, d) })
	}
	for _, d := range dirs {
		switch {
		case !exists(d):
		case within(readOnly, d):
			if !within(inner, d) {
				inner = append(inner, d)
			}
		case !within(outer, d):
			outer = append(outer, d)
		}
	}
	return outer, inner
}

func exists(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}

// mountOverlay mounts a copy-on-write overlay over dir whose upper layer
// and work directory are made under scratch.
func mountOverlay(dir, scratch string, userNS bool) error {
	upper, work := filepath.Join(scratch, "upper"), filepath.Join(scratch, "work")
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	lower, err := syscall.Open(dir, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("overlay on %s: %v", dir, err)
	}
	defer syscall.Close(lower)
	// The lower tree by its descriptor: a path with ',' or ':' would be
	// read as more options or more layers.
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=%s,workdir=%s", lower, upper, work)
	if userNS {
		err = syscall.Mount("overlay", dir, "overlay", 0, opts+",userxattr")
		if err == nil {
			return nil
		}
	}
	if err = syscall.Mount("overlay", dir, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay on %s: %v", dir, err)
	}
	return nil
}

// tree is a detached copy of a real directory's mounts, to attach at its
// path once the overlays are in place.
type tree struct {
	path string
	fd   int
}

// cloneTrees copies the mount trees at dirs (those that exist).
func cloneTrees(dirs []string) ([]tree, error) {
	var out []tree
	for _, d := range dirs {
		if !exists(d) {
			continue
		}
		fd, err := openTree(d)
		if err != nil {
			return nil, fmt.Errorf("taking %s: %v", d, err)
		}
		out = append(out, tree{path: d, fd: fd})
	}
	return out, nil
}

func openTree(dir string) (int, error) {
	p, err := syscall.BytePtrFromString(dir)
	if err != nil {
		return -1, err
	}
	fd, _, errno := syscall.Syscall(sysOpenTree, atFDCWD, uintptr(unsafe.Pointer(p)),
		openTreeClone|openTreeCloexec|atRecursive)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// attach mounts t at its path, read-only (every mount of it) if ro.
func (t tree) attach(ro bool) error {
	empty, _ := syscall.BytePtrFromString("")
	if ro {
		attr := mountAttr{set: mountAttrRdonly}
		if _, _, errno := syscall.Syscall6(sysMountSetattr, uintptr(t.fd), uintptr(unsafe.Pointer(empty)),
			atEmptyPath|atRecursive, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0); errno != 0 {
			return fmt.Errorf("making %s read-only: %v", t.path, errno)
		}
	}
	to, err := syscall.BytePtrFromString(t.path)
	if err != nil {
		return err
	}
	if _, _, errno := syscall.Syscall6(sysMoveMount, uintptr(t.fd), uintptr(unsafe.Pointer(empty)),
		atFDCWD, uintptr(unsafe.Pointer(to)), moveMountFEmptyPath, 0); errno != 0 {
		return fmt.Errorf("binding %s: %v", t.path, errno)
	}
	syscall.Close(t.fd)
	return nil
}
