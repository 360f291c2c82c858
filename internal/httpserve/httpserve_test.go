package httpserve

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/acphost/acphost/internal/httpserve/httpservetest"
	"github.com/acphost/acphost/internal/testutil"
)

// serve runs New with a cap of max on loopback, its clock the returned
// one (moved by hand), until the test ends.
func serve(t *testing.T, max int) (g *guard, addr string, clock *fakeClock) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer t" {
			Trust(r.Context())
			return
		}
		http.Error(w, "no token", http.StatusUnauthorized)
	})
	srv, gln := New(h, ln, max, nil)
	g = gln.(*guard)
	clock = &fakeClock{t: time.Now()}
	g.now = clock.now
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(gln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return g, ln.Addr().String(), clock
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// waiting counts the untrusted connections the server waits to read.
func (g *guard) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.untrusted {
		if c.reading {
			n++
		}
	}
	return n
}

func dialSilent(t *testing.T, addr string, n int) []net.Conn {
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

// TestSilentConnectionsCountAfterGrace (issue 36): connections that send
// nothing are not closed for the cap while they are young (the person's
// own could be among them, their requests not yet read), but only up to
// 16 × the cap at once; once they have waited Grace, the next connection
// accepted closes all but the cap of them.
func TestSilentConnectionsCountAfterGrace(t *testing.T) {
	const max = 8
	g, addr, clock := serve(t, max)
	conns := dialSilent(t, addr, hardFactor*max+40)
	testutil.Until(t, 10*time.Second, func() (bool, string) {
		held := httpservetest.Held(conns)
		return held <= hardFactor*max, fmt.Sprintf("%d silent connections held in their grace, more than %d", held, hardFactor*max)
	})
	testutil.Until(t, 10*time.Second, func() (bool, string) {
		n := g.waiting()
		return n >= hardFactor*max-1, fmt.Sprintf("the server waits on %d", n)
	})
	clock.advance(Grace)
	dialSilent(t, addr, 1) // an accept: the silent ones past their grace go
	testutil.Until(t, 10*time.Second, func() (bool, string) {
		held := httpservetest.Held(conns)
		return held <= max, fmt.Sprintf("%d silent connections held past their grace, more than %d", held, max)
	})
}

// TestNewSetsTimeouts: every server New makes has a header and an idle
// timeout (a tokenless keep-alive connection is not held for ever).
func TestNewSetsTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv, _ := New(http.NotFoundHandler(), ln, 0, nil)
	if srv.ReadHeaderTimeout != ReadHeaderTimeout || srv.IdleTimeout != IdleTimeout || ReadHeaderTimeout <= 0 || IdleTimeout <= 0 {
		t.Errorf("ReadHeaderTimeout %v, IdleTimeout %v", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
}
