package hosttools

import (
	"net"
	"os"
)

// ownListener accepts only the connections whose other end is a socket of
// the host's own user, as owner finds it; any other, or one whose owner
// cannot be found, is closed at once, before a byte of it is read. On
// Linux owner reads the kernel's socket tables (ownerOf); elsewhere there
// is none and ln is served as it is (see the package doc).
type ownListener struct {
	net.Listener
	uid   int
	owner func(net.Conn) (uid int, err error)
}

// ownOnly returns ln, wrapped where the system tells a connection's owner.
func ownOnly(ln net.Listener) net.Listener {
	if ownerOf == nil {
		return ln
	}
	return &ownListener{Listener: ln, uid: os.Geteuid(), owner: ownerOf}
}

// Accept returns the next connection of the host's own user.
func (l *ownListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if uid, err := l.owner(c); err == nil && uid == l.uid {
			return c, nil
		}
		c.Close()
	}
}
