//go:build linux

package confine

import (
	"encoding/binary"
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// The Landlock system calls have these numbers on every architecture.
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
)

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
	return r
}

// restrictThread confines the calling OS thread.
func restrictThread(abi int, writable []string) error {
	handled := writeRights(abi)
	attr := struct{ handledAccessFS uint64 }{handled}
	fd, _, errno := syscall.Syscall(sysCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("confine: creating the ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer syscall.Close(ruleset)
	for _, dir := range writable {
		if err := allow(ruleset, dir, handled); err != nil {
			return err
		}
	}
	devices := uint64(accessWriteFile)
	if abi >= 3 {
		devices |= accessTruncate // "> /dev/null" opens with O_TRUNC
	}
	if err := allow(ruleset, "/dev", devices); err != nil {
		return err
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("confine: no_new_privs: %w", errno)
	}
	if _, _, errno := syscall.RawSyscall(sysRestrictSelf, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("confine: restricting: %w", errno)
	}
	return nil
}

// allow grants rights beneath the directory dir.
func allow(ruleset int, dir string, rights uint64) error {
	fd, err := syscall.Open(dir, oPath|syscall.O_CLOEXEC|syscall.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("confine: writable directory %s: %w", dir, err)
	}
	defer syscall.Close(fd)
	// struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
	var rule [12]byte
	binary.NativeEndian.PutUint64(rule[:8], rights)
	binary.NativeEndian.PutUint32(rule[8:], uint32(int32(fd)))
	if _, _, errno := syscall.Syscall6(sysAddRule, uintptr(ruleset), rulePathBeneath, uintptr(unsafe.Pointer(&rule[0])), 0, 0, 0); errno != 0 {
		return fmt.Errorf("confine: writable directory %s: %w", dir, errno)
	}
	return nil
}
