package acphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acphost/acphost/internal/fastjson"
	"github.com/acphost/acphost/internal/sandbox"
	"github.com/acphost/acphost/internal/wire"
)

// agent is one generation of the client's agent: a process (or a given
// connection), its JSON-RPC connection, dispatcher and session. A client
// replaces its agent only when a turn had to be abandoned.
type agent struct {
	c         *ACPClient
	opts      *ACPOptions
	link      link // how the agent is reached: its process, or Connect's stream
	stream    *wire.Stream
	conn      *wire.Conn // calls (prompts included), replies, the requests being handled
	q         *queue
	init      initResult
	caps      agentCaps
	files     *fileService     // fs/*; its opts nil unless served
	terminals *terminalService // terminal/*; its opts nil unless served

	ctx    context.Context // ends when the agent is shut down or dies
	cancel context.CancelFunc

	dead       chan struct{} // closed once cause is set
	dispatched chan struct{} // closed when the dispatcher has ended
	cause      error
	deathOnce  sync.Once
	shutOnce   sync.Once
	poisoned   atomic.Bool // never reuse the agent: see poison
	poisonedBy error       // guarded by mu
	abortedBy  error       // why the writes were aborted, first wins; guarded by mu
	abortDeath bool        // abortedBy is the agent's death

	cb callbacks      // goroutines running user code
	wg sync.WaitGroup // every goroutine of this agent

	brokers     chan *pendingPermission // idle broker goroutines take requests here
	idleBrokers atomic.Int32
	gen         int // which agent process of the client this is (1, 2, …)

	turns atomic.Int32 // turns running

	mu       sync.Mutex
	sessions map[string]*sessionState // the sessions this connection opened or is opening
	opening  map[*newCall]struct{}    // session/new calls awaiting their answer

	requests  *requestBudget // agent→client requests being handled
	fileSlots chan struct{}  // fs requests holding file content (maxFileRequests)
	// The dispatcher's own: the session of the previous update (most
	// updates repeat it), and the items held back while a session/new
	// waits for its answer (see park).
	last      *sessionState
	parked    []item
	parkedSz  int
	releasing bool
}

// presence is a capability advertised by an object's presence.
type presence json.RawMessage

func (p presence) present() bool { return present(json.RawMessage(p)) }

func (p *presence) UnmarshalJSON(b []byte) error {
	*p = append((*p)[:0], b...)
	return nil
}

// agentCaps is what this client reads of agentCapabilities.
type agentCaps struct {
	LoadSession         bool `json:"loadSession"`
	SessionCapabilities struct {
		List                  presence `json:"list"`
		Resume                presence `json:"resume"`
		Close                 presence `json:"close"`
		AdditionalDirectories presence `json:"additionalDirectories"`
	} `json:"sessionCapabilities"`
}

type initResult struct {
	ProtocolVersion   int             `json:"protocolVersion"`
	AgentCapabilities json.RawMessage `json:"agentCapabilities"`
	AuthMethods       []AuthMethod    `json:"authMethods"`
	AgentInfo         Implementation  `json:"agentInfo"`
}

// inflight is an agent→client request being handled: its share of the
// request budget, and for the requests $/cancel_request can end, a ctx
// that cancel ends (a child of the agent's: its death ends them all).
// Those are registered with the connection as the request is read, so a
// $/cancel_request that arrives before the handler starts is not lost.
type inflight struct {
	a        *agent
	size     int // the bytes of its share of the request budget
	finished atomic.Bool
	ctx      context.Context
	cancel   context.CancelFunc
	perm     *pendingPermission // set under agent.mu once the broker starts
}

// cancellable gives in a ctx and registers it under id.
func (a *agent) cancellable(id json.RawMessage, in *inflight) *inflight {
	in.ctx, in.cancel = context.WithCancel(a.ctx)
	a.conn.Track(id, in)
	return in
}

// Cancel handles the agent's $/cancel_request for the request: its
// handler sees its ctx end, and a permission request is answered
// "cancelled" at once (off the read loop).
func (in *inflight) Cancel() {
	in.cancel()
	a := in.a
	a.mu.Lock()
	perm := in.perm
	a.mu.Unlock()
	if perm != nil {
		a.goSettle(perm, answerCancelled(ReasonWithdrawn))
	}
}

// finish returns in's share of the request budget, once: call it when the
// request has been answered (or its answer failed).
func (a *agent) finish(in *inflight) {
	if in != nil && in.finished.CompareAndSwap(false, true) {
		a.requests.release(in.size)
	}
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
		dead:       make(chan struct{}),
		dispatched: make(chan struct{}),
		sessions:   map[string]*sessionState{},
		opening:    map[*newCall]struct{}{},
		brokers:    make(chan *pendingPermission),
		requests:   newRequestBudget(c.opts.MaxPendingRequests, c.opts.MaxQueuedBytes),
		fileSlots:  make(chan struct{}, maxFileRequests),
	}
	hook := func(session, what string, f func()) error { return a.userCall(goid(), session, what, f) }
	a.files = &fileService{opts: c.opts.FS, roots: roots, writable: c.writable, planMode: c.PlanMode, hook: hook}
	a.terminals = &terminalService{opts: c.opts.Terminal, dir: c.opts.Dir, roots: roots, terms: newTerminals(&c.opts, roots), planMode: c.PlanMode, hook: hook}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.q = newQueue(c.opts.MaxQueuedUpdates, c.opts.MaxQueuedBytes)
	r, w := l.stream()
	a.stream = wire.New(r, w, c.opts.MaxLineBytes)
	a.stream.Skipped = a.skipped
	a.gen = int(c.gens.Add(1))
	if c.rec != nil {
		a.stream.Trace = func(dir string, msg []byte) { c.rec.message(a.gen, dir, msg) }
	}
	a.conn = wire.NewConn(a.stream, a.inbound)
	l.pump(&a.wg, a.stderrSink())
	a.wg.Add(2)
	go a.dispatchLoop()
	go a.supervise()
	if c.opts.WriteTimeout > 0 {
		a.wg.Add(1)
		go a.watchWrites()
	}
	if err := a.handshake(ctx); err != nil {
		a.shutdown(err)
		return nil, a.startError(err)
	}
	return a, nil
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

// supervise turns the end of the process or of the connection into the
// agent's death cause, failing every pending call with it at once.
func (a *agent) supervise() {
	defer a.wg.Done()
	select {
	case <-a.link.exited():
		// Let the reader take what the agent wrote before it died (bounded: a
		// grandchild may hold stdout open).
		drain := time.NewTimer(250 * time.Millisecond)
		select {
		case <-a.stream.ReadDone():
		case <-drain.C:
		}
		drain.Stop()
		a.die(a.link.exitError(a.turnRunning()))
	case <-a.conn.Done():
		a.die(a.connectionError())
	case <-a.ctx.Done():
	}
}

// connectionError explains why the connection ended: a protocol failure, or
// an agent that closed stdout (reported with its exit if it follows soon).
func (a *agent) connectionError() error {
	readErr := a.stream.ReadErr()
	var le *wire.LineError
	if errors.As(readErr, &le) {
		return &ProtocolError{Msg: fmt.Sprintf("a line from the agent exceeds %d bytes", le.Limit), Err: ErrLineTooLong, Stderr: a.stderrTail()}
	}
	if a.link.waitExit(time.Second) {
		return a.link.exitError(a.turnRunning())
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
		a.abortWritesFor(cause, true) // a write blocked on a dead agent would wait for Close
		a.q.close()
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
		a.stream.Halt()
		a.link.stop(a.opts.CloseGrace)
		if a.terminals.terms != nil {
			a.terminals.terms.Close()
		}
	})
}

// join waits for the reader and every goroutine of the agent to end.
func (a *agent) join() {
	<-a.stream.ReadDone()
	a.wg.Wait()
}

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
	g := a.guardWrites(ctx)
	err := a.conn.Call(ctx, method, params, result, atAnswer)
	g.release()
	return a.notReading(err, g.armedBy())
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

// handshake runs initialize and, when configured, authenticate.
func (a *agent) handshake(ctx context.Context) error {
	if err := a.call(ctx, "initialize", a.initializeParams(), &a.init); err != nil {
		return fmt.Errorf("acphost: initialize: %w", err)
	}
	if a.init.ProtocolVersion != ProtocolVersion {
		return &ProtocolError{Msg: fmt.Sprintf("agent speaks protocol version %d; acphost speaks %d", a.init.ProtocolVersion, ProtocolVersion)}
	}
	_ = json.Unmarshal(a.init.AgentCapabilities, &a.caps)
	if m := a.opts.AuthMethod; m != "" {
		if err := a.authenticate(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (a *agent) authenticate(ctx context.Context, method string) error {
	if err := a.call(ctx, "authenticate", map[string]string{"methodId": method}, nil); err != nil {
		return fmt.Errorf("acphost: authenticate %q: %w", method, err)
	}
	return nil
}

func (a *agent) initializeParams() any {
	fs := a.opts.FS
	caps := map[string]any{
		"fs":       map[string]bool{"readTextFile": fs != nil && fs.Read, "writeTextFile": fs != nil && fs.Write},
		"terminal": a.opts.Terminal != nil,
	}
	if a.opts.PermissionPresentation {
		caps["_meta"] = map[string]any{"jetbrains": map[string]any{"air": map[string]any{}}}
	}
	return map[string]any{
		"protocolVersion":    ProtocolVersion,
		"clientCapabilities": caps,
		"clientInfo":         a.opts.ClientInfo,
	}
}

type openResult struct {
	SessionID     string          `json:"sessionId"`
	Modes         *SessionModes   `json:"modes"`
	ConfigOptions json.RawMessage `json:"configOptions"`
}

// openKind is how a session is opened on an agent.
type openKind int

const (
	openNew openKind = iota
	openLoad
	openResume
)

var openMethods = [...]string{openNew: "session/new", openLoad: "session/load", openResume: "session/resume"}

// open opens h's session on this agent (new, load or resume), binds the
// agent-side record to h and sets h's initial mode.
func (a *agent) open(ctx context.Context, h *Session, how openKind) (err error) {
	method := openMethods[how]
	if !a.supports(how) {
		return fmt.Errorf("acphost: the agent does not support %s: %w", method, ErrUnsupported)
	}
	params := map[string]any{"cwd": h.opts.Dir, "mcpServers": h.opts.MCPServers}
	if how != openNew {
		params["sessionId"] = h.ID()
		known := a.known(h.ID()) != nil
		s := a.session(h.ID())
		prev := s.pub.Swap(h) // the replay goes to h's hooks
		defer func() {
			switch {
			case err == nil:
			case known:
				s.pub.Store(prev)
			default: // not opened after all: its id is foreign again
				a.dropSession(h.ID())
			}
		}()
	}
	res, err := a.openCall(ctx, how, params, h)
	if errors.Is(err, &RPCError{Code: CodeAuthRequired}) && a.opts.AuthMethod == "" {
		if m := a.firstAuthMethod(); m != "" {
			if err := a.authenticate(ctx, m); err != nil {
				return err
			}
			res, err = a.openCall(ctx, how, params, h)
		}
	}
	if err != nil {
		return fmt.Errorf("acphost: %s: %w", method, err)
	}
	if how == openNew {
		if res.SessionID == "" {
			return &ProtocolError{Msg: "session/new answered without a sessionId"}
		}
		if s := a.known(res.SessionID); s == nil || s.pub.Load() != h {
			return &ProtocolError{Msg: fmt.Sprintf("session/new answered with the id of a session already open on this connection (%q)", res.SessionID)}
		}
		h.setID(res.SessionID)
	}
	s := a.session(h.ID())
	s.bind(h)
	s.setState(res.Modes, decodeConfigOptions(res.ConfigOptions))
	if h.opts.Mode != "" {
		if err := a.call(ctx, "session/set_mode", map[string]string{"sessionId": h.ID(), "modeId": h.opts.Mode}, nil); err != nil {
			return fmt.Errorf("acphost: setting mode %q: %w", h.opts.Mode, err)
		}
	}
	return nil
}

func (a *agent) supports(how openKind) bool {
	switch how {
	case openLoad:
		return a.caps.LoadSession
	case openResume:
		return a.caps.SessionCapabilities.Resume.present()
	}
	return true
}

// openCall makes the open request. A load's replayed updates are marked as
// replay and all delivered before it returns (a barrier, as for prompts).
func (a *agent) openCall(ctx context.Context, how openKind, params map[string]any, h *Session) (openResult, error) {
	id := h.ID()
	var res openResult
	switch how {
	case openNew:
		return res, a.callOpening(ctx, params, &res, h)
	case openResume:
		return res, a.call(ctx, openMethods[how], params, &res)
	}
	if a.cb.fromDispatcher() {
		return res, fmt.Errorf("acphost: LoadSession from OnUpdate or emit: %w", ErrReentrant)
	}
	s := a.session(id)
	s.replaying.Store(true)
	done := make(chan struct{})
	err := a.callWithBarrier(ctx, "session/load", params, &res, func() {
		s.replaying.Store(false)
		close(done)
	})
	if err != nil {
		s.replaying.Store(false)
		return res, err
	}
	select {
	case <-done:
		return res, nil
	case <-a.dead:
		return res, a.cause
	}
}

// lift raises (+1) or lowers (-1) the count of calls and waits during
// which the update queue and the request budget take more than their
// bounds, so the agent's answer can be read although the dispatcher (or a
// hook) waits for it; see queue.
func (a *agent) lift(delta int) {
	a.q.lift(delta)
	a.requests.lift(delta)
}

// newCall is a session/new call awaiting its answer, for h.
type newCall struct{ h *Session }

// callOpening is call for session/new: until it is answered the agent's
// updates for a session not known yet are held back (see park), and the
// new session's record is made on the read loop as the answer is read,
// so what the agent sends after its answer finds it.
func (a *agent) callOpening(ctx context.Context, params map[string]any, res *openResult, h *Session) error {
	nc := &newCall{h: h}
	a.mu.Lock()
	a.opening[nc] = struct{}{}
	a.mu.Unlock()
	defer a.opened(nc, nil) // unanswered: hold nothing back for it any more
	a.lift(1)
	defer a.lift(-1)
	return a.callError("session/new", a.guardedCall(ctx, "session/new", params, res, func(result json.RawMessage) { a.opened(nc, result) }))
}

// opened ends the wait of session/new call nc, making the record of the
// session it answered (when result holds one), and has the dispatcher
// release what it held back. It runs on the read loop for an answer.
func (a *agent) opened(nc *newCall, result json.RawMessage) {
	a.mu.Lock()
	_, waiting := a.opening[nc]
	delete(a.opening, nc)
	h := nc.h
	if !waiting {
		h = nil
	}
	if h != nil && result != nil {
		if sid := sessionIDIn(result); sid != "" && a.sessions[sid] == nil {
			s := newSessionState(a, sid)
			s.bind(h)
			a.sessions[sid] = s
		}
	}
	a.mu.Unlock()
	if h != nil {
		a.q.push(item{kind: itemBarrier, barrier: a.releaseParked}, false) // on the dispatcher, never here
	}
}

// callWithBarrier is call, with atBarrier run on the dispatcher once every
// message read before the answer has been dispatched (queued on the read
// loop as the answer is read, before the call returns).
func (a *agent) callWithBarrier(ctx context.Context, method string, params, result any, atBarrier func()) error {
	err := a.guardedCall(ctx, method, params, result, func(json.RawMessage) { a.q.barrier(atBarrier) })
	return a.callError(method, err)
}

func (a *agent) firstAuthMethod() string {
	for _, m := range a.init.AuthMethods {
		if m.Type == "" || m.Type == "agent" {
			return m.ID
		}
	}
	return ""
}

// decodeConfigOptions keeps every option it can decode; an option of an
// unknown type is kept with its raw JSON, a malformed one is skipped.
func decodeConfigOptions(raw json.RawMessage) []ConfigOption {
	return decodeEach(raw, func(item json.RawMessage) (ConfigOption, bool) {
		var o ConfigOption
		return o, json.Unmarshal(item, &o) == nil
	})
}

// dropSession forgets a closed session's record (its tool calls, modes),
// so a long-lived process does not keep every session it ever served.
func (a *agent) dropSession(id string) {
	a.mu.Lock()
	if s := a.sessions[id]; s != nil {
		s.dropped.Store(true)
		delete(a.sessions, id)
	}
	a.mu.Unlock()
}

// known returns the record of a session this connection opened (or is
// opening by load or resume), nil for any other id: what the agent names is
// looked up here, never created.
func (a *agent) known(id string) *sessionState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

// session returns the record of a session the host opens or uses,
// creating it.
func (a *agent) session(id string) *sessionState {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[id]
	if s == nil {
		s = newSessionState(a, id)
		a.sessions[id] = s
	}
	return s
}

// inbound routes each request and notification; it runs on the read loop
// and must not block except for backpressure: room in the update queue
// and a share of the request budget for a request.
func (a *agent) inbound(m wire.Message) {
	if a.ctx.Err() != nil {
		return // the agent is being shut down: start nothing
	}
	var in *inflight
	if m.ID != nil {
		switch err := a.requests.acquire(len(m.Params)); {
		case errors.Is(err, ErrFlood):
			a.flooded(fmt.Sprintf("more than %d requests or %d bytes of them waited for an answer while a call waited for the agent's", liftedFactor*a.requests.maxN, liftedFactor*a.requests.maxBytes))
			return
		case err != nil:
			return // the agent is gone
		}
		in = &inflight{a: a, size: len(m.Params)}
	}
	switch m.Method {
	case "session/update":
		a.enqueue(item{kind: itemUpdate, size: itemOverhead + len(m.Params), params: m.Params})
		a.ackNotificationSentAsRequest(m, in)
	case "session/request_permission":
		if in == nil {
			a.opts.Logger.Warn("acphost: session/request_permission without an id: cannot be answered")
			return
		}
		a.enqueue(item{kind: itemPermission, size: itemOverhead + len(m.Params), id: m.ID, params: m.Params, in: a.cancellable(m.ID, in)})
	case "$/cancel_request":
		a.conn.CancelRequest(m.Params)
		a.ackNotificationSentAsRequest(m, in)
	default:
		if in == nil {
			return // unknown notifications are ignored, as the spec asks
		}
		h := a.service(m.Method)
		switch {
		case h == nil:
			a.goReplyError(in, m.ID, CodeMethodNotFound, "method not found: "+m.Method)
		case a.known(sessionIDIn(m.Params)) == nil:
			a.refuseForeign(in, m.ID, m.Method, sessionIDIn(m.Params))
		default:
			a.serveRequest(m, a.cancellable(m.ID, in), h)
		}
	}
}

// enqueue queues it for the dispatcher; an agent that floods the lifted
// queue is stopped.
func (a *agent) enqueue(it item) {
	if a.q.push(it, true) {
		return
	}
	a.finish(it.in)
	a.flooded(fmt.Sprintf("more than %d bytes of updates waited for delivery while a call waited for the agent's answer", liftedFactor*a.q.limitBytes))
}

// flooded stops reading an agent that sent more than the lifted bounds
// allow, and ends it (see ErrFlood).
func (a *agent) flooded(what string) {
	a.stream.Halt()
	a.die(&ProtocolError{Msg: what, Err: ErrFlood, Stderr: a.stderrTail()})
}

// ackNotificationSentAsRequest answers {} to a notification method the
// agent sent with an id, so it does not wait forever.
func (a *agent) ackNotificationSentAsRequest(m wire.Message, in *inflight) {
	if m.ID != nil {
		a.goReply(in, m.ID, struct{}{}, nil)
	}
}

// sessionIDIn reads the sessionId of a request's params ("" if none).
// It reads as the handlers do (encoding/json: the last of duplicate keys,
// any case), so the session checked is the session served.
func sessionIDIn(params json.RawMessage) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(params, &p)
	return p.SessionID
}

// refuseForeign answers a request that names a session this connection
// never opened: it reaches no hook (SPEC.md, Containment).
func (a *agent) refuseForeign(in *inflight, id json.RawMessage, method, session string) {
	a.countForeign(method, session)
	a.goReplyError(in, id, CodeInvalidParams, "unknown session: "+strconv.Quote(session))
}

// countForeign reports a message for a session the connection does not
// know.
func (a *agent) countForeign(method, session string) {
	if a.c.foreign.Add(1) <= 100 { // the first ones tell the story; a flood would drown the log
		a.opts.Logger.Warn("acphost: the agent named a session it was not given", "method", method, "session", session)
	}
}

// service returns the handler of an agent→client method the client serves.
func (a *agent) service(method string) func(context.Context, json.RawMessage) (any, error) {
	if h := a.files.handler(method); h != nil {
		return h
	}
	return a.terminals.handler(method)
}

// promptOutcomeOf decodes a prompt's answer.
func promptOutcomeOf(result, rpcErr json.RawMessage) promptOutcome {
	var out promptOutcome
	if len(rpcErr) > 0 && string(rpcErr) != "null" {
		var e wire.Error
		if err := json.Unmarshal(rpcErr, &e); err != nil {
			out.err = &ProtocolError{Msg: "session/prompt answered with a malformed error", Err: err}
		} else {
			out.err = &RPCError{Code: e.Code, Message: e.Message, Data: e.Data, Method: "session/prompt"}
		}
		return out
	}
	if res, ok := decodePromptResult(result); ok {
		out.res = res
		return out
	}
	if err := json.Unmarshal(result, &out.res); err != nil {
		out.err = &ProtocolError{Msg: "session/prompt answered with a malformed result", Err: err}
	}
	return out
}

// decodePromptResult reads a prompt's result in one pass, as encoding/json
// would; ok is false for anything it leaves to encoding/json (see
// fastjson.FoldsTo). result is only valid during the call: _meta is copied.
func decodePromptResult(result json.RawMessage) (r promptResult, ok bool) {
	c := fastjson.Cursor{B: result}
	ok = c.Object(func(key []byte) bool {
		switch string(key) {
		case "stopReason":
			if c.Null() {
				return true
			}
			s, ok := c.StrBytes()
			r.StopReason = knownStopReason(s)
			return ok
		case "_meta":
			v, ok := c.Value()
			r.Meta = bytes.Clone(v)
			return ok
		}
		if fastjson.FoldsTo(key, "stopReason", "_meta") {
			return false
		}
		_, ok := c.Value()
		return ok
	})
	return r, ok && c.End()
}

// knownStopReason returns s without allocating for the reasons ACP defines.
func knownStopReason(s []byte) StopReason {
	for _, r := range [...]StopReason{StopEndTurn, StopCancelled, StopMaxTokens, StopMaxTurnRequests, StopRefusal} {
		if string(s) == string(r) {
			return r
		}
	}
	return StopReason(s)
}

// stderrSink is where the agent's stderr goes besides the tail.
func (a *agent) stderrSink() io.Writer {
	var sinks []io.Writer
	if a.opts.Stderr != nil {
		sinks = append(sinks, a.opts.Stderr)
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

func (a *agent) skipped(line []byte) {
	a.c.rec.line(a.gen, "skip", line)
	if a.opts.OnSkippedLine != nil {
		a.opts.OnSkippedLine(line)
	}
	a.opts.Logger.Debug("acphost: skipped a stdout line that is not JSON-RPC 2.0", "bytes", len(line))
}

// goReplyError answers a request with an error, off the read loop.
func (a *agent) goReplyError(in *inflight, id json.RawMessage, code int, msg string) {
	a.goReply(in, id, nil, &wire.Error{Code: code, Message: msg})
}

// goReply answers a request off the read loop, then returns its share of
// the request budget.
func (a *agent) goReply(in *inflight, id json.RawMessage, result any, rpcErr *wire.Error) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.finish(in)
		a.reply(id, result, rpcErr)
	}()
}

func (a *agent) reply(id json.RawMessage, result any, rpcErr *wire.Error) {
	a.replied(id, a.conn.Reply(id, result, rpcErr))
}

// replied logs a reply that could not be written (the agent is going).
func (a *agent) replied(id json.RawMessage, err error) {
	if err != nil {
		a.opts.Logger.Debug("acphost: reply failed", "id", string(id), "err", err)
	}
}

// untrack forgets an agent→client request: $/cancel_request no longer
// reaches it.
func (a *agent) untrack(id json.RawMessage) { a.conn.Untrack(id) }
