//go:build unix

package websocket

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

func TestMain(m *testing.M) {
	fakeagent.Main() // when re-executed as a fake agent, this never returns
	os.Exit(testutil.RunCheckingGoroutines(m))
}

const testToken = "s3cret-token"

// served is a Bridge serving a fake agent on 127.0.0.1.
type served struct {
	b    *Bridge
	addr string // host:port
}

func (s *served) url() string { return "ws://" + s.addr + "/acp" }

// serveFake serves script through a Bridge (changed by mod, if set) until
// the test ends, then checks that no agent is left.
func serveFake(t *testing.T, script fakeagent.Script, mod func(*Bridge)) *served {
	t.Helper()
	path, args, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	b := &Bridge{Command: path, Args: args, Env: env, Token: testToken, StopGrace: 500 * time.Millisecond}
	if mod != nil {
		mod(b)
	}
	return serveBridge(t, b)
}

// serveBridge serves b on 127.0.0.1 until the test ends, then checks
// that no agent process is left.
func serveBridge(t *testing.T, b *Bridge) *served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, b) }()
	t.Cleanup(func() {
		pids := b.pids()
		cancel()
		require.NoError(t, <-done)
		for _, pid := range pids {
			require.False(t, processRunning(pid), "agent %d outlived the bridge", pid)
		}
	})
	return &served{b: b, addr: ln.Addr().String()}
}

// proxy is a TCP relay in front of a server that can cut every
// connection (both ends closed at once) or freeze it (nothing relayed,
// nothing closed: a stalled peer).
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	frozen chan struct{} // closed: relay; replaced by an open one to freeze
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target, frozen: make(chan struct{})}
	close(p.frozen)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.thaw()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) url() string { return "ws://" + p.ln.Addr().String() + "/acp" }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		gate := p.frozen
		p.mu.Unlock()
		<-gate
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cut closes every relayed connection at once.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// freeze stops relaying anything; thaw resumes.
func (p *proxy) freeze() {
	p.mu.Lock()
	p.frozen = make(chan struct{})
	p.mu.Unlock()
}

func (p *proxy) thaw() {
	p.mu.Lock()
	select {
	case <-p.frozen:
	default:
		close(p.frozen)
	}
	p.mu.Unlock()
}

// eventually polls cond until it holds or ten seconds pass.
var eventually = testutil.Eventually

// processRunning reports whether pid is a live (not zombie) process.
var processRunning = testutil.Running
