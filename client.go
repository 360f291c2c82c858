package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/sandbox"
)

// Version is this library's version, sent as clientInfo.version.
const Version = "0.1.0"

// ACPClient is a warm agent: a process (or connection), initialized, with a
// session open. Turns on one session run one at a time (a turn started while
// another runs on the same session waits for it); turns on different
// sessions run concurrently. All methods are safe for concurrent use.
type ACPClient struct {
	opts ACPOptions
	dial func(ctx context.Context) (*agent, error)

	plan    atomic.Bool
	planTmp planTemp // plan mode's TMPDIR for a confined agent
	def     *Session // the session Start opened

	restartSem chan struct{}   // one restart at a time (ctx-aware)
	crashes    []time.Time     // recent crash restarts, for the crash-loop cut-off
	life       context.Context // ends at Close: bounds restarts
	endLife    context.CancelFunc
	joins      sync.WaitGroup  // joins of replaced agents
	retired    map[*agent]bool // replaced agents whose goroutines may still run

	roots    *sandbox.Roots // the fs and terminal roots, opened once; nil when neither is served
	writable *sandbox.Roots // a confined agent's Writable, for the host's writes; nil unless confined
	rec      *wireRecorder
	gens     atomic.Int64 // agent processes started
	// defaultWarned: the Logger was warned that no OnPermission answered
	// a request with the default allow (once per client).
	defaultWarned atomic.Bool
	foreign       atomic.Int64 // see Stats

	mu      sync.Mutex
	ag      *agent
	handles []*Session // live sessions, re-attached after a restart
	closed  bool
}

// Start spawns the agent (or reaches it through opts.Transport), runs
// initialize, opens a session and returns a warm client. ctx bounds the
// start-up only; it never ends the agent's life. Call Close when done.
func Start(ctx context.Context, opts ACPOptions) (*ACPClient, error) {
	if st, ok := opts.Transport.(*StreamTransport); ok {
		return startOnStream(ctx, st, opts)
	}
	if opts.Transport != nil {
		return newClient(ctx, opts, func(c *ACPClient) dialer { return transportDialer(c.opts.Transport, &c.opts) })
	}
	if opts.Command == "" {
		return nil, errors.New("acphost: ACPOptions.Command and Transport are both empty")
	}
	return newClient(ctx, opts, func(c *ACPClient) dialer { return processDialer(&c.opts, c.PlanMode, &c.planTmp) })
}

// startOnStream runs a client over a StreamTransport's connection, which
// the client treats as a local agent's without a process: no Dir needed
// (the current directory), no confinement, no restart.
func startOnStream(ctx context.Context, st *StreamTransport, opts ACPOptions) (*ACPClient, error) {
	switch {
	case opts.Process.Confine != nil:
		return nil, fmt.Errorf("acphost: ACPOptions.Process.Confine needs an agent process that Start spawns: %w", ErrUnsupported)
	case opts.Command != "" || len(opts.Args) > 0:
		return nil, errors.New("acphost: ACPOptions.Command and Args start a local agent; a StreamTransport reaches one already running")
	}
	opts.Transport = nil // the stream is the client's own link, not a Link to dial
	return newClient(ctx, opts, func(*ACPClient) dialer { return st.dialer() })
}

func newClient(ctx context.Context, opts ACPOptions, newDialer func(*ACPClient) dialer) (*ACPClient, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	roots, err := newRoots(&opts) // opened once, before anything is started: see SPEC.md, Host services
	if err != nil {
		return nil, err
	}
	writable, err := newWritable(&opts)
	if err != nil {
		roots.Close()
		return nil, err
	}
	c := &ACPClient{opts: opts, roots: roots, writable: writable, rec: newWireRecorder(opts.Debug.Record), restartSem: make(chan struct{}, 1), retired: map[*agent]bool{}}
	c.life, c.endLife = context.WithCancel(context.Background())
	c.plan.Store(opts.PlanMode)
	dial := newDialer(c)
	w := wiring{opts: &c.opts, planMode: c.PlanMode, rec: c.rec, foreign: &c.foreign, gens: &c.gens, roots: c.roots, writable: c.writable, defaultWarned: &c.defaultWarned}
	c.dial = func(ctx context.Context) (*agent, error) { return dialAgent(ctx, w, dial) }
	ag, err := c.dial(ctx)
	if err != nil {
		c.closeRoots()
		return nil, err
	}
	c.def = c.newHandle(SessionOptions{Mode: opts.Mode})
	if err := ag.openDefault(ctx, c.def, opts.SessionID); err != nil {
		c.def.host.close()
		err = ag.failStart(err)
		c.closeRoots()
		return nil, err
	}
	c.ag = ag
	c.handles = append(c.handles, c.def)
	return c, nil
}

func (c *ACPClient) closeRoots() {
	c.roots.Close()
	c.writable.Close()
}

// Session returns the default session: the one Start opened, which the
// client's own Generate, GenerateCtx and GenerateStream use. Its id,
// modes, config options, enforcement and Stream are the Session's.
func (c *ACPClient) Session() *Session { return c.def }

// PID returns the agent's process id, or 0 for a connected agent.
func (c *ACPClient) PID() int {
	if l, ok := c.agent().link.(*processLink); ok {
		return l.p.Pid()
	}
	return 0
}

// Promises says what the link to the current agent can do and tell (see
// Promises): "process" for Start's local subprocess, "stream" for
// a StreamTransport, the transport's own for another Transport.
func (c *ACPClient) Promises() Promises { return c.agent().link.promises() }

// Logout ends the agent's authenticated state (logout), when the agent
// advertises agentCapabilities.auth.logout; otherwise it returns an error
// matching ErrUnsupported without calling.
func (c *ACPClient) Logout(ctx context.Context) error {
	a := c.agent()
	if !a.caps.Auth.Logout.present() {
		return fmt.Errorf("acphost: the agent does not offer logout: %w", ErrUnsupported)
	}
	return a.call(ctx, "logout", struct{}{}, nil)
}

// TerminalAuthCommand returns the command that runs the terminal
// authentication method id the agent offered: the agent's own Command and
// Args with the method's args appended, and the method's env added to
// ACPOptions.Process.Env. Run it with a terminal for the person (the client never
// does); a zero exit means success, after which a new session (or a
// restart) finds the agent logged in. It fails with ErrUnsupported for an
// agent reached by a Transport (its program is the transport's to run) or
// by a StreamTransport (the client does not know its program) and for an id that is
// not a terminal method of the agent's.
func (c *ACPClient) TerminalAuthCommand(id string) (command string, args, env []string, err error) {
	a := c.agent()
	return terminalAuthCommand(a.started(), a.init.AuthMethods, id)
}

// program is the command line of an agent the client started: what a
// terminal authentication method runs again, with its own arguments and
// environment.
type program struct {
	command   string
	args, env []string
}

// terminalAuthCommand is the command of the terminal method id among
// methods, for the agent prog runs (nil: an agent the client did not
// start, whose program it does not know).
func terminalAuthCommand(prog *program, methods []acp.AuthMethod, id string) (command string, args, env []string, err error) {
	if prog == nil {
		return "", nil, nil, fmt.Errorf("acphost: terminal authentication of an agent the client did not start (a StreamTransport, another Transport): %w", ErrUnsupported)
	}
	for _, m := range methods {
		if m.ID != id || m.Type != "terminal" {
			continue
		}
		args = append(append([]string(nil), prog.args...), m.Args...)
		env = append([]string(nil), prog.env...)
		for _, k := range sortedKeys(m.Env) {
			env = append(env, k+"="+m.Env[k])
		}
		return prog.command, args, env, nil
	}
	return "", nil, nil, fmt.Errorf("acphost: the agent offers no terminal authentication method %q: %w", id, ErrUnsupported)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// AgentInfo returns what the agent said about itself in initialize.
func (c *ACPClient) AgentInfo() acp.Implementation { return c.agent().init.AgentInfo }

// AgentCapabilities returns the agent's capabilities object, raw.
func (c *ACPClient) AgentCapabilities() json.RawMessage {
	return c.agent().init.AgentCapabilities
}

// SystemPromptModes returns the modes of system prompt the agent takes
// (see SessionOptions.SystemPrompt): nil when it does not advertise
// sessionCapabilities.systemPrompt, else append, and override when it
// advertises that too. A capability of the wrong type counts as not
// advertised.
func (c *ACPClient) SystemPromptModes() []acp.SystemPromptMode {
	return slices.Clone(c.agent().systemPrompt)
}

// AuthMethods returns the authentication methods the agent offered.
func (c *ACPClient) AuthMethods() []acp.AuthMethod { return c.agent().init.AuthMethods }

// Done is closed when the current agent connection ends (crash, protocol
// failure or Close). After a restart it refers to the new agent.
func (c *ACPClient) Done() <-chan struct{} { return c.agent().dead }

// Err returns why the current agent connection ended, or nil while it lives.
func (c *ACPClient) Err() error {
	a := c.agent()
	select {
	case <-a.dead:
		return a.cause
	default:
		return nil
	}
}

func (c *ACPClient) agent() *agent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ag
}

// SetPlanMode turns plan mode on or off, effective for the next request.
// While it is on, nothing the agent reports doing may change a file, held
// in layers that Enforcement reports:
//
//   - the host: every permission request whose tool can change anything
//     (see ReadOnlyKind) is rejected before OnPermission is asked, and fs
//     writes and terminal commands are refused;
//   - the agent's own mode: before each prompt every session is put in the
//     agent's restrictive mode (its plan or read-only mode, from its
//     profile or its modes' words) when it offers one, and put back there
//     when it left; turned off, each session goes back to the mode plan
//     mode found it in;
//   - detection: a change the agent reports having made anyway (a completed
//     edit, delete, move or command, or a diff) cancels the turn, which
//     fails with an *UnaskedChangeError matching ErrPlanModeBypassed;
//   - the kernel, with ACPOptions.Process.Confine: the agent's process tree may
//     write only Confinement.PlanWritable, which holds even for a change
//     the agent never reports. Landlock cannot be lifted or tightened in a
//     running process, so an agent started in the other mode is restarted
//     before the next turn when it can re-attach its sessions.
//
// Safe for concurrent use; a running turn sees the new value at its next
// request.
func (c *ACPClient) SetPlanMode(on bool) { c.plan.Store(on) }

// PlanMode reports whether plan mode is on.
func (c *ACPClient) PlanMode() bool { return c.plan.Load() }

// Close shuts the agent down: stdin is closed, then after CloseGrace the
// process group gets SIGTERM, then after another CloseGrace SIGKILL. It
// waits for every goroutine of the client, including running callbacks
// (which must return once their ctx ends) — except when called from a
// callback, which it cannot wait for: the client's remaining goroutines then
// end when that callback returns. A turn still running fails with
// ErrClosed; a restart in progress is abandoned. Close is idempotent; it
// returns nil or the reason the agent connection had already failed.
func (c *ACPClient) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.endLife()                // aborts a restart in progress
	c.restartSem <- struct{}{} // and waits for it
	defer func() { <-c.restartSem }()
	a := c.agent()
	a.shutdown(ErrClosed)
	c.planTmp.remove()
	c.closeHostTools()
	if !c.inRetiredCallback() {
		c.joins.Wait()
		if !a.cb.inCallback(goid()) {
			c.closeRoots() // from a callback, the roots' finalizers close them
		}
	}
	if errors.Is(a.cause, ErrClosed) {
		return nil
	}
	return a.cause
}

// inRetiredCallback reports whether the caller runs a callback of a
// replaced agent (whose join would then wait for the caller).
func (c *ACPClient) inRetiredCallback() bool {
	id := goid()
	c.mu.Lock()
	defer c.mu.Unlock()
	for a := range c.retired {
		if a.cb.inCallback(id) {
			return true
		}
	}
	return false
}

// Generate runs one turn with no cancellation: GenerateCtx with
// context.Background().
func (c *ACPClient) Generate(req Request) (Response, error) {
	return c.GenerateCtx(context.Background(), req)
}

// GenerateCtx sends req as a session/prompt and returns when the agent has
// answered and every update that came before the answer has been delivered
// to OnUpdate. Turns run one at a time: a call made while another turn
// runs waits for it (or for ctx).
//
// Cancelling ctx is the stop button: the client sends session/cancel,
// answers the turn's pending permission requests "cancelled", keeps
// delivering updates and waits (up to CancelGrace) for the agent's answer.
// It then returns the Response gathered so far with StopReason "cancelled"
// and an error for which errors.Is(err, ctx.Err()) holds. The agent and
// session stay warm for the next turn.
func (c *ACPClient) GenerateCtx(ctx context.Context, req Request) (Response, error) {
	return c.generate(ctx, req, nil)
}

// GenerateStream runs a turn like GenerateCtx and calls emit with each
// event as it happens, on the client's dispatcher goroutine (events of one
// turn never overlap and arrive in wire order), ending with a "done" event
// (also for a cancellation the agent confirmed: StopReason "cancelled", Err
// the cancellation) or an "error" event. emit is never called after GenerateStream returns. Like
// OnUpdate, emit must not start another turn itself.
func (c *ACPClient) GenerateStream(ctx context.Context, req Request, emit func(StreamEvent)) (Response, error) {
	return c.generate(ctx, req, emit)
}

func (c *ACPClient) generate(ctx context.Context, req Request, emit func(StreamEvent)) (Response, error) {
	return c.def.generate(ctx, req, emit, 0)
}

// Cancel stops the running turn of every session, if any, exactly as
// cancelling its context would (see GenerateCtx); the turn's call returns
// an error matching context.Canceled. It does not wait for the turn to end.
// It is the stop button for callers that hold no context; calling it
// between turns does nothing.
func (c *ACPClient) Cancel() {
	c.mu.Lock()
	handles := append([]*Session(nil), c.handles...)
	c.mu.Unlock()
	for _, h := range handles {
		h.Cancel()
	}
}

// NewSession opens another session on the agent.
func (c *ACPClient) NewSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	return c.openHandle(ctx, opts, openNew, "")
}

// LoadSession opens a session the agent stored earlier, by id. The agent
// replays the conversation as updates before it answers; they are
// delivered to the session's OnUpdate with Replay() true, all before
// LoadSession returns. It fails with ErrUnsupported unless the agent
// advertised loadSession.
func (c *ACPClient) LoadSession(ctx context.Context, id string, opts SessionOptions) (*Session, error) {
	return c.openHandle(ctx, opts, openLoad, id)
}

// ForkSession opens a new session that starts from the conversation of
// session id (session/fork, unstable: it needs ACPOptions.Unstable and
// the agent's sessionCapabilities.fork; otherwise it fails with
// ErrUnsupported without calling). The new session is the returned one;
// id's session is left as it is.
func (c *ACPClient) ForkSession(ctx context.Context, id string, opts SessionOptions) (*Session, error) {
	return c.openHandle(ctx, opts, openFork, id)
}

// ResumeSession reopens a stored session without a replay. It fails with
// ErrUnsupported unless the agent advertised sessionCapabilities.resume.
func (c *ACPClient) ResumeSession(ctx context.Context, id string, opts SessionOptions) (*Session, error) {
	return c.openHandle(ctx, opts, openResume, id)
}

// ListSessions lists the agent's stored sessions (all pages), optionally
// only those of one working directory. It fails with ErrUnsupported unless
// the agent advertised sessionCapabilities.list.
func (c *ACPClient) ListSessions(ctx context.Context, cwd string) ([]acp.SessionInfo, error) {
	a, err := c.readyAgent(ctx)
	if err != nil {
		return nil, err
	}
	if !a.caps.SessionCapabilities.List.present() {
		return nil, fmt.Errorf("acphost: the agent does not support session/list: %w", ErrUnsupported)
	}
	var all []acp.SessionInfo
	cursor := ""
	for {
		params := map[string]string{}
		if cwd != "" {
			params["cwd"] = cwd
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Sessions   []acp.SessionInfo `json:"sessions"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := a.call(ctx, "session/list", params, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Sessions...)
		if page.NextCursor == "" || page.NextCursor == cursor {
			return all, nil
		}
		cursor = page.NextCursor
	}
}

// DeleteSession asks the agent to delete a stored session, by id, so that
// ListSessions no longer lists it. It fails with ErrUnsupported unless the
// agent advertised sessionCapabilities.delete. A Session open on that id
// is not closed: close it first (Session.Close).
func (c *ACPClient) DeleteSession(ctx context.Context, id string) error {
	a, err := c.readyAgent(ctx)
	if err != nil {
		return err
	}
	if !a.caps.SessionCapabilities.Delete.present() {
		return fmt.Errorf("acphost: the agent does not support session/delete: %w", ErrUnsupported)
	}
	return a.call(ctx, "session/delete", map[string]string{"sessionId": id}, nil)
}

// Stats returns the client's counts, summed over its agent processes.
func (c *ACPClient) Stats() Stats {
	c.mu.Lock()
	n, a := len(c.handles), c.ag
	if c.closed {
		n = 0
	}
	c.mu.Unlock()
	return Stats{ForeignMessages: c.foreign.Load(), Sessions: n, Queued: a.dispatcher.q.len()}
}

// Containment reports how the current agent process is held (see
// ACPOptions.Process.Contain).
func (c *ACPClient) Containment() Containment {
	switch l := c.agent().link.(type) {
	case *processLink:
		return l.containment
	case *transportLink:
		if cl, ok := l.l.(ContainedLink); ok {
			return cl.Containment()
		}
	}
	return Containment{}
}

// closeHostTools stops the host tools of every session still open.
func (c *ACPClient) closeHostTools() {
	c.mu.Lock()
	handles := append([]*Session(nil), c.handles...)
	c.mu.Unlock()
	for _, h := range handles {
		h.host.close()
	}
}

// kernelReason says why the kernel layer does not hold for agent a.
func (c *ACPClient) kernelReason(a *agent) string {
	switch {
	case c.opts.Transport != nil || a.link.promises().Transport != "process":
		if t, ok := a.link.(*transportLink); ok {
			if cl, ok := t.l.(ContainedLink); ok {
				ct := cl.Containment()
				return "the agent is not a local process: it runs in " + ct.Where + ", confined by it (" + strings.Join(ct.Facts, ", ") + ")"
			}
		}
		return "the agent is not a local process"
	case !CanConfine():
		return "Landlock is not available here"
	case c.opts.Process.Confine == nil:
		return "ACPOptions.Process.Confine is not set"
	case !a.planKernel && !c.canRestart(a):
		return "the agent was started outside plan mode and cannot be restarted under it: it re-attaches no session (session/load or resume) and its conversation would be lost"
	case !a.planKernel:
		return "the agent was started outside plan mode; it is restarted under it before the next turn"
	}
	return ""
}

// readyAgent returns a live agent for the next call. An abandoned agent
// (an unconfirmed cancel, writes it stopped reading) is always replaced; a dead one is replaced
// only with ACPOptions.Recover, and otherwise its death is the error.
func (c *ACPClient) readyAgent(ctx context.Context) (*agent, error) {
	select {
	case c.restartSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.restartSem }()
	c.mu.Lock()
	a, closed := c.ag, c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	reason := error(nil)
	switch {
	case a.poisoned.Load():
		reason = a.poisonCause()
	case c.confinedOtherwise(a):
		reason = errPlanConfinement
	case a.isDead():
		if c.opts.Recover == nil {
			return nil, a.cause
		}
		reason = a.cause
		if err := c.crashBackoff(ctx, reason); err != nil {
			return nil, err
		}
	default:
		return a, nil
	}
	return c.restart(ctx, a, reason)
}

// confinedOtherwise reports whether a local agent under ACPOptions.Process.Confine
// runs under the other mode's confinement than plan mode now wants, and
// can be restarted without losing a conversation: it re-attaches sessions
// (session/load or resume), or none of its sessions has had a prompt yet.
func (c *ACPClient) confinedOtherwise(a *agent) bool {
	if c.opts.Process.Confine == nil || a.planKernel == c.PlanMode() || a.isDead() {
		return false
	}
	if _, ok := a.link.(*processLink); !ok {
		return false
	}
	return c.canRestart(a)
}

// canRestart reports whether agent a can be replaced without losing a
// conversation: it re-attaches sessions, or none has one yet.
func (c *ACPClient) canRestart(a *agent) bool {
	if a.supports(openLoad) || a.supports(openResume) {
		return true
	}
	c.mu.Lock()
	handles := append([]*Session(nil), c.handles...)
	c.mu.Unlock()
	for _, h := range handles {
		if h.hasConversation() {
			return false
		}
	}
	return true
}

// crashBackoff applies the crash-loop cut-off and waits out the backoff.
func (c *ACPClient) crashBackoff(ctx context.Context, crash error) error {
	o := c.opts.Recover.withDefaults()
	now := time.Now()
	recent := c.crashes[:0]
	for _, t := range c.crashes {
		if now.Sub(t) < o.Window {
			recent = append(recent, t)
		}
	}
	c.crashes = recent
	if len(recent) >= o.MaxRestarts {
		return &CrashLoopError{Restarts: len(recent), Window: o.Window, Last: crash}
	}
	c.crashes = append(c.crashes, now)
	wait := o.Backoff << min(len(recent), 10)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.life.Done():
		return ErrClosed
	}
}

// restart replaces agent a and re-attaches every live session. The old
// agent is stopped at once; its goroutines (maybe running callbacks) are
// joined in the background and by Close.
func (c *ACPClient) restart(ctx context.Context, a *agent, reason error) (*agent, error) {
	a.stop(agentReplaced{reason})
	c.retire(a)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.life, cancel)()
	next, err := c.dial(ctx)
	if err != nil {
		return nil, c.restartError(wrapOp("restarting the agent", err))
	}
	c.mu.Lock()
	handles := append([]*Session(nil), c.handles...)
	c.mu.Unlock()
	for _, h := range handles {
		if err := next.reattach(ctx, h, reason); err != nil {
			next.shutdown(err)
			return nil, c.restartError(wrapOp("re-attaching session "+h.ID(), err))
		}
	}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.ag = next
	}
	c.mu.Unlock()
	if closed {
		next.shutdown(ErrClosed)
		return nil, ErrClosed
	}
	return next, nil
}

// restartError prefers ErrClosed when Close interrupted the restart.
func (c *ACPClient) restartError(err error) error {
	if c.life.Err() != nil {
		return ErrClosed
	}
	return err
}

// retire joins a replaced agent in the background.
func (c *ACPClient) retire(a *agent) {
	c.mu.Lock()
	c.retired[a] = true
	c.mu.Unlock()
	c.joins.Go(func() {
		a.join()
		c.mu.Lock()
		delete(c.retired, a)
		c.mu.Unlock()
	})
}

func (c *ACPClient) newHandle(opts SessionOptions) *Session {
	if opts.Dir == "" {
		opts.Dir = c.opts.Dir
	}
	if opts.MCPServers == nil {
		opts.MCPServers = c.opts.MCPServers
	}
	if opts.SystemPrompt == nil {
		opts.SystemPrompt = c.opts.SystemPrompt
	}
	return &Session{c: c, opts: opts, turnSem: make(chan struct{}, 1)}
}

func (c *ACPClient) forget(s *Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, h := range c.handles {
		if h == s {
			c.handles = append(c.handles[:i:i], c.handles[i+1:]...)
			return
		}
	}
}

func (c *ACPClient) remember(s *Session) {
	c.mu.Lock()
	c.handles = append(c.handles, s)
	c.mu.Unlock()
}

func (c *ACPClient) openHandle(ctx context.Context, opts SessionOptions, how openKind, id string) (*Session, error) {
	a, err := c.readyAgent(ctx)
	if err != nil {
		return nil, err
	}
	h := c.newHandle(opts)
	if how == openFork {
		h.forkOf = id // the new session's id is the agent's to give
	} else {
		h.id = id
	}
	h.conversed = how != openNew
	if err := a.open(ctx, h, how); err != nil {
		h.host.close()
		return nil, err
	}
	c.remember(h)
	return h, nil
}
