//go:build linux

package control

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// samePeer refuses a control connection whose other end runs as another
// user (SO_PEERCRED).
func samePeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("control socket: SO_PEERCRED: %w", cerr)
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("control socket: the peer runs as uid %d, not %d", cred.Uid, os.Geteuid())
	}
	return nil
}
