// Package httpservetest holds the attack the servers' tests share: many
// connections that made one request without the token and stay open.
package httpservetest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// OpenIdle opens n keep-alive connections to addr, makes one request on
// each without a token (GET path) and reads its answer, then leaves them
// open. They are closed when the test ends.
func OpenIdle(t testing.TB, addr, path string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			// Closed already: the server let go of an earlier one
			// only, or of this one; either way it is not held.
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return conns
}

// Held counts the connections of conns the server has not closed: a read
// that finds nothing within a millisecond is a connection still open.
func Held(conns []net.Conn) int {
	held := 0
	var b [1]byte
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(b[:]); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				held++
			}
		}
	}
	return held
}
