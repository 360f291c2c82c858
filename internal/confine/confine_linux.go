//go:build linux

package confine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// The Landlock system calls have these numbers on every architecture Go
// supports but MIPS, where the call fails and Landlock reads as missing.
const (
	sysCreateRuleset = 444
	sysAddRule       = 445
	sysRestrictSelf  = 446

	createRulesetVersion = 1 << 0
	rulePathBeneath      = 1

	prSetNoNewPrivs = 38
	oPath           = 0x200000 // O_PATH on every architecture Go supports
)

// Landlock file-system access rights that modify the file system.
const (
	accessWriteFile  = 1 << 1
	accessRemoveDir  = 1 << 4
	accessRemoveFile = 1 << 5
	accessMakeChar   = 1 << 6
	accessMakeDir    = 1 << 7
	accessMakeReg    = 1 << 8
	accessMakeSock   = 1 << 9
	accessMakeFifo   = 1 << 10
	accessMakeBlock  = 1 << 11
	accessMakeSym    = 1 << 12
	accessRefer      = 1 << 13 // ABI 2: moving and linking across directories
	accessTruncate   = 1 << 14 // ABI 3
	accessIoctlDev   = 1 << 15 // ABI 5: ioctl on device files (TIOCSTI into a terminal)
)

// Landlock scopes (ABI 6): what a confined process may not reach outside
// its own domain.
const (
	scopeAbstractUnixSocket = 1 << 0
	scopeSignal             = 1 << 1
)

// rulesetAttr is struct landlock_ruleset_attr as of ABI 6. Older kernels
// take a prefix of it: the size passed says which fields are there.
type rulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64 // ABI 4; left 0: the network is not restricted
	scoped           uint64 // ABI 6
}

// rulesetAttrSize is the size of the prefix of rulesetAttr that an ABI
// knows and this package uses: only handled_access_fs before ABI 6 (the
// net field alone adds nothing), all three from it.
func rulesetAttrSize(abi int) uintptr {
	if abi >= 6 {
		return unsafe.Sizeof(rulesetAttr{})
	}
	return unsafe.Sizeof(uint64(0))
}

// devices are the device files a confined process may write, with the
// rights it gets there (those the kernel's ABI handles): the sinks programs
// redirect to ("> /dev/null" opens with O_TRUNC), and the pseudo-terminals
// shell tools (node-pty, script, expect) open, with ioctl.
var devices = []struct {
	path   string
	rights uint64
}{
	{"/dev/null", accessWriteFile | accessTruncate},
	{"/dev/zero", accessWriteFile | accessTruncate},
	{"/dev/full", accessWriteFile | accessTruncate},
	{"/dev/ptmx", accessWriteFile | accessTruncate | accessIoctlDev},
	{"/dev/pts", accessWriteFile | accessTruncate | accessIoctlDev},
}

var abiOnce = sync.OnceValue(func() int {
	v, _, errno := syscall.Syscall(sysCreateRuleset, 0, 0, createRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(v)
})

func abi() int { return abiOnce() }

// writeRights are the rights this package restricts, for an ABI version.
func writeRights(abi int) uint64 {
	r := uint64(accessWriteFile | accessRemoveDir | accessRemoveFile | accessMakeChar | accessMakeDir |
		accessMakeReg | accessMakeSock | accessMakeFifo | accessMakeBlock | accessMakeSym)
	if abi >= 2 {
		r |= accessRefer
	}
	if abi >= 3 {
		r |= accessTruncate
	}
	if abi >= 5 {
		r |= accessIoctlDev
	}
	return r
}

// restrictThread confines the calling OS thread.
func restrictThread(abi int, writable []string) error {
	handled := writeRights(abi)
	attr := rulesetAttr{handledAccessFS: handled}
	if abi >= 6 {
		attr.scoped = scopeSignal | scopeAbstractUnixSocket
	}
	fd, _, errno := syscall.Syscall(sysCreateRuleset, uintptr(unsafe.Pointer(&attr)), rulesetAttrSize(abi), 0)
	if errno != 0 {
		return fmt.Errorf("confine: creating the ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer syscall.Close(ruleset)
	for _, dir := range writable {
		if err := allow(ruleset, dir, handled, syscall.O_DIRECTORY); err != nil {
			return err
		}
	}
	for _, dev := range devices {
		if err := allow(ruleset, dev.path, dev.rights&handled, 0); err != nil && !errors.Is(err, syscall.ENOENT) {
			return err
		}
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("confine: no_new_privs: %w", errno)
	}
	if _, _, errno := syscall.RawSyscall(sysRestrictSelf, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("confine: restricting: %w", errno)
	}
	return nil
}

// allow grants rights on path: beneath it for a directory (flag
// O_DIRECTORY), on the file itself otherwise.
func allow(ruleset int, path string, rights uint64, flag int) error {
	fd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC|flag, 0)
	if err != nil {
		return fmt.Errorf("confine: writable %s: %w", path, err)
	}
	defer syscall.Close(fd)
	// struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
	var rule [12]byte
	binary.NativeEndian.PutUint64(rule[:8], rights)
	binary.NativeEndian.PutUint32(rule[8:], uint32(int32(fd)))
	if _, _, errno := syscall.Syscall6(sysAddRule, uintptr(ruleset), rulePathBeneath, uintptr(unsafe.Pointer(&rule[0])), 0, 0, 0); errno != 0 {
		return fmt.Errorf("confine: writable %s: %w", path, errno)
	}
	return nil
}

// ErrInheritedNoNewPrivs is returned by RestrictedThreads in a process
// that was started with no_new_privs (a container, a systemd unit): every
// thread has it, so it tells nothing.
var ErrInheritedNoNewPrivs = errors.New("confine: the process runs with no_new_privs already")

func onMainThread() bool { return syscall.Gettid() == syscall.Getpid() }

// RestrictedThreads lists the threads of this process that carry
// no_new_privs, which RestrictThread sets: after the goroutines that
// started confined processes have ended, there should be none. Tests use it
// to prove that the restriction never leaks to the host.
func RestrictedThreads() ([]int, error) {
	if main, err := os.ReadFile("/proc/self/status"); err != nil {
		return nil, err
	} else if bytes.Contains(main, []byte("NoNewPrivs:\t1")) {
		return nil, ErrInheritedNoNewPrivs // the main thread is never restricted: the host runs with it
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var restricted []int
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		status, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err == nil && bytes.Contains(status, []byte("NoNewPrivs:\t1")) {
			restricted = append(restricted, tid)
		}
	}
	return restricted, nil
}
