//go:build !unix

package state

import (
	"fmt"
	"os"
)

// oNoFollow: no such open flag here; the directory check stands alone.
const oNoFollow = 0

// oNonBlock: no FIFOs to wait on here.
const oNonBlock = 0

// checkOwnFile refuses what is not a regular file; who owns it is not
// told by file modes here.
func checkOwnFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: refusing to write to it", f.Name())
	}
	return nil
}

// CheckPrivateDir checks nothing here: file modes do not say who may write
// here (Windows ACLs, or no such notion); the user's profile directory is
// trusted.
func CheckPrivateDir(string) error { return nil }
