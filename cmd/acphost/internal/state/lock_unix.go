//go:build unix

package state

import (
	"fmt"
	"os"
	"syscall"
)

// oNoFollow makes opening a symbolic link fail.
const oNoFollow = syscall.O_NOFOLLOW

// oNonBlock makes opening a FIFO for writing fail rather than wait.
const oNonBlock = syscall.O_NONBLOCK

// checkOwnFile refuses an opened file that is not a regular file of the
// user's own, and makes it 0600: what it will hold is for the user alone.
func checkOwnFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file: refusing to write to it", f.Name())
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to another user: refusing to write to it", f.Name())
	}
	return f.Chmod(0o600)
}

// CheckPrivateDir refuses a directory that is a symbolic link, is not the
// user's, or that group or others may write.
func CheckPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir():
		return fmt.Errorf("%s is not a directory of its own (a symbolic link?): refusing to trust it", dir)
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to another user: refusing to trust it", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s may be written by others (mode %o): refusing to trust it; chmod go-w it", dir, fi.Mode().Perm())
	}
	return nil
}

// lockFile takes an exclusive flock on f, waiting for it.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
