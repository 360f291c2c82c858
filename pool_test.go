package acphost

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowTurn is an agent whose every turn takes a second of "work".
var slowTurn = fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Delay: "1s"}, fakeagent.Say(fakeagent.Text("done"))}}}}

func poolOf(t *testing.T, opts PoolOptions) *Pool {
	t.Helper()
	path, args, env, err := fakeagent.Command(slowTurn)
	require.NoError(t, err)
	opts.Agent = ACPOptions{Command: path, Args: args, Dir: t.TempDir(), Process: ProcessOptions{Env: env}}
	p, err := NewPool(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func TestPoolRunsSessionsOnSeparateProcesses(t *testing.T) {
	t.Parallel()
	p := poolOf(t, PoolOptions{Min: 1, Max: 3})
	assert.Equal(t, 1, p.Processes())
	var sessions []*Session
	for range 3 {
		s, err := p.NewSession(context.Background(), SessionOptions{})
		require.NoError(t, err)
		sessions = append(sessions, s)
	}
	assert.Equal(t, 3, p.Processes(), "grown lazily to Max")
	pids := map[int]bool{}
	for _, s := range sessions {
		pids[s.c.PID()] = true
	}
	assert.Len(t, pids, 3, "each session pinned to its own process")

	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() {
			resp, err := s.Generate(Request{Prompt: "x"})
			assert.NoError(t, err)
			assert.Equal(t, "done", resp.Text)
		})
	}
	wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.NewSession(ctx, SessionOptions{})
	assert.ErrorIs(t, err, context.DeadlineExceeded, "full: waits for a session to close")
	require.NoError(t, sessions[0].Close(context.Background()))
	s, err := p.NewSession(context.Background(), SessionOptions{OnUpdate: func(acp.Update) {}})
	require.NoError(t, err)
	assert.NotEqual(t, sessions[0].ID(), s.ID(), "a released default session is never handed out again")
	require.NoError(t, p.Close())
	_, err = p.NewSession(context.Background(), SessionOptions{})
	assert.ErrorIs(t, err, ErrPoolClosed)
}

func TestPoolClosesIdleProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// In-process members: the pool's logic, with fake time.
		p := &Pool{opts: PoolOptions{Min: 1, Max: 3, SessionsPerProcess: 1, IdleTimeout: time.Minute}, done: make(chan struct{})}
		p.cond.L = &p.mu
		for range 3 {
			c, _ := connectFake(t, fakeagent.Script{}, ACPOptions{})
			p.members = append(p.members, &poolMember{c: c, idleFrom: time.Now()})
		}
		p.members[0].sessions = 1
		p.wg.Go(p.reapIdle)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		assert.Equal(t, 1, p.Processes(), "idle processes beyond Min are closed")
		assert.Equal(t, 1, p.members[0].sessions, "the busy one stays")
		require.NoError(t, p.Close())
	})
}

func TestPoolIdleTimeoutKeepsTheSpares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &Pool{opts: PoolOptions{Min: 1, Max: 4, SessionsPerProcess: 1, IdleTimeout: time.Minute, Spare: 1}, done: make(chan struct{})}
		p.cond.L = &p.mu
		for range 4 {
			c, _ := connectFake(t, fakeagent.Script{}, ACPOptions{})
			p.members = append(p.members, &poolMember{c: c, idleFrom: time.Now()})
		}
		p.members[0].sessions = 1
		p.wg.Go(p.reapIdle)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		assert.Equal(t, 2, p.Processes(), "the busy one and one spare stay")
		assert.Equal(t, 1, p.idleReady())
		require.NoError(t, p.Close())
	})
}

// BenchmarkPoolParallelTurns runs N concurrent turns (1s of agent work each)
// on an N-process pool: the wall time should be about one turn's.
func BenchmarkPoolParallelTurns(b *testing.B) {
	const n = 4
	path, args, env, err := fakeagent.Command(slowTurn)
	require.NoError(b, err)
	p, err := NewPool(context.Background(), PoolOptions{Min: n, Agent: ACPOptions{Command: path, Args: args, Dir: b.TempDir(), Process: ProcessOptions{Env: env}}})
	require.NoError(b, err)
	defer p.Close()
	var sessions []*Session
	for range n {
		s, err := p.NewSession(context.Background(), SessionOptions{})
		require.NoError(b, err)
		sessions = append(sessions, s)
	}
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for _, s := range sessions {
			wg.Go(func() { _, _ = s.Generate(Request{Prompt: "x"}) })
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/round")
}

// A spare process is started in the background as a session takes one, so
// the next conversation finds an agent already warm, its session open.
func TestPoolKeepsSpareProcessesWarm(t *testing.T) {
	t.Parallel()
	p := poolOf(t, PoolOptions{Min: 1, Max: 3, Spare: 1, IdleTimeout: time.Hour})
	assert.Equal(t, 1, p.Processes(), "Min is idle already: it is the spare")
	s1, err := p.NewSession(context.Background(), SessionOptions{})
	require.NoError(t, err)
	eventually(t, "a spare started behind the first session", func() bool { return p.Processes() == 2 && p.idleReady() == 1 })
	s2, err := p.NewSession(context.Background(), SessionOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, s1.c.PID(), s2.c.PID())
	eventually(t, "and another, up to Max", func() bool { return p.Processes() == 3 && p.idleReady() == 1 })
	s3, err := p.NewSession(context.Background(), SessionOptions{})
	require.NoError(t, err)
	assert.Equal(t, 3, p.Processes(), "Max bounds the spares")
	for _, s := range []*Session{s1, s2, s3} {
		require.NoError(t, s.Close(context.Background()))
	}
}

// idleReady counts the started processes holding no session.
func (p *Pool) idleReady() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, m := range p.members {
		if m.c != nil && m.sessions == 0 {
			n++
		}
	}
	return n
}

// errRefused is the dial error of stagedTransport's failing dial.
var errRefused = errors.New("test: dial refused")

// stagedTransport gives NewPool's parallel starts one role each, by dial
// order: the first dials an in-process fake agent, the second hangs until
// its ctx ends, the third fails once the others are under way (every
// other goroutine of the bubble is blocked).
type stagedTransport struct {
	dials    atomic.Int32
	links    sync.WaitGroup // the agents served, until their link is stopped
	dialled  atomic.Int32
	stopped  atomic.Int32
	hungErr  chan error // what ended the hanging dial
	hungDone atomic.Bool
}

func (tr *stagedTransport) Dial(ctx context.Context) (Link, error) {
	switch tr.dials.Add(1) {
	case 1:
		tr.dialled.Add(1)
		return newServedLink(&tr.links, func() { tr.stopped.Add(1) }), nil
	case 2:
		<-ctx.Done()
		tr.hungErr <- ctx.Err()
		tr.hungDone.Store(true)
		return nil, ctx.Err()
	default:
		synctest.Wait()
		return nil, errRefused
	}
}

// servedLink is a Link to a fake agent served in-process over two pipes.
type servedLink struct {
	toAgent  *io.PipeWriter
	toClient *io.PipeReader
	served   chan struct{}
	stopped  func()
}

func newServedLink(wg *sync.WaitGroup, stopped func()) *servedLink {
	agentR, toAgent := io.Pipe()
	toClient, agentW := io.Pipe()
	l := &servedLink{toAgent: toAgent, toClient: toClient, served: make(chan struct{}), stopped: stopped}
	wg.Go(func() {
		defer close(l.served)
		_ = fakeagent.New(fakeagent.Script{}).Serve(context.Background(), agentR, agentW)
		agentW.Close()
		agentR.Close()
	})
	return l
}

func (l *servedLink) Read(p []byte) (int, error)  { return l.toClient.Read(p) }
func (l *servedLink) Write(p []byte) (int, error) { return l.toAgent.Write(p) }
func (l *servedLink) Stderr() io.Reader           { return nil }
func (l *servedLink) Done() <-chan struct{}       { return nil }
func (l *servedLink) Err() error                  { return nil }
func (l *servedLink) Promises() Promises          { return Promises{Transport: "test-pipe"} }

func (l *servedLink) Stop(time.Duration) {
	l.toAgent.Close()
	l.toClient.Close()
	<-l.served
	l.stopped()
}

// A start of NewPool's that fails ends its siblings' starts at once (their
// ctx is cancelled, not left to time out), closes what started, and
// NewPool returns that failure once every start has returned.
func TestPoolFailedStartCancelsTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &stagedTransport{hungErr: make(chan error, 1)}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		p, err := NewPool(ctx, PoolOptions{Min: 3, Agent: ACPOptions{Transport: tr, Dir: t.TempDir()}})
		require.ErrorIs(t, err, errRefused)
		assert.Nil(t, p)
		assert.True(t, tr.hungDone.Load(), "the hanging start returned before NewPool did")
		assert.ErrorIs(t, <-tr.hungErr, context.Canceled, "the hanging start was cancelled, not left to its deadline")
		assert.Equal(t, int32(1), tr.dialled.Load())
		assert.Equal(t, tr.dialled.Load(), tr.stopped.Load(), "what started was closed")
		tr.links.Wait()
	})
}
