//go:build aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris || zos

package tty

import "golang.org/x/sys/unix"

// rawMode puts the terminal fd in the line editor's mode: as
// golang.org/x/term's MakeRaw (no echo, no line buffering, keys as they
// come), except that ISIG stays on, so that Ctrl-C is still SIGINT (the
// handler that cancels a turn or quits), and OPOST stays on, so that a
// newline written by anyone (stderr, the agent's --stderr -) still
// returns the carriage.
func rawMode(fd int) (restore func() error, err error) {
	old, err := unix.IoctlGetTermios(fd, ioctlReadTermios)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, ioctlWriteTermios, &t); err != nil {
		return nil, err
	}
	return func() error { return unix.IoctlSetTermios(fd, ioctlWriteTermios, old) }, nil
}
