package acphost

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// pipeTransport serves the fake agent in-process over pipes, as a custom
// Transport might (a websocket, a multiplexed stream). Its stderr is a
// stream of its own that the link keeps open (a multiplexed channel the
// peer never closes), as the Link docs allow: "The client drains it from
// Dial until Stop returns."
type pipeTransport struct{}

type pipeLink struct {
	r        *io.PipeReader // agent → host
	w        *io.PipeWriter // host → agent
	agentR   *io.PipeReader
	agentW   *io.PipeWriter
	stderrR  *io.PipeReader
	stderrW  *io.PipeWriter
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

func (t *pipeTransport) Dial(context.Context) (Link, error) {
	ar, hw := io.Pipe()
	hr, aw := io.Pipe()
	sr, sw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	l := &pipeLink{r: hr, w: hw, agentR: ar, agentW: aw, stderrR: sr, stderrW: sw, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		fakeagent.New(fakeagent.Script{}).Serve(ctx, ar, aw)
		aw.Close()
	}()
	return l, nil
}

func (l *pipeLink) Read(p []byte) (int, error) {
	return l.r.Read(p)
}
func (l *pipeLink) Write(p []byte) (int, error) { return l.w.Write(p) }
func (l *pipeLink) Stderr() io.Reader           { return l.stderrR }
func (l *pipeLink) Done() <-chan struct{}       { return nil }
func (l *pipeLink) Err() error                  { return nil }
func (l *pipeLink) Promises() Promises {
	return Promises{Transport: "pipe", Stderr: true, HostFiles: true}
}

// Stop ends the agent and the stream; the stderr channel is the peer's
// and stays open (the client stops draining when Stop returns).
func (l *pipeLink) Stop(time.Duration) {
	l.stopOnce.Do(func() {
		l.cancel()
		l.w.Close()
		l.agentR.Close()
		l.r.Close()
		<-l.done
	})
}

// TestCloseDoesNotWaitForAStderrThatStopDidNotEnd: Close must
// return once Link.Stop has returned; the Link docs say the client drains
// Stderr "until Stop returns", not until it reaches EOF.
func TestCloseDoesNotWaitForAStderrThatStopDidNotEnd(t *testing.T) {
	t.Parallel()
	c, err := Start(context.Background(), ACPOptions{Transport: &pipeTransport{}, Dir: t.TempDir()})
	require.NoError(t, err)
	_, err = c.Generate(Request{Prompt: "hi"})
	require.NoError(t, err)
	testutil.Returns(t, 10*time.Second, "Close (waiting on the stderr reader after Link.Stop returned)", func() { c.Close() })
}

// TestCancelledWriteToALinkEnds: a call whose write is blocked on an
// agent that stopped reading must end CancelGrace after its ctx does (the
// SPEC's "Writes are bounded only once cancelled"). Over a Transport the
// stream's writer is the Link, which has neither SetWriteDeadline nor
// Close, so AbortWrites does nothing and nothing calls Link.Stop: the
// call blocks until the agent reads again — for ever.
func TestCancelledWriteToALinkEnds(t *testing.T) {
	t.Parallel()
	tr := newExecTransport(fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "wedge", Steps: []fakeagent.Step{{StopReading: true}, fakeagent.Say(fakeagent.Text("wedged"))}},
	}})
	c, err := Start(context.Background(), ACPOptions{Transport: tr, Dir: t.TempDir(), Timeouts: Timeouts{CancelGrace: 200 * time.Millisecond}})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Generate(Request{Prompt: "wedge"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := c.GenerateCtx(ctx, Request{Prompt: strings.Repeat("x", 4<<20)})
		errc <- err
	}()
	select {
	case err := <-errc:
		require.Error(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("GenerateCtx still blocked in Link.Write 14s after its ctx ended")
	}
}

// TestPoolHostMoveIsNotARace: when a new process's host fails to
// dial, Pool.start moves the member to another host (m.host = next)
// without the pool's lock, while the member is already in p.members,
// whose hosts Hosts and pickHost read under the lock. Run with -race.
func TestPoolHostMoveIsNotARace(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("done"))}}}}
	good, down := newExecTransport(script), newExecTransport(script)
	down.dialError = &LinkError{Transport: "test-exec", Op: "dial", Err: errors.New("connection refused")}
	p, err := NewPool(context.Background(), PoolOptions{Min: 1, Max: 2, Agent: ACPOptions{Dir: t.TempDir()}, Transports: []Transport{good, down}, HostRetry: time.Hour})
	require.NoError(t, err)
	defer p.Close()
	s1, err := p.NewSession(context.Background(), SessionOptions{}) // fills the first process
	require.NoError(t, err)
	defer s1.Close(context.Background())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				p.Hosts()
			}
		}
	})
	// The second process goes to the idle host (down), fails, moves to good.
	s2, err := p.NewSession(context.Background(), SessionOptions{})
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	s2.Close(context.Background())
}

// An agent that writes before the host has made its connection — a
// $/cancel_request and a request as its very first lines — meets a
// connection made whole: the read loop starts once everything its hooks
// use is in place. Before, it started inside wire.NewConn, and its first
// hook read the agent's connection field as NewConn's caller was still
// assigning it (a data race: run with -race).
func TestAgentWritingFirstMeetsAConnectionMade(t *testing.T) {
	t.Parallel()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	early := `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}` + "\n" +
		`{"jsonrpc":"2.0","id":"early","method":"fs/read_text_file","params":{"sessionId":"none","path":"/etc/hostname"}}` + "\n"
	agent := fakeagent.New(fakeagent.Script{})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		if _, err := io.WriteString(toClientW, early); err != nil {
			served <- err
			return
		}
		served <- agent.Serve(ctx, toAgentR, toClientW)
		toClientW.Close()
	}()
	c, err := Start(context.Background(), ACPOptions{Dir: t.TempDir(), Transport: &StreamTransport{Reader: toClientR, Writer: toAgentW, Closer: closerFunc(func() error {
		toAgentW.Close()
		return toClientR.Close()
	})}})
	require.NoError(t, err)
	resp, err := c.Generate(Request{Prompt: "hi"})
	require.NoError(t, err, "the agent is served after its early lines")
	assert.NotNil(t, resp)
	c.Close()
	cancel()
	<-served
}
