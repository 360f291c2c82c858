package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acphost/acphost/internal/sandbox"
	"github.com/acphost/acphost/internal/wire"
)

// agent is one generation of the client's agent: a process (or a given
// connection), its JSON-RPC connection, dispatcher and session. A client
// replaces its agent only when a turn had to be abandoned.
type agent struct {
	c          *ACPClient
	opts       *ACPOptions
	link       link        // how the agent is reached: its process, or Connect's stream
	conn       *wire.Conn  // calls (prompts included), replies, the requests being handled
	dispatcher *dispatcher // the ordered queue and its delivery
	writes     *writes     // guards against an agent that stops reading
	init       initResult
	caps       agentCaps
	files      *fileService     // fs/*; its opts nil unless served
	terminals  *terminalService // terminal/*; its opts nil unless served

	ctx    context.Context // ends when the agent is shut down or dies
	cancel context.CancelFunc

	dead       chan struct{} // closed once cause is set
	cause      error
	deathOnce  sync.Once
	shutOnce   sync.Once
	poisoned   atomic.Bool // never reuse the agent: see poison
	poisonedBy error       // guarded by mu

	cb callbacks      // goroutines running user code
	wg sync.WaitGroup // every goroutine of this agent

	replies  *replier  // what answering the agent's requests needs (answer.go)
	perms    *broker   // decides permission requests
	elicitor *elicitor // answers elicitations
	foreign  foreign   // counts and refuses what names others' sessions
	gen      int       // which agent process of the client this is (1, 2, …)

	turns atomic.Int32 // turns running

	profile    *AgentProfile // what the host knows of the agent (profile.go); nil: none
	stateDirs  []string      // the profile's state directories, resolved
	planKernel bool          // the process runs under plan mode's confinement
	planView   bool          // in plan mode's private view of the file system
	noView     string        // why not, under the confinement without it

	sessions *sessionTable // the sessions this connection opened or is opening

	mu sync.Mutex // guards poisonedBy

	requests  *requestBudget // agent→client requests being handled
	fileSlots chan struct{}  // fs requests holding file content (maxFileRequests)
}

func dialAgent(ctx context.Context, c *ACPClient, dial dialer) (*agent, error) {
	l, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	return connectAgent(ctx, c, l, c.roots)
}

func connectAgent(ctx context.Context, c *ACPClient, l link, roots *sandbox.Roots) (*agent, error) {
	a := &agent{
		c: c, opts: &c.opts, link: l,
		dead:      make(chan struct{}),
		sessions:  newSessionTable(),
		foreign:   foreign{n: &c.foreign, log: c.opts.Debug.Logger},
		requests:  newRequestBudget(c.opts.Limits.MaxPendingRequests, c.opts.Limits.MaxQueuedBytes),
		fileSlots: make(chan struct{}, maxFileRequests),
	}
	a.cb.log = c.opts.Debug.Logger
	hook := func(session, what string, f func()) error { return a.cb.userCall(goid(), session, what, f) }
	a.files = &fileService{opts: c.opts.FS, roots: roots, writable: c.writable, planMode: c.PlanMode, hook: hook}
	a.terminals = &terminalService{opts: c.opts.Terminal, dir: c.opts.Dir, roots: roots, terms: newTerminals(&c.opts, roots), planMode: c.PlanMode, hook: hook}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.perms = &broker{
		ctx: a.ctx, wg: &a.wg, cb: &a.cb, log: c.opts.Debug.Logger,
		timeout: c.opts.PermissionTimeout, planMode: c.PlanMode, poisoned: a.poisoned.Load,
		idle: make(chan *pendingPermission),
	}
	a.elicitor = &elicitor{
		ctx: a.ctx, wg: &a.wg, cb: &a.cb, log: c.opts.Debug.Logger,
		timeout: c.opts.Elicitation.Timeout, hook: c.opts.Elicitation.OnRequest, poisoned: a.poisoned.Load,
	}
	a.dispatcher = &dispatcher{
		q: newQueue(c.opts.Limits.MaxQueuedUpdates, c.opts.Limits.MaxQueuedBytes), cb: &a.cb, ended: make(chan struct{}),
		sessions: a.sessions, foreign: a.foreign, perms: a.perms,
	}
	a.gen = int(c.gens.Add(1))
	wopts := wire.Options{MaxMessage: c.opts.Limits.MaxLineBytes, Inbound: a.inbound, Skipped: a.skipped, Ended: a.readEnded}
	if c.rec != nil {
		wopts.Trace = func(dir string, msg []byte) { c.rec.message(a.gen, dir, msg) }
	}
	a.conn = l.connect(wopts)
	a.writes = &writes{
		conn: a.conn, ctx: a.ctx, grace: c.opts.Timeouts.CancelGrace, timeout: c.opts.Timeouts.WriteTimeout,
		lift: a.lift, poison: a.poison, stop: a.stop, deathCause: a.deathCause,
	}
	a.replies = &replier{conn: a.conn, log: c.opts.Debug.Logger, wg: &a.wg, q: a.dispatcher.q}
	a.conn.Start() // what its hooks use is in place: a.conn, a.writes, a.replies
	l.pump(&a.wg, a.stderrSink())
	l.watch(&a.wg, a.ctx.Done(), a.linkEnded)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.dispatcher.run()
	}()
	if c.opts.Timeouts.WriteTimeout > 0 {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.writes.watch()
		}()
	}
	if err := a.handshake(ctx); err != nil {
		return nil, a.failStart(err)
	}
	a.profile = c.profileFor(a.init.AgentInfo.Name)
	a.stateDirs = a.profile.stateDirsOutside(c.agentEnv(), c.opts.Dir)
	if pl, ok := l.(*processLink); ok {
		a.planKernel, a.planView, a.noView = pl.planConfined, pl.planView, pl.viewReason()
	}
	return a, nil
}

// failStart shuts the agent down after a start-up call (initialize,
// authenticate, the first session) failed with err, and returns what to
// report: the agent's exit (status and stderr) when it died, else err. A
// write that met a broken pipe is the agent's exit, waited for (bounded):
// the write fails before the exit is seen.
func (a *agent) failStart(err error) error {
	if errors.Is(err, syscall.EPIPE) && a.link.waitExit(time.Second) {
		err = a.link.end(false)
	}
	a.shutdown(err)
	return a.startError(err)
}

// startError prefers the agent's death cause (exit status and stderr) over
// the symptom a start-up call saw.
func (a *agent) startError(err error) error {
	select {
	case <-a.dead:
		if a.cause != nil && !errors.Is(a.cause, ErrClosed) {
			return a.cause
		}
	default:
	}
	return err
}

// The end of the process (or link) and the end of the connection become
// the agent's death cause, failing every pending call with it at once.
// No goroutine waits for either: linkEnded runs once the agent has exited
// (on the goroutine that saw it), readEnded when the read loop ends (on
// it). Each does nothing once the agent is shut down or dead.

// linkEnded reports the agent's exit, or the loss of its link.
func (a *agent) linkEnded() {
	if a.ctx.Err() != nil {
		return
	}
	// Let the reader take what the agent wrote before it died (bounded: a
	// grandchild may hold stdout open).
	drain := time.NewTimer(250 * time.Millisecond)
	select {
	case <-a.conn.ReadDone():
	case <-drain.C:
	}
	drain.Stop()
	a.die(a.link.end(a.turnRunning()))
}

// readEnded reports the end of the connection.
func (a *agent) readEnded() {
	if a.ctx.Err() != nil {
		return
	}
	a.die(a.connectionError())
}

// connectionError explains why the connection ended: a protocol failure, or
// an agent that closed stdout (reported with its exit if it follows soon).
func (a *agent) connectionError() error {
	readErr := a.conn.ReadErr()
	var le *wire.LineError
	if errors.As(readErr, &le) {
		return &ProtocolError{Msg: fmt.Sprintf("a line from the agent exceeds %d bytes", le.Limit), Err: ErrLineTooLong, Stderr: a.stderrTail()}
	}
	if a.link.waitExit(time.Second) {
		return a.link.end(a.turnRunning())
	}
	if readErr == nil || errors.Is(readErr, io.EOF) {
		return &ProtocolError{Msg: "the agent closed its output", Err: io.EOF, Stderr: a.stderrTail()}
	}
	return &ProtocolError{Msg: "reading from the agent", Err: readErr, Stderr: a.stderrTail()}
}

func (a *agent) stderrTail() string {
	return a.link.stderrTail()
}

// die records the cause once, closes the connection (failing every
// pending call, prompts included, with it) and wakes everything waiting on
// the agent; the ctx of every request being handled ends with a.ctx.
func (a *agent) die(cause error) {
	a.deathOnce.Do(func() {
		a.cause = cause
		close(a.dead)
		a.cancel()
		a.conn.Close(cause)
		a.writes.abortFor(cause, true) // a write blocked on a dead agent would wait for Close
		a.dispatcher.q.close()
		a.requests.close()
	})
}

// shutdown ends the agent for good and waits for all its goroutines —
// unless it is called from one of them (Close from a callback), which it
// cannot wait for: those end once the callback returns.
func (a *agent) shutdown(cause error) {
	a.stop(cause)
	if !a.cb.inCallback(goid()) {
		a.join()
	}
}

// stop ends the agent: pending calls fail with cause, the process is
// terminated (stdin EOF, SIGTERM, SIGKILL to the group), pipes and
// terminals are closed. It does not wait for the agent's goroutines.
func (a *agent) stop(cause error) {
	a.shutOnce.Do(func() {
		a.die(cause) // first, so the exit we cause is not reported as a crash
		a.conn.Halt()
		a.link.stop(a.opts.Timeouts.CloseGrace)
		if a.terminals.terms != nil {
			a.terminals.terms.Close()
		}
	})
}

// join waits for the read loop and every goroutine of the agent to end.
func (a *agent) join() {
	<-a.conn.Done()
	a.wg.Wait()
}

// closedByClient reports whether the agent was shut down by Close.
func (a *agent) closedByClient() bool { return a.isDead() && errors.Is(a.cause, ErrClosed) }

func (a *agent) turnRunning() bool {
	return a.turns.Load() > 0
}

// deathCause returns the cause of death, waiting briefly for it to be set
// when a call or a write failed because the agent is going; fallback when
// the agent turns out to live on.
func (a *agent) deathCause(fallback error) error {
	t := time.NewTimer(2 * time.Second) // the exit (or EOF) is usually seen at once
	defer t.Stop()
	select {
	case <-a.dead:
		return a.cause
	case <-t.C:
		return fallback
	}
}

// poison marks the agent as never to be reused: the next turn replaces it,
// reporting cause.
func (a *agent) poison(cause error) {
	a.mu.Lock()
	if a.poisonedBy == nil {
		a.poisonedBy = cause
	}
	a.mu.Unlock()
	a.poisoned.Store(true)
}

// poisonCause is the cause given to poison, or nil.
func (a *agent) poisonCause() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.poisonedBy
}

// call makes a host→agent request and decodes its result into result.
func (a *agent) call(ctx context.Context, method string, params, result any) error {
	a.lift(1)
	defer a.lift(-1)
	return a.callError(method, a.guardedCall(ctx, method, params, result, nil))
}

// guardedCall is conn.Call with its writes bounded once ctx ends (see
// writeGuard); atAnswer runs on the read loop as the answer is read.
func (a *agent) guardedCall(ctx context.Context, method string, params, result any, atAnswer func(json.RawMessage)) error {
	g := a.writes.guard(ctx)
	err := a.conn.Call(ctx, method, params, result, atAnswer)
	g.release()
	return a.writes.notReading(err, g.armedBy())
}

// callError converts the connection's errors to this package's.
func (a *agent) callError(method string, err error) error {
	if err == nil {
		return nil
	}
	var je *wire.Error
	if errors.As(err, &je) {
		e := &RPCError{Code: je.Code, Message: je.Message, Method: method}
		if string(je.Data) != "null" {
			e.Data = je.Data
		}
		return e
	}
	if errors.Is(err, wire.ErrMalformedAnswer) {
		return &ProtocolError{Msg: method + " answered with a malformed error", Err: err}
	}
	if errors.Is(err, wire.ErrClosed) {
		return a.deathCause(ErrClosed)
	}
	return err
}

// notify sends a host→agent notification.
func (a *agent) notify(method string, params any) error {
	return a.callError(method, a.conn.Notify(method, params))
}

// lift raises (+1) or lowers (-1) the count of calls and waits during
// which the update queue and the request budget take more than their
// bounds, so the agent's answer can be read although the dispatcher (or a
// hook) waits for it; see queue.
func (a *agent) lift(delta int) {
	a.dispatcher.q.lift(delta)
	a.requests.lift(delta)
}

// stderrSink is where the agent's stderr goes besides the tail.
func (a *agent) stderrSink() io.Writer {
	var sinks []io.Writer
	if a.opts.Process.Stderr != nil {
		sinks = append(sinks, a.opts.Process.Stderr)
	}
	if a.c.rec != nil {
		sinks = append(sinks, &stderrLines{rec: a.c.rec, gen: a.gen})
	}
	switch len(sinks) {
	case 0:
		return nil
	case 1:
		return sinks[0]
	}
	return io.MultiWriter(sinks...)
}
