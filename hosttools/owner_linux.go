package hosttools

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// ownerOf is connOwner: Linux tells who owns a socket.
var ownerOf = connOwner

// socketTables are the kernel's TCP socket tables of the host's network
// namespace. tcp6 also lists IPv4 connections made from IPv6 sockets (as
// ::ffff:a.b.c.d); a system without IPv6 has no tcp6.
var socketTables = []string{"/proc/net/tcp", "/proc/net/tcp6"}

// errNoOwner is why a connection is refused when its other end is not
// found with an owner.
var errNoOwner = errors.New("hosttools: the connection's other end has no owner in the socket tables")

// checkOwners fails when the socket tables cannot be read: every
// connection would then be refused.
func checkOwners() error {
	f, err := os.Open(socketTables[0])
	if err != nil {
		return fmt.Errorf("hosttools: the socket tables tell who connects to the host tools, and cannot be read: %w", err)
	}
	return f.Close()
}

// connOwner returns the uid owning the other end of c, a TCP connection
// accepted on the loopback: the socket whose local address is c's remote
// address and whose remote address is c's local one, in the socket tables
// (tcp6 read only when tcp has none: each read walks the kernel's whole
// table of connections, some milliseconds on a busy host).
func connOwner(c net.Conn) (int, error) {
	peer, err1 := addrPort(c.RemoteAddr())
	self, err2 := addrPort(c.LocalAddr())
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	for i, name := range socketTables {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) && i > 0 {
			continue // no IPv6
		}
		if err != nil {
			return 0, err
		}
		uid, ok, err := ownerIn(bufio.NewReaderSize(f, 64<<10), peer, self)
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("hosttools: %s: %w", name, err)
		}
		if ok {
			return uid, nil
		}
	}
	return 0, errNoOwner
}

func addrPort(a net.Addr) (netip.AddrPort, error) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("hosttools: %v is not a TCP address", a)
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// ownerIn reads a socket table (the text of /proc/net/tcp or tcp6) for
// the socket at local connected to remote, and returns its owner. Only a
// socket that still has its inode counts: a time-wait or orphaned socket
// (inode 0, which the kernel shows as owned by uid 0) is not found. The
// kernel keeps one live socket per pair of addresses: the first found is
// the one.
func ownerIn(table io.Reader, local, remote netip.AddrPort) (uid int, found bool, err error) {
	sc := bufio.NewScanner(table)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			return 0, false, fmt.Errorf("a row of %d fields", len(f))
		}
		l, err1 := parseSocketAddr(f[1])
		r, err2 := parseSocketAddr(f[2])
		if err := errors.Join(err1, err2); err != nil {
			return 0, false, err
		}
		if l != local || r != remote || f[9] == "0" {
			continue
		}
		u, err := strconv.Atoi(f[7])
		if err != nil || u < 0 {
			return 0, false, fmt.Errorf("a row's uid %q", f[7])
		}
		return u, true, nil
	}
	return 0, false, sc.Err()
}

// parseSocketAddr reads an address of a socket table: the address's
// 32-bit words in hex, each as the kernel holds it (native byte order),
// a colon, the port in hex. IPv4-mapped IPv6 addresses come out as IPv4.
func parseSocketAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || (len(h) != 8 && len(h) != 32) {
		return netip.AddrPort{}, fmt.Errorf("a socket address %q", s)
	}
	raw, err := hex.DecodeString(h)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("a socket address %q", s)
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}
