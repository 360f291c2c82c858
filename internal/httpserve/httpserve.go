// Package httpserve is the http.Server acphost's servers run (acphost web,
// the WebSocket bridge): timeouts on every connection, and a cap on the
// connections that have not shown the token, so that a local process
// without it cannot hold the server's descriptors.
//
// A connection is untrusted from its accept until a request on it carries
// a valid token (the handler calls Trust). Beyond MaxUntrusted untrusted
// connections the oldest one with no request under way (else the oldest)
// is closed as a new one is accepted: the person's new connection always
// gets in, and sends its request at once.
package httpserve

import (
	"context"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of the servers.
const (
	// ReadHeaderTimeout bounds the wait for a request's header.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection with no request for it.
	IdleTimeout = 60 * time.Second
	// DefaultMaxUntrusted is how many connections without a valid token
	// are held at once.
	DefaultMaxUntrusted = 64
)

// New returns a server for h with the timeouts set, and ln wrapped so
// that at most maxUntrusted (0: DefaultMaxUntrusted) connections without
// a valid token are held. Serve the server on the listener returned.
// No WriteTimeout or ReadTimeout: event streams and WebSocket connections
// live long; the handlers put deadlines on what they read and write.
func New(h http.Handler, ln net.Listener, maxUntrusted int, errLog *log.Logger) (*http.Server, net.Listener) {
	if maxUntrusted <= 0 {
		maxUntrusted = DefaultMaxUntrusted
	}
	g := &guard{Listener: ln, max: maxUntrusted}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          errLog,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if gc, ok := c.(*guardConn); ok {
				return context.WithValue(ctx, connKey{}, gc)
			}
			return ctx
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if gc, ok := c.(*guardConn); ok {
				g.state(gc, st)
			}
		},
	}
	return srv, g
}

// Trust marks the connection of a request whose token was valid: it is no
// longer counted among the untrusted, nor closed for them. A request not
// served through New is left as it is.
func Trust(ctx context.Context) {
	if gc, ok := ctx.Value(connKey{}).(*guardConn); ok {
		gc.g.trust(gc)
	}
}

type connKey struct{}

// guard is the listener that counts untrusted connections.
type guard struct {
	net.Listener
	max int

	mu        sync.Mutex
	untrusted []*guardConn // in the order accepted
}

type guardConn struct {
	net.Conn
	g      *guard
	active bool // a request is under way (guard.mu)
}

func (c *guardConn) Close() error {
	c.g.forget(c)
	return c.Conn.Close()
}

// Accept returns the next connection, closing an untrusted one beyond the
// cap.
func (g *guard) Accept() (net.Conn, error) {
	c, err := g.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gc := &guardConn{Conn: c, g: g}
	g.mu.Lock()
	g.untrusted = append(g.untrusted, gc)
	var evict *guardConn
	if len(g.untrusted) > g.max {
		evict = g.oldestLocked()
	}
	g.mu.Unlock()
	if evict != nil {
		evict.Close()
	}
	return gc, nil
}

// oldestLocked removes and returns the untrusted connection to close: the
// oldest idle one, else the oldest. The newest (just accepted) is never
// chosen.
func (g *guard) oldestLocked() *guardConn {
	pick := 0
	for i, c := range g.untrusted[:len(g.untrusted)-1] {
		if !c.active {
			pick = i
			break
		}
	}
	c := g.untrusted[pick]
	g.untrusted = append(g.untrusted[:pick], g.untrusted[pick+1:]...)
	return c
}

func (g *guard) state(c *guardConn, st http.ConnState) {
	switch st {
	case http.StateHijacked, http.StateClosed:
		g.forget(c)
	default:
		g.mu.Lock()
		c.active = st == http.StateActive
		g.mu.Unlock()
	}
}

func (g *guard) trust(c *guardConn) { g.forget(c) }

// forget removes c from the untrusted, if it is there.
func (g *guard) forget(c *guardConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, o := range g.untrusted {
		if o == c {
			g.untrusted = append(g.untrusted[:i], g.untrusted[i+1:]...)
			return
		}
	}
}
