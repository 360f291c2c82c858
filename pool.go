package acphost

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// PoolOptions configures a Pool of warm agent processes.
type PoolOptions struct {
	// Agent is how each process is started and configured.
	Agent ACPOptions
	// Min processes are started by NewPool and kept warm. Default 1.
	Min int
	// Max bounds the processes; more are started lazily when every process
	// already holds SessionsPerProcess sessions. Default Min.
	Max int
	// SessionsPerProcess is how many live sessions share one process before
	// another is used. Default 1: most agents (Codex, opencode, Gemini)
	// serialize the turns of all sessions inside one process, so sessions
	// only run in parallel on separate processes; Claude's adapter runs
	// sessions of one process concurrently.
	SessionsPerProcess int
	// IdleTimeout closes processes beyond Min that have held no session for
	// this long. Zero: never.
	IdleTimeout time.Duration
	// Transports, if set, are the hosts the processes are spread over
	// (Agent.Transport must then be unset): each new process goes to the
	// host holding the fewest, and Min counts over all of them. A host
	// whose dial fails is skipped for HostRetry while another host can
	// take the process; the pool fails a start only when every host
	// failed. A session stays on its host for its life: when the host goes
	// away its calls fail with the link's error (ErrLinkLost), or, with
	// Agent.Recover, it is re-attached on the same host once that can be
	// dialled again (session/load on another host would need the agent's
	// state shared between hosts, which the pool cannot know).
	Transports []Transport
	// HostRetry is how long a host whose dial failed is skipped, and how
	// long refilling Spare waits after a start failed. Default 10s.
	HostRetry time.Duration
	// Spare processes are kept warm beyond those holding sessions (within
	// Max), each with its session already open: as a session takes one,
	// another is started in the background, so a new conversation does not
	// wait for an agent to start (opencode takes ~6 s, Gemini ~2 s). Each
	// is a whole idle agent process — hundreds of MB for a real adapter —
	// so keep it small. IdleTimeout never closes the last Spare idle ones.
	// Zero: none beyond Min.
	Spare int
}

// Pool keeps several agent processes warm and hands out sessions pinned to
// one of them for their life, so concurrent conversations run in parallel
// instead of queueing behind one process. All methods are safe for
// concurrent use.
type Pool struct {
	opts PoolOptions

	mu      sync.Mutex
	cond    sync.Cond
	members []*poolMember
	closed  bool
	done    chan struct{}
	wg      sync.WaitGroup
	down    []time.Time // per host: skipped until then

	refillAfter time.Time // a spare's start failed: no refill before then

	life    context.Context // ends with Close: bounds the spares' starts
	endLife context.CancelFunc
}

type poolMember struct {
	c        *ACPClient
	host     int // index into Transports (0 without)
	sessions int
	defTaken bool // the client's default session was handed out (never twice: it holds a conversation)
	idleFrom time.Time
}

// NewPool starts opts.Min processes (in parallel) and returns the pool.
// The first start that fails ends the others' (their ctx is cancelled):
// NewPool then closes what started and returns that start's error once
// every start has returned.
func NewPool(ctx context.Context, opts PoolOptions) (*Pool, error) {
	if opts.Min <= 0 {
		opts.Min = 1
	}
	if opts.Max < opts.Min {
		opts.Max = opts.Min
	}
	if opts.SessionsPerProcess <= 0 {
		opts.SessionsPerProcess = 1
	}
	if opts.HostRetry <= 0 {
		opts.HostRetry = 10 * time.Second
	}
	if len(opts.Transports) > 0 && opts.Agent.Transport != nil {
		return nil, errors.New("acphost: PoolOptions.Transports and Agent.Transport are both set")
	}
	p := &Pool{opts: opts, done: make(chan struct{}), down: make([]time.Time, max(len(opts.Transports), 1))}
	p.cond.L = &p.mu
	p.life, p.endLife = context.WithCancel(context.Background())
	members, err := p.startAll(ctx, opts.Min)
	if err != nil {
		p.endLife()
		return nil, err
	}
	now := time.Now()
	for _, m := range members {
		m.idleFrom = now
		p.members = append(p.members, m)
	}
	if opts.IdleTimeout > 0 {
		p.wg.Go(p.reapIdle)
	}
	p.refill()
	return p, nil
}

// startAll starts n members in parallel. The first start that fails
// cancels the others' (their ctx ends) and is the error; once every start
// has returned, what did start is closed. Nothing it started outlives it.
func (p *Pool) startAll(ctx context.Context, n int) ([]*poolMember, error) {
	members := make([]*poolMember, n)
	g, gctx := errgroup.WithContext(ctx)
	for i := range members {
		members[i] = &poolMember{host: i % len(p.down)}
		g.Go(func() error { return p.start(gctx, members[i]) })
	}
	err := g.Wait()
	if err == nil {
		return members, nil
	}
	var closing sync.WaitGroup
	for _, m := range members {
		if m.c != nil {
			closing.Go(func() { m.c.Close() })
		}
	}
	closing.Wait()
	return nil, err
}

// refill starts spare processes in the background until Spare are idle
// (counting those starting) or Max is reached.
func (p *Pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.closed || p.opts.Spare <= 0 || now.Before(p.refillAfter) {
		return
	}
	for idle := p.idle(); idle < p.opts.Spare && len(p.members) < p.opts.Max; idle++ {
		m := &poolMember{host: p.pickHost(now)}
		p.members = append(p.members, m) // holds the slot while it starts
		p.wg.Go(func() { p.startSpare(m) })
	}
}

// startSpare starts m's agent; the pool's Close ends the start and closes
// what it made.
func (p *Pool) startSpare(m *poolMember) {
	err := p.start(p.life, m)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.remove(m)
		p.refillAfter = time.Now().Add(p.opts.HostRetry)
	} else {
		m.idleFrom = time.Now()
	}
	p.cond.Broadcast()
}

// NewSession returns a session on the least loaded process, starting a new
// process when all are full and Max allows, else waiting (bounded by ctx)
// for a session to close. Close the session when the conversation ends.
func (p *Pool) NewSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	m, err := p.reserve(ctx)
	if err != nil {
		return nil, err
	}
	s, err := p.open(ctx, m, opts)
	if err != nil {
		p.release(m)
		return nil, err
	}
	p.refill()
	return s, nil
}

// open hands out m's default session when it is free (no session/new
// needed), else opens another.
func (p *Pool) open(ctx context.Context, m *poolMember, opts SessionOptions) (*Session, error) {
	p.mu.Lock()
	useDefault := !m.defTaken && opts.OnUpdate == nil && opts.OnPermission == nil && opts.Dir == "" && opts.Mode == "" && opts.MCPServers == nil && opts.SystemPrompt == nil
	if useDefault {
		m.defTaken = true
	}
	p.mu.Unlock()
	if useDefault {
		s := m.c.def
		s.onClose = func() { p.release(m) }
		return s, nil
	}
	s, err := m.c.NewSession(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.onClose = func() { p.release(m) }
	return s, nil
}

// reserve picks (or starts) a member with room and counts the session.
func (p *Pool) reserve(ctx context.Context) (*poolMember, error) {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.closed {
			return nil, ErrPoolClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.dropDead()
		if m := p.leastLoaded(); m != nil && m.sessions < p.opts.SessionsPerProcess {
			m.sessions++
			return m, nil
		}
		if len(p.members) < p.opts.Max {
			m := &poolMember{sessions: 1, host: p.pickHost(time.Now())}
			p.members = append(p.members, m) // holds the slot while it starts
			p.mu.Unlock()
			err := p.start(ctx, m)
			p.mu.Lock()
			if err == nil && p.closed {
				m.c.Close()
				err = ErrPoolClosed
			}
			if err != nil {
				p.remove(m)
				p.cond.Broadcast()
				return nil, err
			}
			return m, nil
		}
		p.cond.Wait()
	}
}

// dropDead forgets members whose agent died (and stays dead without
// ACPOptions.Recover), closing them in the background.
func (p *Pool) dropDead() {
	for i := 0; i < len(p.members); {
		m := p.members[i]
		if m.c != nil && m.c.Err() != nil && m.c.opts.Recover == nil {
			p.members = append(p.members[:i:i], p.members[i+1:]...)
			p.wg.Go(func() { m.c.Close() })
			continue
		}
		i++
	}
}

// start starts m's agent on m.host, moving to another host while the
// chosen one fails to dial and another is left to try.
func (p *Pool) start(ctx context.Context, m *poolMember) error {
	var errs []error
	for range len(p.down) {
		opts := p.opts.Agent
		if len(p.opts.Transports) > 0 {
			p.mu.Lock()
			opts.Transport = p.opts.Transports[m.host]
			p.mu.Unlock()
		}
		c, err := Start(ctx, opts)
		if err == nil {
			p.mu.Lock()
			m.c = c // under the lock: the member is listed while it starts
			p.mu.Unlock()
			return nil
		}
		errs = append(errs, err)
		if len(p.opts.Transports) < 2 || ctx.Err() != nil {
			break
		}
		p.mu.Lock()
		now := time.Now()
		p.down[m.host] = now.Add(p.opts.HostRetry)
		next := p.pickHost(now)
		allDown := p.down[next].After(now)
		if !allDown {
			m.host = next // under the lock: Hosts and pickHost read it
		}
		p.mu.Unlock()
		if allDown {
			break // every host failed within HostRetry
		}
	}
	return errors.Join(errs...)
}

// pickHost is the host for a new process: the one holding the fewest
// processes among those not skipped, else the one skipped the shortest.
func (p *Pool) pickHost(now time.Time) int {
	count := p.hostCounts()
	best := -1
	for h := range p.down {
		if p.down[h].After(now) {
			continue
		}
		if best < 0 || count[h] < count[best] {
			best = h
		}
	}
	if best >= 0 {
		return best
	}
	for h := range p.down {
		if best < 0 || p.down[h].Before(p.down[best]) {
			best = h
		}
	}
	return best
}

// Hosts returns how many processes the pool holds on each of
// PoolOptions.Transports, in their order (one count without them).
func (p *Pool) Hosts() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hostCounts()
}

// hostCounts counts the members on each host; p.mu is held.
func (p *Pool) hostCounts() []int {
	count := make([]int, len(p.down))
	for _, m := range p.members {
		count[m.host]++
	}
	return count
}

// idle counts the members holding no session, started or starting; p.mu
// is held.
func (p *Pool) idle() int {
	n := 0
	for _, m := range p.members {
		if m.sessions == 0 {
			n++
		}
	}
	return n
}

func (p *Pool) leastLoaded() *poolMember {
	var best *poolMember
	for _, m := range p.members {
		if m.c != nil && (best == nil || m.sessions < best.sessions) {
			best = m
		}
	}
	return best
}

func (p *Pool) remove(m *poolMember) {
	for i, x := range p.members {
		if x == m {
			p.members = append(p.members[:i:i], p.members[i+1:]...)
			return
		}
	}
}

// release returns a session's slot.
func (p *Pool) release(m *poolMember) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m.sessions--
	if m.sessions == 0 {
		m.idleFrom = time.Now()
	}
	p.cond.Broadcast()
}

// reapIdle closes processes beyond Min that stayed idle for IdleTimeout.
func (p *Pool) reapIdle() {
	t := time.NewTicker(max(p.opts.IdleTimeout/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case now := <-t.C:
			for _, c := range p.takeIdle(now) {
				c.Close()
			}
		}
	}
}

func (p *Pool) takeIdle(now time.Time) []*ACPClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*ACPClient
	idle := p.idle()
	for i := 0; i < len(p.members) && len(p.members) > p.opts.Min && idle > p.opts.Spare; {
		m := p.members[i]
		if m.c != nil && m.sessions == 0 && now.Sub(m.idleFrom) >= p.opts.IdleTimeout {
			idle--
			out = append(out, m.c)
			p.members = append(p.members[:i:i], p.members[i+1:]...)
			continue
		}
		i++
	}
	return out
}

// Processes returns how many agent processes the pool holds.
func (p *Pool) Processes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.members)
}

// Close closes every process of the pool (in parallel) and waits for them.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	members := p.members
	p.members = nil
	close(p.done)
	if p.endLife != nil {
		p.endLife() // spares still starting give up
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		if m.c != nil {
			wg.Go(func() { errs[i] = m.c.Close() })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}
