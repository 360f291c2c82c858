package hosttools

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tableAddr writes ap as the kernel's socket tables do (each 32-bit word
// of the address in native byte order, then the port), IPv4 as IPv4 and
// anything else as 16 bytes.
func tableAddr(ap netip.AddrPort) string {
	var raw []byte
	if ap.Addr().Is4() {
		b := ap.Addr().As4()
		raw = b[:]
	} else {
		b := ap.Addr().As16()
		raw = b[:]
	}
	var sb strings.Builder
	for i := 0; i < len(raw); i += 4 {
		fmt.Fprintf(&sb, "%08X", binary.NativeEndian.Uint32(raw[i:]))
	}
	return fmt.Sprintf("%s:%04X", sb.String(), ap.Port())
}

const tableHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

func tableRow(local, remote netip.AddrPort, state string, uid, inode int) string {
	return fmt.Sprintf("   0: %s %s %s 00000000:00000000 00:00000000 00000000 %5d        0 %d 1 0000000000000000 20 4 30 10 -1\n",
		tableAddr(local), tableAddr(remote), state, uid, inode)
}

// TestOwnerInCraftedTable: the owner is the uid of the socket at the
// connection's remote address connected to its local one; the host's own
// side, other connections, time-wait and orphaned sockets (inode 0, shown
// as uid 0) do not count; a table that cannot be read is an error.
func TestOwnerInCraftedTable(t *testing.T) {
	server := netip.MustParseAddrPort("127.0.0.1:40000")
	client := netip.MustParseAddrPort("127.0.0.1:51000")
	other := netip.MustParseAddrPort("127.0.0.1:51001")
	mapped := netip.AddrPortFrom(netip.AddrFrom16(client.Addr().As16()), client.Port())
	listen := netip.MustParseAddrPort("127.0.0.1:40000")
	any := netip.MustParseAddrPort("0.0.0.0:0")
	cases := []struct {
		name  string
		rows  string
		uid   int
		found bool
		err   bool
	}{
		{"another user's client", tableRow(listen, any, "0A", 0, 11) + tableRow(server, client, "01", 0, 12) + tableRow(client, server, "01", 65534, 13), 65534, true, false},
		{"the host's own client", tableRow(server, client, "01", 1000, 12) + tableRow(client, server, "01", 1000, 13), 1000, true, false},
		{"only the host's side", tableRow(server, client, "01", 1000, 12) + tableRow(other, server, "01", 1000, 14), 0, false, false},
		{"a time-wait or orphan", tableRow(client, server, "06", 0, 0), 0, false, false},
		{"an IPv4-mapped client", tableRow(mapped, netip.AddrPortFrom(netip.AddrFrom16(server.Addr().As16()), server.Port()), "01", 65534, 15), 65534, true, false},
		{"a time-wait then the live one", tableRow(client, server, "06", 0, 0) + tableRow(client, server, "01", 65534, 16), 65534, true, false},
		{"a short row", "   0: 0100007F:0CEA\n", 0, false, true},
		{"a bad address", strings.Replace(tableRow(client, server, "01", 1000, 13), tableAddr(client), "XYZ:0", 1), 0, false, true},
		{"a bad uid", strings.Replace(tableRow(client, server, "01", 1000, 13), " 1000 ", " -x ", 1), 0, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			uid, found, err := ownerIn(strings.NewReader(tableHeader+c.rows), client, server)
			if c.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.found, found)
			assert.Equal(t, c.uid, uid)
		})
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 { // a little-endian machine: a row as Linux wrote it
		real := tableHeader + "   1: 0100007F:C738 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 20 4 30 10 -1\n"
		uid, found, err := ownerIn(strings.NewReader(real), netip.MustParseAddrPort("127.0.0.1:51000"), server)
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, 1000, uid)
	}
}

// TestOwnerOfOwnConnection: a connection the test makes to a loopback
// listener is found in the kernel's tables as the test's own user's.
func TestOwnerOfOwnConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s, err := ln.Accept()
	require.NoError(t, err)
	defer s.Close()
	uid, err := connOwner(s)
	require.NoError(t, err)
	assert.Equal(t, os.Geteuid(), uid)
}

// TestOwnListenerRefusesOthers: the endpoint's listener closes, unread, a
// connection of another owner or of an owner not found, and hands on the
// next one of its own user.
func TestOwnListenerRefusesOthers(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	owners := make(chan error, 3)
	owners <- nil
	owners <- errNoOwner
	owners <- nil
	uids := []int{os.Geteuid() + 1, 0, os.Geteuid()}
	n := 0
	ln := &ownListener{Listener: inner, uid: os.Geteuid(), owner: func(net.Conn) (int, error) {
		uid := uids[n]
		n++
		return uid, <-owners
	}}
	defer ln.Close()
	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		clients = append(clients, c)
	}
	got, err := ln.Accept()
	require.NoError(t, err)
	defer got.Close()
	assert.Equal(t, clients[2].LocalAddr().String(), got.RemoteAddr().String(), "the third, of the host's own user")
	for _, c := range clients[:2] {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "refused: closed by the host")
	}
}

// BenchmarkConnOwner: the cost of finding a connection's owner, paid once
// per accepted connection (it grows with the host's TCP connections).
func BenchmarkConnOwner(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(b, err)
	defer c.Close()
	s, err := ln.Accept()
	require.NoError(b, err)
	defer s.Close()
	for b.Loop() {
		if _, err := connOwner(s); err != nil {
			b.Fatal(err)
		}
	}
}
