//go:build !(aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris || zos)

package tty

import "golang.org/x/term"

// rawMode is golang.org/x/term's MakeRaw: Ctrl-C then arrives as a key,
// which the editor turns into an interrupt.
func rawMode(fd int) (restore func() error, err error) {
	st, err := term.MakeRaw(fd)
	if err != nil {
		return nil, err
	}
	return func() error { return term.Restore(fd, st) }, nil
}
