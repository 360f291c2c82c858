//go:build unix

package websocket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// pipeTransport is a Transport of the test's own: each Dial runs a fake
// agent in this process over pipes, its Serve's end as the exit status.
type pipeTransport struct {
	script fakeagent.Script
	stderr string // what each link's stderr carries
	mu     sync.Mutex
	links  []*pipeLink
}

type pipeLink struct {
	in      *io.PipeWriter // the agent's input
	out     *io.PipeReader // the agent's output
	stderr  io.Reader
	cancel  context.CancelFunc
	done    chan struct{}
	served  chan struct{} // the agent's Serve has returned
	endOnce sync.Once
	err     error
	stopped atomic.Bool
}

func (t *pipeTransport) Dial(context.Context) (acphost.Link, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	l := &pipeLink{in: inW, out: outR, stderr: strings.NewReader(t.stderr), cancel: cancel,
		done: make(chan struct{}), served: make(chan struct{})}
	a := fakeagent.New(t.script)
	go func() {
		defer close(l.served)
		err := a.Serve(ctx, inR, outW)
		outW.Close()
		inR.Close()
		l.end(exitOf(err))
	}()
	t.mu.Lock()
	t.links = append(t.links, l)
	t.mu.Unlock()
	return l, nil
}

func (t *pipeTransport) last() *pipeLink {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.links[len(t.links)-1]
}

// exitOf is the fake agent's end as a process's: a scripted exit's code,
// 0 at EOF, killed when stopped.
func exitOf(err error) error {
	var code int
	switch {
	case err == nil:
		return &acphost.ExitError{ExitCode: 0}
	case errors.Is(err, fakeagent.ErrExited):
		_, _ = fmt.Sscanf(strings.TrimPrefix(err.Error(), fakeagent.ErrExited.Error()), " with code %d", &code)
		return &acphost.ExitError{ExitCode: code, Err: err}
	case errors.Is(err, context.Canceled):
		return &acphost.ExitError{ExitCode: -1, Signal: "killed", Err: err}
	}
	return &acphost.LinkError{Transport: "test-pipe", Op: "read", Err: err}
}

func (l *pipeLink) end(err error) {
	l.endOnce.Do(func() {
		l.err = err
		close(l.done)
	})
}

// lose ends the link as a dropped connection would, the agent perhaps
// still running.
func (l *pipeLink) lose() {
	l.end(&acphost.LinkError{Transport: "test-pipe", Op: "read", Err: io.ErrUnexpectedEOF})
	l.out.CloseWithError(io.ErrUnexpectedEOF)
}

func (l *pipeLink) Read(p []byte) (int, error)  { return l.out.Read(p) }
func (l *pipeLink) Write(p []byte) (int, error) { return l.in.Write(p) }
func (l *pipeLink) Stderr() io.Reader           { return l.stderr }
func (l *pipeLink) Done() <-chan struct{}       { return l.done }
func (l *pipeLink) Err() error                  { return l.err }

func (l *pipeLink) Promises() acphost.Promises {
	return acphost.Promises{Transport: "test-pipe", Stderr: true, ExitStatus: true}
}

// Stop closes the agent's input, waits grace for its end, then ends it.
func (l *pipeLink) Stop(grace time.Duration) {
	l.in.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-l.served:
	case <-t.C:
	}
	l.cancel()
	l.out.Close()
	<-l.served
	l.stopped.Store(true)
}

func byeScript() fakeagent.Script {
	three := 3
	return fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "hello", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hi there"))}},
		{Prompt: "bye", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("bye")), {Exit: &three}}},
	}}
}

// The Link's lines (or a MessageLink's messages: here a second bridge's
// agent, over a websocket Transport) are relayed as a process's pipes,
// and the agent's exit status is the close reason.
func TestBridgeOverATransportRelaysTurnsAndTheExitStatus(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"lines", "messages"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stderr testutil.SyncBuffer
			b := &Bridge{Token: testToken, StopGrace: 500 * time.Millisecond, Stderr: &stderr}
			pipes := &pipeTransport{script: byeScript(), stderr: "from the link's stderr\n"}
			if name == "lines" {
				b.Transport = pipes
			} else {
				inner := serveFake(t, byeScript(), nil)
				b.Transport = &Transport{URL: inner.url(), Token: testToken}
			}
			s := serveBridge(t, b)
			c := start(t, &Transport{URL: s.url(), Token: testToken}, acphost.ACPOptions{})
			resp, err := c.Generate(acphost.Request{Prompt: "hello"})
			require.NoError(t, err)
			assert.Equal(t, "hi there", resp.Text)

			_, err = c.Generate(acphost.Request{Prompt: "bye"})
			var ee *acphost.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 3, ee.ExitCode, "the Link's exit status crossed the bridge in the close reason")
			var ce *CloseError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "exit 3", ce.Reason)
			if name == "lines" {
				eventually(t, "the link to be stopped", func() bool { return pipes.last().stopped.Load() })
				eventually(t, "the link's stderr to be forwarded", func() bool {
					return strings.Contains(stderr.String(), "from the link's stderr")
				})
			}
		})
	}
}

func TestBridgeReportsALostLinkAsAnErrorClose(t *testing.T) {
	t.Parallel()
	pipes := &pipeTransport{script: hangScript()}
	s := serveBridge(t, &Bridge{Transport: pipes, Token: testToken, StopGrace: 200 * time.Millisecond})
	c := start(t, &Transport{URL: s.url(), Token: testToken}, acphost.ACPOptions{})
	resp, err := c.Generate(acphost.Request{Prompt: "x"})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Text)

	pipes.last().lose()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not see the link go")
	}
	err = c.Err()
	var ce *CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 1011, ce.Code)
	assert.Equal(t, "agent link lost", ce.Reason)
	assert.NotErrorIs(t, err, acphost.ErrAgentExited, "a lost link is not an exit")
	eventually(t, "the lost link to be stopped", func() bool { return pipes.last().stopped.Load() })
}

// Not parallel: it counts every goroutine of the process.
func TestBridgeCloseStopsTransportLinksLeavingNoGoroutine(t *testing.T) {
	base := runtime.NumGoroutine()
	pipes := &pipeTransport{script: hangScript()}
	b := &Bridge{Transport: pipes, Token: testToken, StopGrace: 200 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, b) }()

	started := make(chan struct{}, 1)
	c, err := acphost.Start(ctx, acphost.ACPOptions{Transport: &Transport{URL: "ws://" + ln.Addr().String() + "/acp", Token: testToken},
		Dir: t.TempDir(), OnUpdate: signal(started)})
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Generate(acphost.Request{Prompt: "hang"})
		errc <- err
	}()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("the turn ended before it started: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the turn never started")
	}

	cancel() // Serve closes the bridge
	require.NoError(t, <-served)
	assert.True(t, pipes.last().stopped.Load(), "Close returns once every link is stopped")
	var ce *CloseError
	require.ErrorAs(t, <-errc, &ce)
	assert.Equal(t, 1001, ce.Code, "the turn saw the bridge go")
	_ = c.Close() // the link's end, already seen
	assert.True(t, testutil.GoroutinesBackTo(base), "no goroutine of the bridge, its connections or their links outlived Close")
}

func TestBridgeRefusesATransportAndACommand(t *testing.T) {
	t.Parallel()
	pipes := &pipeTransport{}
	for name, b := range map[string]*Bridge{
		"command": {Transport: pipes, Command: "agent"},
		"args":    {Transport: pipes, Args: []string{"x"}},
		"env":     {Transport: pipes, Env: []string{"A=b"}},
		"dir":     {Transport: pipes, Dir: "/"},
	} {
		b.Token = testToken
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		err = Serve(context.Background(), ln, b)
		require.ErrorIs(t, err, ErrTransportAndCommand, name)

		req := httptest.NewRequest("GET", "http://127.0.0.1/acp", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		b.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusInternalServerError, rec.Code, name)
	}
	assert.Empty(t, pipes.links, "no agent was dialled")
}
