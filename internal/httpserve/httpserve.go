// Package httpserve is the http.Server acphost's servers run (acphost web,
// the WebSocket bridge): timeouts on every connection, and a cap on the
// connections that have not shown the token, so that a local process
// without it cannot hold the server's descriptors.
//
// A connection is untrusted from its accept until a request on it carries
// a valid token (the handler calls Trust); from then on it is the
// person's and nothing here touches it. An untrusted connection counts
// against the cap only once it has shown it is not the person's, or not
// yet: it answered a request without the token and waits for another
// (idle), or it has waited Grace for its first request with nothing
// arriving (silent). Beyond MaxUntrusted untrusted connections, those are
// closed as a new one is accepted, the idle ones first, then the silent,
// oldest first. A connection whose request is on its way — accepted but
// not yet read, its bytes arriving, its request being answered — is not
// closed for the cap: a burst of the person's own connections, all
// accepted before any is read, keeps every one. Only past 16 × MaxUntrusted
// untrusted connections at once are those closed too (the silent ones
// first, then the oldest): a bound on what a flood can make the server
// hold while it reads. The person's new connection always gets in.
package httpserve

import (
	"context"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the servers.
const (
	// ReadHeaderTimeout bounds the wait for a request's header.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection with no request for it.
	IdleTimeout = 60 * time.Second
	// DefaultMaxUntrusted is how many connections without a valid token
	// are held at once, once they have shown they are not the person's.
	DefaultMaxUntrusted = 64
	// Grace is how long a new connection may wait for its first request
	// to arrive before it counts against the cap: far longer than a
	// client takes to send its request once connected.
	Grace = 2 * time.Second
	// hardFactor × the cap bounds the untrusted connections held at all.
	hardFactor = 16
)

// New returns a server for h with the timeouts set, and ln wrapped so
// that at most maxUntrusted (0: DefaultMaxUntrusted) connections without
// a valid token are held (see the package's doc). Serve the server on the
// listener returned. No WriteTimeout or ReadTimeout: event streams and
// WebSocket connections live long; the handlers put deadlines on what
// they read and write.
func New(h http.Handler, ln net.Listener, maxUntrusted int, errLog *log.Logger) (*http.Server, net.Listener) {
	if maxUntrusted <= 0 {
		maxUntrusted = DefaultMaxUntrusted
	}
	g := &guard{Listener: ln, max: maxUntrusted, hard: hardFactor * maxUntrusted, grace: Grace, now: time.Now}
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
		gc.trusted.Store(true)
		gc.g.forget(gc)
	}
}

type connKey struct{}

// guard is the listener that counts untrusted connections.
type guard struct {
	net.Listener
	max   int // untrusted connections that showed they are not the person's
	hard  int // untrusted connections at all
	grace time.Duration
	now   func() time.Time

	mu        sync.Mutex
	untrusted []*guardConn // in the order accepted
}

// guardConn is an accepted connection; what the server does with it (its
// http.ConnState) and whether a read of it waits tell the guard whether
// its request is on its way.
type guardConn struct {
	net.Conn
	g       *guard
	trusted atomic.Bool // Trust was called: reads go straight through

	// guard.mu:
	state   http.ConnState
	got     bool      // bytes came since it became idle (or new)
	reading bool      // a read is under way
	since   time.Time // when it began
}

func (c *guardConn) Close() error {
	c.g.forget(c)
	return c.Conn.Close()
}

// Read reads, telling the guard while it waits.
func (c *guardConn) Read(b []byte) (int, error) {
	if c.trusted.Load() {
		return c.Conn.Read(b)
	}
	c.g.reading(c, true, 0)
	n, err := c.Conn.Read(b)
	c.g.reading(c, false, n)
	return n, err
}

// Accept returns the next connection, closing untrusted ones beyond the
// cap (see the package's doc).
func (g *guard) Accept() (net.Conn, error) {
	c, err := g.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gc := &guardConn{Conn: c, g: g, state: http.StateNew}
	g.mu.Lock()
	g.untrusted = append(g.untrusted, gc)
	evict := g.trimLocked()
	g.mu.Unlock()
	for _, c := range evict {
		c.Close()
	}
	return gc, nil
}

// trimLocked removes and returns the untrusted connections to close: past
// max, those that showed they are not the person's (idle, then silent,
// the longest waiting first); past hard, the others too (silent ones
// first, then the oldest). The newest (just accepted) is never chosen.
func (g *guard) trimLocked() []*guardConn {
	var evict []*guardConn
	now := g.now()
	for len(g.untrusted) > g.max {
		i := g.pickLocked(now, false)
		if i < 0 {
			break
		}
		evict = append(evict, g.removeLocked(i))
	}
	for len(g.untrusted) > g.hard {
		i := g.pickLocked(now, true)
		if i < 0 {
			break
		}
		evict = append(evict, g.removeLocked(i))
	}
	return evict
}

// Ranks of a connection for pickLocked; the lowest goes first.
const (
	rankIdle     = iota // answered a request without the token; nothing of another yet
	rankSilent          // waited Grace for (the rest of) a request, nothing arriving
	rankWaiting         // waits for its request, for less than Grace so far
	rankUnderWay        // not yet read, its request arriving or being answered
	rankNever
)

func (g *guard) rank(c *guardConn, now time.Time) int {
	between := c.state == http.StateNew || c.state == http.StateIdle // no request being answered
	switch {
	case c.state == http.StateIdle && !c.got:
		return rankIdle
	case between && c.reading && now.Sub(c.since) >= g.grace:
		return rankSilent
	case between && c.reading:
		return rankWaiting
	}
	return rankUnderWay
}

// pickLocked is the index of the untrusted connection to close, -1 for
// none: of rank idle or silent, or, when hard, of any rank; the one that
// waited longest within a rank (the oldest accepted, for those not
// waiting).
func (g *guard) pickLocked(now time.Time, hard bool) int {
	limit := rankWaiting
	if hard {
		limit = rankNever
	}
	pick, best := -1, limit
	for i, c := range g.untrusted[:len(g.untrusted)-1] {
		r := g.rank(c, now)
		if r < best || (r == best && pick >= 0 && waitedLonger(c, g.untrusted[pick])) {
			pick, best = i, r
		}
	}
	return pick
}

// waitedLonger tells whether a has waited longer than b (both of a rank).
func waitedLonger(a, b *guardConn) bool {
	return a.reading && b.reading && a.since.Before(b.since)
}

func (g *guard) removeLocked(i int) *guardConn {
	c := g.untrusted[i]
	g.untrusted = append(g.untrusted[:i], g.untrusted[i+1:]...)
	return c
}

func (g *guard) state(c *guardConn, st http.ConnState) {
	switch st {
	case http.StateHijacked, http.StateClosed:
		g.forget(c)
	default:
		g.mu.Lock()
		c.state = st
		if st == http.StateIdle {
			c.got = false
		}
		g.mu.Unlock()
	}
}

// reading tells of a read of c beginning (on) or ending with n bytes.
func (g *guard) reading(c *guardConn, on bool, n int) {
	g.mu.Lock()
	c.reading = on
	if on {
		c.since = g.now()
	}
	if n > 0 {
		c.got = true
	}
	g.mu.Unlock()
}

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
