package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/confine"
	"github.com/acphost/acphost/internal/sandbox"
	"github.com/acphost/acphost/internal/wire"
)

// agent is one generation of the client's agent: a process (or a given
// connection), its JSON-RPC connection, dispatcher and session. A client
// replaces its agent only when a turn had to be abandoned.
type agent struct {
	opts       *ACPOptions
	planMode   func() bool   // the client's plan mode, now
	rec        *wireRecorder // nil: not recording
	link       link          // how the agent is reached: its process, or a StreamTransport's stream
	conn       *wire.Conn    // calls (prompts included), replies, the requests being handled
	dispatcher *dispatcher   // the ordered queue and its delivery
	writes     *writes       // guards against an agent that stops reading
	init       initResult
	caps       agentCaps
	files      *fileService     // fs/*; its opts nil unless served
	terminals  *terminalService // terminal/*; its opts nil unless served

	// systemPrompt is the modes of system prompt the agent advertised
	// (acp.SystemPromptModes of its capabilities); nil: none.
	systemPrompt []acp.SystemPromptMode

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
	env   *turnEnv     // what its turns need of it

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

// wiring is what a client hands each agent it dials: its options and the
// few things of the client's an agent reports to or reads. The agent holds
// no client.
type wiring struct {
	opts     *ACPOptions
	planMode func() bool    // the client's plan mode, now
	rec      *wireRecorder  // nil: not recording
	foreign  *atomic.Int64  // the client's count of foreign messages, across agents
	gens     *atomic.Int64  // the client's count of agents dialled: this one's number
	roots    *sandbox.Roots // the fs roots, opened once by the client
	writable *sandbox.Roots // a confined agent's Writable; nil unless confined
	// defaultWarned is set once the default permission answer was warned
	// of: once per client, across its agents.
	defaultWarned *atomic.Bool
}

func dialAgent(ctx context.Context, w wiring, dial dialer) (*agent, error) {
	l, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	return connectAgent(ctx, w, l)
}

func connectAgent(ctx context.Context, w wiring, l link) (*agent, error) {
	a := &agent{
		opts: w.opts, planMode: w.planMode, rec: w.rec, link: l,
		dead:      make(chan struct{}),
		sessions:  newSessionTable(),
		foreign:   foreign{n: w.foreign, log: w.opts.Debug.Logger},
		requests:  newRequestBudget(w.opts.Limits.MaxPendingRequests, w.opts.Limits.MaxQueuedBytes),
		fileSlots: make(chan struct{}, maxFileRequests),
	}
	a.cb.log = w.opts.Debug.Logger
	hook := func(session, what string, f func()) error { return a.cb.userCall(goid(), session, what, f) }
	a.files = &fileService{opts: w.opts.FS, roots: w.roots, writable: w.writable, planMode: w.planMode, hook: hook}
	a.terminals = &terminalService{opts: w.opts.Terminal, dir: w.opts.Dir, roots: w.roots, terms: newTerminals(w.opts, w.roots), planMode: w.planMode, hook: hook}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.perms = &broker{
		ctx: a.ctx, wg: &a.wg, cb: &a.cb, log: w.opts.Debug.Logger,
		timeout: w.opts.PermissionTimeout, planMode: w.planMode, poisoned: a.poisoned.Load,
		idle: make(chan *pendingPermission), defaultWarned: w.defaultWarned,
	}
	a.elicitor = &elicitor{
		ctx: a.ctx, wg: &a.wg, cb: &a.cb, log: w.opts.Debug.Logger,
		timeout: w.opts.Elicitation.Timeout, hook: w.opts.Elicitation.OnRequest, poisoned: a.poisoned.Load,
	}
	a.dispatcher = &dispatcher{
		q: newQueue(w.opts.Limits.MaxQueuedUpdates, w.opts.Limits.MaxQueuedBytes), cb: &a.cb, ended: make(chan struct{}),
		sessions: a.sessions, foreign: a.foreign, perms: a.perms,
	}
	a.gen = int(w.gens.Add(1))
	rt := &router{
		ctx: a.ctx, debug: w.opts.Debug, onComplete: w.opts.Elicitation.OnComplete, modes: w.opts.elicitationModes(), sessions: a.sessions, foreign: &a.foreign, dispatcher: a.dispatcher,
		requests: a.requests, elicitor: a.elicitor, files: a.files, terminals: a.terminals, fileSlots: a.fileSlots,
		cb: &a.cb, wg: &a.wg, rec: w.rec, gen: a.gen, die: a.die, stderrTail: a.stderrTail,
	}
	wopts := wire.Options{MaxMessage: w.opts.Limits.MaxLineBytes, Inbound: rt.inbound, Skipped: rt.skipped, Ended: a.readEnded}
	if w.rec != nil {
		wopts.Trace = func(dir string, msg []byte) { w.rec.message(a.gen, dir, msg) }
	}
	a.conn = l.connect(wopts)
	a.writes = &writes{
		conn: a.conn, ctx: a.ctx, grace: w.opts.Timeouts.CancelGrace, timeout: w.opts.Timeouts.WriteTimeout,
		lift: a.lift, poison: a.poison, stop: a.stop, deathCause: a.deathCause,
	}
	a.replies = &replier{conn: a.conn, log: w.opts.Debug.Logger, wg: &a.wg, q: a.dispatcher.q}
	rt.conn, rt.replies = a.conn, a.replies
	a.env = a.newTurnEnv()
	a.conn.Start() // what its hooks use is in place: a.conn, a.writes, a.replies, the router's
	l.pump(&a.wg, a.stderrSink())
	l.watch(&a.wg, a.ctx.Done(), a.linkEnded)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.dispatcher.run()
	}()
	if w.opts.Timeouts.WriteTimeout > 0 {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.writes.watch()
		}()
	}
	if err := a.handshake(ctx); err != nil {
		return nil, a.failStart(err)
	}
	a.profile = w.opts.profileFor(a.init.AgentInfo.Name)
	a.stateDirs = a.profile.stateDirsOutside(w.opts.agentEnv(), w.opts.Dir)
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
	if a.rec != nil {
		sinks = append(sinks, &stderrLines{rec: a.rec, gen: a.gen})
	}
	switch len(sinks) {
	case 0:
		return nil
	case 1:
		return sinks[0]
	}
	return io.MultiWriter(sinks...)
}

// started is the options the agent's process was started with, nil for an
// agent the client did not start itself (a StreamTransport's stream, a Transport's).
func (a *agent) started() *program {
	if _, ok := a.link.(*processLink); !ok || a.opts.Transport != nil {
		return nil
	}
	return &program{command: a.opts.Command, args: a.opts.Args, env: a.opts.Process.Env}
}

// handshake runs initialize and, when configured, authenticate.
func (a *agent) handshake(ctx context.Context) error {
	if err := a.call(ctx, "initialize", a.initializeParams(), &a.init); err != nil {
		return wrapOp("initialize", err)
	}
	if a.init.ProtocolVersion != acp.ProtocolVersion {
		return &ProtocolError{Msg: fmt.Sprintf("agent speaks protocol version %d; acphost speaks %d", a.init.ProtocolVersion, acp.ProtocolVersion)}
	}
	_ = json.Unmarshal(a.init.AgentCapabilities, &a.caps)
	a.systemPrompt = acp.SystemPromptModes(a.init.AgentCapabilities)
	if m := a.opts.AuthMethod; m != "" {
		if err := a.authenticate(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (a *agent) authenticate(ctx context.Context, method string) error {
	if err := a.call(ctx, "authenticate", map[string]string{"methodId": method}, nil); err != nil {
		return wrapOp(authenticateOp(method), err)
	}
	return nil
}

func (a *agent) initializeParams() any {
	fs := a.opts.FS
	caps := map[string]any{
		"fs":       map[string]bool{"readTextFile": fs != nil && fs.Read, "writeTextFile": fs != nil && fs.Write},
		"terminal": a.opts.Terminal != nil,
	}
	if e := a.opts.elicitationCapability(); e != nil {
		caps["elicitation"] = e
	}
	session := map[string]any{
		// SetConfigOption sends booleans as they are (type "boolean").
		"configOptions": map[string]any{"boolean": map[string]any{}},
	}
	if a.opts.Advertise.Notices {
		session["notices"] = map[string]any{}
	}
	if a.opts.Advertise.Compaction {
		session["compaction"] = map[string]any{}
	}
	caps["session"] = session
	if a.opts.Advertise.TerminalAuth {
		caps["auth"] = map[string]any{"terminal": true}
	}
	if a.opts.Advertise.PermissionPresentation {
		caps["_meta"] = map[string]any{"jetbrains": map[string]any{"air": map[string]any{}}}
	}
	return map[string]any{
		"protocolVersion":    acp.ProtocolVersion,
		"clientCapabilities": caps,
		"clientInfo":         a.opts.Advertise.ClientInfo,
	}
}

func (a *agent) firstAuthMethod() string {
	for _, m := range a.init.AuthMethods {
		if m.Type == "" || m.Type == "agent" {
			return m.ID
		}
	}
	return ""
}

// openDefault opens the client's default session at Start: a new one, or
// the stored session id re-attached by load, else resume.
func (a *agent) openDefault(ctx context.Context, h *Session, id string) error {
	if id == "" {
		return a.open(ctx, h, openNew)
	}
	h.id = id
	h.conversed = true
	for _, how := range []openKind{openLoad, openResume} {
		if a.supports(how) {
			return a.open(ctx, h, how)
		}
	}
	return fmt.Errorf("acphost: re-attaching session %s at start: the agent offers neither session/load nor session/resume: %w", id, ErrUnsupported)
}

// open opens h's session on this agent (new, load or resume), binds the
// agent-side record to h and sets h's initial mode.
func (a *agent) open(ctx context.Context, h *Session, how openKind) (err error) {
	method := openMethods[how]
	if !a.supports(how) {
		if how == openFork && !a.opts.Unstable {
			return fmt.Errorf("acphost: session/fork is unstable: it needs ACPOptions.Unstable: %w", ErrUnsupported)
		}
		return fmt.Errorf("acphost: the agent does not support %s: %w", method, ErrUnsupported)
	}
	servers, err := h.mcpServers(a)
	if err == nil {
		err = checkMCPServers(method, servers, len(h.opts.MCPServers), a.caps.MCPCapabilities, a.init.AgentInfo.Name == "fakeagent")
	}
	if err != nil {
		return err
	}
	params := map[string]any{"cwd": h.opts.Dir, "mcpServers": servers}
	if dirs := h.opts.AdditionalDirectories; len(dirs) > 0 {
		if err := a.checkAdditionalDirectories(method, dirs); err != nil {
			return err
		}
		params["additionalDirectories"] = dirs
	}
	sp, err := a.checkSystemPrompt(method, h.opts.SystemPrompt)
	if err != nil {
		return err
	}
	if sp != nil {
		params["systemPrompt"] = sp
	}
	if how == openFork {
		params["sessionId"] = h.forkOf
	}
	if !opensNew(how) {
		params["sessionId"] = h.ID()
		known := a.sessions.known(h.ID()) != nil
		s := a.session(h.ID())
		prev := s.pub.Swap(h) // the replay goes to h's hooks
		defer func() {
			switch {
			case err == nil:
			case known:
				s.pub.Store(prev)
			default: // not opened after all: its id is foreign again
				a.sessions.drop(h.ID())
			}
		}()
	}
	res, err := a.openCall(ctx, how, params, h)
	tried := a.opts.AuthMethod
	if errors.Is(err, &RPCError{Code: acp.CodeAuthRequired}) && tried == "" {
		if tried = a.firstAuthMethod(); tried != "" {
			if err := a.authenticate(ctx, tried); err != nil {
				return err
			}
			res, err = a.openCall(ctx, how, params, h)
		}
	}
	if errors.Is(err, &RPCError{Code: acp.CodeAuthRequired}) {
		err = &AuthError{Methods: a.init.AuthMethods, Tried: tried, Err: err, program: a.started()}
	}
	if err != nil {
		if sp != nil && errors.Is(err, &RPCError{Code: acp.CodeInvalidParams}) {
			return &SystemPromptError{Method: method, Mode: systemPromptMode(sp), Modes: a.systemPrompt, Err: err}
		}
		return wrapOp(method, err)
	}
	if opensNew(how) {
		if res.SessionID == "" {
			return &ProtocolError{Msg: method + " answered without a sessionId"}
		}
		if s := a.sessions.known(res.SessionID); s == nil || s.pub.Load() != h {
			return &ProtocolError{Msg: fmt.Sprintf("%s answered with the id of a session already open on this connection (%q)", method, res.SessionID)}
		}
		h.setID(res.SessionID)
	}
	s := a.session(h.ID())
	s.bind(h)
	s.setState(res.Modes, acp.DecodeConfigOptions(res.ConfigOptions))
	if mode := h.wantedMode(); mode != "" {
		held, err := a.holdMode(ctx, h, mode)
		if !held && err == nil {
			reports := s.modeReportCount()
			if err = a.call(ctx, "session/set_mode", map[string]string{"sessionId": h.ID(), "modeId": mode}, nil); err == nil {
				s.noteModeSet(mode, reports)
			}
		}
		if err != nil {
			return wrapOp(fmt.Sprintf("setting mode %q", mode), withModes(err, s.modes()))
		}
	}
	a.syncMode(ctx, h)
	return nil
}

// checkAdditionalDirectories refuses additional directories the agent
// cannot take: it did not advertise them, or one is not absolute.
func (a *agent) checkAdditionalDirectories(method string, dirs []string) error {
	if !a.caps.SessionCapabilities.AdditionalDirectories.present() {
		return fmt.Errorf("acphost: %s: the agent does not support additionalDirectories: %w", method, ErrUnsupported)
	}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("acphost: %s: SessionOptions.AdditionalDirectories: %q is not absolute", method, d)
		}
	}
	return nil
}

// checkSystemPrompt returns the system prompt to send with an open (nil:
// none), or refuses it before anything is sent: one the spec forbids, one
// the agent did not advertise, override to an agent that takes only append.
func (a *agent) checkSystemPrompt(method string, p *acp.SystemPrompt) (*acp.SystemPrompt, error) {
	if p == nil || noSystemPrompt(p) {
		return nil, nil
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("acphost: %s: SessionOptions.SystemPrompt: %w", method, err)
	}
	if mode := systemPromptMode(p); !slices.Contains(a.systemPrompt, mode) {
		return nil, &SystemPromptError{Method: method, Mode: mode, Modes: slices.Clone(a.systemPrompt)}
	}
	return p, nil
}

func (a *agent) supports(how openKind) bool {
	switch how {
	case openLoad:
		return a.caps.LoadSession
	case openResume:
		return a.caps.SessionCapabilities.Resume.present()
	case openFork:
		return a.opts.Unstable && a.caps.SessionCapabilities.Fork.present()
	}
	return true
}

// openCall makes the open request. A load's replayed updates are marked as
// replay and all delivered before it returns (a barrier, as for prompts).
func (a *agent) openCall(ctx context.Context, how openKind, params map[string]any, h *Session) (openResult, error) {
	id := h.ID()
	var res openResult
	switch how {
	case openNew, openFork:
		return res, a.callOpening(ctx, openMethods[how], params, &res, h)
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

// callOpening is call for session/new: until it is answered the agent's
// updates for a session not known yet are held back (see park), and the
// new session's record is made on the read loop as the answer is read,
// so what the agent sends after its answer finds it.
func (a *agent) callOpening(ctx context.Context, method string, params map[string]any, res *openResult, h *Session) error {
	nc := &newCall{h: h}
	a.sessions.beginOpening(nc)
	defer a.opened(nc, nil) // unanswered: hold nothing back for it any more
	a.lift(1)
	defer a.lift(-1)
	return a.callError(method, a.guardedCall(ctx, method, params, res, func(result json.RawMessage) { a.opened(nc, result) }))
}

// opened ends the wait of session/new call nc, making the record of the
// session it answered (when result holds one), and has the dispatcher
// release what it held back. It runs on the read loop for an answer.
func (a *agent) opened(nc *newCall, result json.RawMessage) {
	waited := a.sessions.endOpening(nc, result, func(id string) *sessionState {
		s := newSessionState(a.forSessions(), id)
		s.bind(nc.h)
		return s
	})
	if waited {
		a.dispatcher.q.push(item{kind: itemBarrier, barrier: a.dispatcher.releaseParked}, false) // on the dispatcher, never here
	}
}

// callWithBarrier is call, with atBarrier run on the dispatcher once every
// message read before the answer has been dispatched (queued on the read
// loop as the answer is read, before the call returns).
func (a *agent) callWithBarrier(ctx context.Context, method string, params, result any, atBarrier func()) error {
	err := a.guardedCall(ctx, method, params, result, func(json.RawMessage) { a.dispatcher.q.barrier(atBarrier) })
	return a.callError(method, err)
}

// session returns the record of a session the host opens or uses,
// creating it.
func (a *agent) session(id string) *sessionState {
	return a.sessions.ensure(id, func() *sessionState { return newSessionState(a.forSessions(), id) })
}

// syncMode puts session h in the mode the host's policy wants before a
// prompt: the agent's restrictive mode while plan mode is on; back in the
// mode plan mode found once it is off; with RequireAsking, an asking mode
// instead of one that acts unasked. A mode that cannot be set is logged:
// the other layers still hold.
func (a *agent) syncMode(ctx context.Context, h *Session) {
	plan := a.planMode()
	h.mu.Lock()
	from, switched := h.planFrom, h.planSwitched
	h.mu.Unlock()
	if !plan && !switched && !a.opts.RequireAsking {
		return // the per-turn path of a client that asks for none of this
	}
	st := a.sessions.known(h.ID())
	if st == nil {
		return
	}
	off := st.modeOffer()
	cur := st.effectiveMode()
	target := ""
	switch {
	case plan:
		target = a.profile.planMode(off.modes)
	case switched:
		target = from
	}
	if !plan && a.opts.RequireAsking {
		m := target
		if m == "" {
			m = cur
		}
		if a.profile.kind(off.mode(m)) == ModeUnasked {
			if asks := a.profile.askingModes(off.modes, 1); len(asks) > 0 {
				target = asks[0]
			}
		}
	}
	if target != "" && target != cur && off.offers(target) {
		if err := a.setSessionMode(ctx, st, off, target); err != nil {
			a.opts.Debug.Logger.Warn("acphost: the agent's mode could not be set", "session", h.ID(), "mode", target, "err", err)
			return
		}
	}
	h.mu.Lock()
	switch {
	case plan && !h.planSwitched && target != "" && target != cur:
		h.planFrom, h.planSwitched = cur, true
	case !plan:
		h.planFrom, h.planSwitched = "", false
	}
	h.mu.Unlock()
}

// holdMode keeps plan mode's hold on session h when mode id is asked for
// (SetMode, the mode config option, SessionOptions.Mode at an open): while
// plan mode is on and the agent offers a plan mode other than id, id is
// not set but kept as the mode to put back when plan mode goes off, and
// the session is put in the plan mode now (held). A mode the agent does
// not offer is refused then, not kept. Outside plan mode, or for an
// agent with no plan mode, nothing is held.
func (a *agent) holdMode(ctx context.Context, h *Session, id string) (held bool, err error) {
	if !a.planMode() {
		return false, nil
	}
	st := a.sessions.known(h.ID())
	if st == nil {
		return false, nil
	}
	off := st.modeOffer()
	target := a.profile.planMode(off.modes)
	if target == "" || id == target {
		return false, nil
	}
	if !off.offers(id) {
		ids := make([]string, 0, min(len(off.modes), maxNamedModes))
		for _, m := range off.modes[:cap(ids)] {
			ids = append(ids, cutBytes(m.ID, maxModeBytes))
		}
		return false, fmt.Errorf("acphost: the agent offers no mode %q (the agent's modes: %s)", cutBytes(id, maxModeBytes), strings.Join(ids, ", "))
	}
	h.mu.Lock()
	h.setMode = id
	h.planFrom, h.planSwitched = id, true
	h.mu.Unlock()
	a.syncMode(ctx, h)
	return true, nil
}

// setSessionMode sets the session's mode the way the agent offers it.
func (a *agent) setSessionMode(ctx context.Context, st *sessionState, off modeOffer, id string) error {
	reports := st.modeReportCount()
	if off.configID != "" && !off.viaACP(id) {
		var res struct {
			ConfigOptions json.RawMessage `json:"configOptions"`
		}
		params := map[string]any{"sessionId": st.id, "configId": off.configID, "value": id}
		if err := a.call(ctx, "session/set_config_option", params, &res); err != nil {
			return err
		}
		// An answer without the option set is malformed: it does not
		// replace what the host knows of the session's options.
		if opts := acp.DecodeConfigOptions(res.ConfigOptions); hasOption(opts, off.configID) {
			st.setState(nil, opts)
			if v := optionValue(opts, off.configID); v != "" && v != id {
				// The answer is the agent's word on its mode: a refusal.
				return fmt.Errorf("acphost: the agent answered with its mode still %q", cutBytes(v, 64))
			}
		}
	} else if err := a.call(ctx, "session/set_mode", map[string]string{"sessionId": st.id, "modeId": id}, nil); err != nil {
		return err
	}
	st.noteModeSet(id, reports)
	return nil
}

// insideState reports whether every file tc names lies in the agent's own
// state directories (none named: no). For an edit, delete or move only:
// what a command changes its locations do not say.
func (a *agent) insideState(tc *acp.ToolCall) bool {
	var paths []string
	for _, l := range tc.Locations {
		paths = append(paths, l.Path)
	}
	for _, c := range tc.Content {
		if c.Diff != nil {
			paths = append(paths, c.Diff.Path)
		}
	}
	dirs := a.stateDirs
	if len(paths) == 0 || len(dirs) == 0 {
		return false
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) || !slices.ContainsFunc(dirs, func(d string) bool { return confine.Within(d, filepath.Clean(p)) }) {
			return false
		}
	}
	return true
}

// reattach opens h on a fresh agent: load, else resume, else a new session
// whose lost context is reported to h's next turn. A session that never had
// a conversation (see Session.conversed) loses nothing: agents often store
// a session only at its first prompt and refuse to load one that had none,
// and the new session it is given instead is reported without ContextLost,
// so its next turn runs.
func (a *agent) reattach(ctx context.Context, h *Session, reason error) error {
	old := h.ID()
	var refused error
	for _, how := range []openKind{openLoad, openResume} {
		if !a.supports(how) {
			continue
		}
		err := a.open(ctx, h, how)
		if err == nil {
			h.noteRestart(&RestartError{Reason: reason, OldSessionID: old, NewSessionID: old, How: openMethods[how][len("session/"):]})
			return nil
		}
		var rpc *RPCError
		if !errors.As(err, &rpc) {
			return err // the new agent failed, not the session
		}
		refused = errors.Join(refused, err) // the agent does not have the session after all: try the next way
	}
	if err := a.open(ctx, h, openNew); err != nil {
		return err
	}
	h.noteRestart(&RestartError{Reason: reason, OldSessionID: old, NewSessionID: h.ID(), How: "new", ContextLost: h.hasConversation(), Refused: refused})
	return nil
}

func (a *agent) isDead() bool { return closed(a.dead) }

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// newTurn makes the turn that runs req on session h of agent a; emit is
// its stream's emitter (nil: none).
func (a *agent) newTurn(h *Session, req Request, emit func(StreamEvent)) *turn {
	t := &turn{env: a.env, s: a.session(h.ID()), emitFn: emit, barrier: make(chan struct{}), answered: make(chan promptOutcome, 1), stop: make(chan struct{}), tools: map[string]*turnTool{},
		room: a.opts.Limits.MaxResponseBytes, discard: req.Discard}
	t.touch()
	return t
}

// forSessions is what the agent's session records need of it.
func (a *agent) forSessions() sessionAgent {
	return sessionAgent{
		hooks:    sessionHooks{onUpdate: a.opts.OnUpdate, onPermission: a.opts.OnPermission, onElicitation: a.opts.Elicitation.OnRequest},
		maxState: a.opts.Limits.MaxResponseBytes, requireAsking: a.opts.RequireAsking, log: a.opts.Debug.Logger,
		profile: a.profile, planMode: a.planMode, insideState: a.insideState,
	}
}

// newTurnEnv is what the agent's turns need of it; connectAgent makes it
// once the connection, its write guards and the queue are in place.
func (a *agent) newTurnEnv() *turnEnv {
	return &turnEnv{
		conn: a.conn, writes: a.writes, dispatcher: a.dispatcher, cb: &a.cb, log: a.opts.Debug.Logger,
		cancelGrace: a.opts.Timeouts.CancelGrace, unstable: a.opts.Unstable, running: &a.turns, dead: a.dead,
		cause: func() error { return a.cause }, deathCause: a.deathCause, poison: a.poison,
		poisonCause: a.poisonCause, notify: a.notify, watchdog: a.newWatchdog,
	}
}

func (a *agent) newWatchdog(t *turn) *watchdog {
	if a.opts.Timeouts.TurnTimeout <= 0 && a.opts.Timeouts.IdleTimeout <= 0 {
		return &watchdog{}
	}
	wd := &watchdog{done: make(chan struct{})}
	a.wg.Add(1) // joined by Close like every goroutine of the agent
	go func() {
		defer a.wg.Done()
		wd.run(a.ctx, a.opts.Timeouts.TurnTimeout, a.opts.Timeouts.IdleTimeout, t)
	}()
	return wd
}
