package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
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

// ACPOptions configures a client. The zero value of every field is a
// documented default; Start needs Command or Transport.
type ACPOptions struct {
	// Command and Args start the agent as a local subprocess, e.g. "npx"
	// and ["-y", "@agentclientprotocol/claude-agent-acp"].
	Command string
	Args    []string
	// Env is added to the host's environment for the agent ("KEY=value").
	Env []string
	// CleanEnv starts the agent with Env only, not the host's environment
	// (which may hold credentials and proxy settings the agent should not
	// see). Remember PATH and HOME then.
	CleanEnv bool
	// Dir is the session's working directory (absolute). Default: the
	// current directory. The agent process also starts there. With a
	// Transport it is a directory on the agent's machine, not checked
	// here, and required.
	Dir string
	// Transport, if set, reaches the agent instead of starting Command
	// (see Transport): over SSH, a WebSocket, a container engine, or your
	// own. Command, Args, Env, CleanEnv, Confine and Contain are then the
	// transport's business and must be unset; FS and Terminal need a link
	// that promises HostFiles.
	Transport Transport

	// OnPermission answers each session/request_permission with the ID of
	// one of req.Options. It runs on a goroutine of its own (one the client
	// keeps and reuses for later requests: leave no thread lock or pprof
	// labels on it), so it may wait for a human; ctx ends when the turn is cancelled, when the agent
	// withdraws the request ($/cancel_request), when PermissionTimeout fires
	// or when the client closes — the request has then already been answered
	// and the return value is ignored. A turn of the same session started
	// from it fails with ErrReentrant (it would wait for this answer). An error, a panic, an empty ID or an
	// ID that was not offered answers the first reject-kind option (else
	// "cancelled"). Nil: the first allow_once option, else the first
	// allow-kind option (see [DefaultPermission]).
	OnPermission PermissionFunc
	// OnUpdate receives every session/update, in wire order, on the client's
	// dispatcher goroutine (never the read loop). A slow OnUpdate slows
	// delivery but not responses. It may call client methods (SetMode,
	// Cancel, NewSession, Close …) except those that wait for the dispatcher
	// itself: a turn or LoadSession started from OnUpdate fails with
	// ErrReentrant; start them from another goroutine.
	OnUpdate func(acp.Update)
	// PermissionTimeout bounds the wait for one OnPermission answer (not the
	// turn). When it fires the request is answered with a reject-kind option
	// and the answer's Reason is ReasonTimeout. Zero: no limit.
	PermissionTimeout time.Duration

	// OnElicitation answers the agent's elicitation/create requests (a
	// form to fill, or a URL to open); see [ElicitationFunc]. Only when it
	// is set does initialize advertise clientCapabilities.elicitation (with
	// the ElicitationModes); without it the agent is told elicitation is not
	// served, and a request is answered -32602 as the spec asks. An accepted
	// form is validated against the requested schema before it is sent;
	// an answer that does not fit, an error or a panic is sent as "cancel"
	// instead, and the answer event carries why (ReasonInvalid and Err,
	// matching ErrElicitationContent for content). It answers the
	// session-scoped elicitations of sessions without a hook of their own
	// and every request-scoped one: an elicitation tied to one of the
	// client's requests awaiting its answer (initialize, authenticate,
	// session/new, session/load, …), which may come during Start, before
	// Start returns; Scope, RequestID and Method say which, and ctx ends
	// (context.Cause matching ErrRequestEnded) if that request ends first.
	// It runs on a goroutine of its own. Nil: not served.
	OnElicitation ElicitationFunc
	// ElicitationModes are the modes advertised when OnElicitation is set.
	// Nil: form and url.
	ElicitationModes []acp.ElicitationMode
	// ElicitationTimeout bounds the wait for one OnElicitation answer; when
	// it fires the request is answered "cancel" with ReasonTimeout. Zero:
	// no limit.
	ElicitationTimeout time.Duration
	// OnElicitationComplete receives the agent's elicitation/complete for
	// a URL elicitation this client accepted (others are ignored), on the
	// dispatcher goroutine in wire order. Nil: ignored.
	OnElicitationComplete func(acp.ElicitationComplete)

	// Stderr, if set, receives everything the agent writes to stderr. The
	// last 64 KiB are always kept for error messages.
	Stderr io.Writer
	// Logger receives diagnostics (skipped stdout lines, unknown responses).
	// Nil: nothing is logged.
	Logger *slog.Logger
	// OnSkippedLine is called on the read loop with each stdout line that is
	// not a JSON-RPC 2.0 message (banners, logs). It must not block.
	OnSkippedLine func(line []byte)
	// MaxLineBytes limits one line from the agent. Default 64 MiB. A longer
	// line fails the connection with an error matching ErrLineTooLong.
	MaxLineBytes int
	// MaxQueuedUpdates bounds the updates read but not yet delivered (besides
	// the batch being delivered); when full, reading pauses (backpressure to
	// the agent). Default 256: enough to keep the dispatcher busy, small
	// enough that a cancel with a slow OnUpdate returns quickly.
	MaxQueuedUpdates int
	// MaxQueuedBytes bounds the same updates in bytes, and separately the
	// params of the agent's requests being handled (one larger update or
	// request is still taken alone). Default 16 MiB. While a call other
	// than a prompt waits for the agent's answer, the queue's count is not
	// bounded and its bytes may reach four times MaxQueuedBytes (a call made
	// from OnUpdate must be answerable); an agent that sends more
	// meanwhile is stopped with an error matching ErrFlood.
	MaxQueuedBytes int
	// MaxPendingRequests bounds the agent's requests (permissions, fs,
	// terminals, anything sent with an id) being handled at once; when
	// reached, reading pauses until one is answered. Default 64.
	MaxPendingRequests int
	// MaxResponseBytes bounds what a turn keeps for its Response (Text,
	// Thought, ToolCalls; estimated as the bytes of their strings and raw
	// JSON), and what a session keeps of its tool calls' merged state.
	// Past it the turn keeps nothing more (events and OnUpdate still see
	// everything) and Response.Truncated is set; a session forgets tool
	// calls, finished ones first. Default 16 MiB. Request.Discard keeps
	// nothing at all.
	MaxResponseBytes int

	// CloseGrace is how long Close waits after closing stdin, and again
	// after SIGTERM, before escalating. Default 2s.
	CloseGrace time.Duration
	// CancelGrace is how long a cancelled turn waits for the agent's answer
	// before returning anyway (the agent is then restarted before the next
	// turn), and how long any cancelled call may stay blocked writing to an
	// agent that stopped reading its stdin. Default 5s.
	CancelGrace time.Duration
	// TurnTimeout ends (cancels) a turn that runs longer. Zero: no limit.
	TurnTimeout time.Duration
	// IdleTimeout ends (cancels) a turn with no update for this long; the
	// clock pauses while a permission request waits. Zero: no limit.
	IdleTimeout time.Duration
	// WriteTimeout bounds how long writing one message to the agent's
	// stdin may take, whether or not its call is cancelled. An agent that
	// leaves a write blocked that long has stopped reading: it is stopped,
	// the calls and turns pending on it fail with an error matching
	// ErrAgentNotReading and ErrWriteTimeout (and a cancelled call's
	// error its cancellation too), and the client replaces it before
	// the next turn (a Connect agent cannot be replaced). It is checked
	// every WriteTimeout/4 (at least every 10ms). The whole message counts:
	// set it well above the time a live agent takes to read your largest
	// prompt. Zero: no bound; a cancelled call's writes are still bounded
	// by CancelGrace.
	WriteTimeout time.Duration

	// ClientInfo is sent in initialize. Default: acphost and its Version.
	ClientInfo acp.Implementation
	// AuthMethod, if set, is sent with authenticate after initialize. If
	// unset and session/new answers "authentication required", the first
	// non-terminal method the agent offered is tried once.
	AuthMethod string
	// Mode, if set, is the session mode set right after session/new.
	Mode string
	// SessionID, if set, is a stored session Start re-attaches as the
	// default session instead of opening a new one: by session/load (its
	// history replayed to OnUpdate, Replay true) when the agent offers it,
	// else session/resume. Start fails with ErrUnsupported when the agent
	// offers neither, and with the agent's answer when it refuses.
	SessionID string
	// MCPServers are given to the agent on session/new, load and resume
	// of every session (SessionOptions.MCPServers replaces them). Each is
	// checked before anything is sent: a server of a transport the agent
	// did not advertise in its mcpCapabilities fails the open with an
	// *MCPServerError (ErrUnsupported). Nil: none.
	MCPServers []acp.MCPServer
	// HostTools, if set, serves tools of the host's own to every session,
	// their servers given to the agent after MCPServers (see HostTools and
	// package hosttools). A local agent (Start without a Transport, or
	// Connect) shares the host's loopback; a link that is a HostForwarder
	// (ssh) is given a forwarded port; with another link the open fails
	// with ErrUnsupported. Nil: none.
	HostTools HostTools
	// PlanMode starts the client in plan mode (see SetPlanMode).
	PlanMode bool
	// RequireAsking keeps each session in a mode in which the agent asks
	// before it changes anything: one in a mode that acts unasked (Claude's
	// auto, Codex's agent) is put in the agent's asking mode before each
	// prompt, and a change the agent reports having made without asking
	// stops the turn with an *UnaskedChangeError. For hosts whose
	// OnPermission asks a person or rejects: without it, such an agent
	// decides alone and the hook sees only what it chooses to ask. False:
	// the agent's mode is the agent's (or SessionOptions.Mode's).
	RequireAsking bool
	// Profile is what the host knows of the agent beyond the wire: its
	// plan, asking and unasking modes and its state directories (see
	// AgentProfile). Nil: recognised from KnownProfiles by the agent's
	// command (for confinement, which starts before the agent speaks) and
	// its agentInfo name; an agent none names has its modes judged by their
	// ids and names.
	Profile *AgentProfile
	// FS serves fs/* inside the session's roots; nil serves nothing.
	FS *FSOptions
	// Terminal serves terminal/*; nil serves nothing.
	Terminal *TerminalOptions
	// Confine, if set, has the kernel confine the agent process and all it
	// starts to writing where Confine.Writable says (see Confinement). Nil:
	// the agent may write wherever its user may. Start only: a Connect
	// agent is not ours to confine.
	Confine *Confinement

	// Record, if set, receives the client's wire as NDJSON: both directions,
	// stderr lines and skipped stdout lines, with timestamps and the agent
	// process generation. fakeagent.ReplayCommand replays such a recording
	// as the agent, turning a real session into a regression test. Writes
	// are serialized; a slow writer slows the client.
	Record io.Writer

	// Recover, if set, restarts a crashed agent on the next call and
	// re-attaches its sessions (see RecoverOptions). Nil: a dead agent stays
	// dead and every call returns why.
	Recover *RecoverOptions

	// Notices advertises clientCapabilities.session.notices: the agent
	// may then send live notices for the person (rate limits, a model
	// switched) as *NoticeUpdate and EventNotice, instead of folding them
	// into its messages. Set it only when the UI shows them. False: not
	// advertised.
	Notices bool
	// Compaction advertises clientCapabilities.session.compaction: the
	// agent may then report context compactions as *CompactionUpdate and
	// *CompactionSummaryChunk (EventCompaction). False: not advertised.
	Compaction bool
	// TerminalAuth advertises clientCapabilities.auth.terminal: the agent
	// may then offer authentication methods of type "terminal", which the
	// client does not run itself (they need a person at a terminal):
	// ACPClient.TerminalAuthCommand gives the command to run. Set it only
	// when you can run that command interactively.
	TerminalAuth bool

	// Unstable turns on the parts of the protocol the schema marks
	// unstable that this version serves — ACPClient.ForkSession
	// (session/fork) and Session.SetTitle (session/set_title) — which may
	// change with the spec before they are stable. False: they fail with
	// ErrUnsupported, as for an agent that does not offer them.
	Unstable bool

	// PermissionPresentation declares clientCapabilities._meta.jetbrains.air
	// so that current Claude and Codex adapters attach their permission
	// presentation record. It opts into the whole AIR contract; see SPEC.md.
	PermissionPresentation bool

	// Contain chooses how the agent's process tree and each terminal's are
	// held so that Close leaves nothing behind (see ContainMode). Zero
	// (ContainAuto): a cgroup v2 group per tree on Linux where the host may
	// create one, else a PID namespace of its own (a normal user's case),
	// else the process group, each step down reported by
	// ACPClient.Containment and a Logger warning. ContainCgroup and
	// ContainPIDNamespace make the missing one an error;
	// ContainProcessGroup uses neither.
	Contain ContainMode
}

func (o *ACPOptions) setDefaults() error {
	if err := o.checkTransport(); err != nil {
		return err
	}
	if o.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		o.Dir = wd
	}
	if !filepath.IsAbs(o.Dir) && o.Transport == nil {
		abs, err := filepath.Abs(o.Dir)
		if err != nil {
			return err
		}
		o.Dir = abs
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CloseGrace <= 0 {
		o.CloseGrace = 2 * time.Second
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = 5 * time.Second
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = defaultMaxLineBytes
	}
	if o.MaxQueuedUpdates <= 0 {
		o.MaxQueuedUpdates = defaultMaxQueuedUpdates
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = defaultMaxQueuedBytes
	}
	if o.MaxPendingRequests <= 0 {
		o.MaxPendingRequests = defaultMaxPendingRequests
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = defaultMaxResponseBytes
	}
	if o.ClientInfo.Name == "" {
		o.ClientInfo = acp.Implementation{Name: "acphost", Version: Version}
	}
	if o.MCPServers == nil {
		o.MCPServers = []acp.MCPServer{}
	}
	return checkConfinement(o)
}

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
	foreign  atomic.Int64 // see Stats

	mu      sync.Mutex
	ag      *agent
	handles []*Session // live sessions, re-attached after a restart
	closed  bool
}

// checkTransport refuses options a Transport makes meaningless: what
// starts a local process, and what only a local process can honour.
func (o *ACPOptions) checkTransport() error {
	if o.Transport == nil {
		return nil
	}
	switch {
	case o.Command != "" || len(o.Args) > 0 || len(o.Env) > 0 || o.CleanEnv:
		return errors.New("acphost: ACPOptions.Command, Args, Env and CleanEnv start a local agent; with a Transport, give them to the transport")
	case o.Confine != nil:
		return fmt.Errorf("acphost: ACPOptions.Confine is Landlock on a local agent process, which a Transport's agent is not: %w", ErrUnsupported)
	case o.Contain != ContainAuto:
		return fmt.Errorf("acphost: ACPOptions.Contain holds a local agent's process tree; a Transport's agent is held by the transport: %w", ErrUnsupported)
	case o.Dir == "" || !strings.HasPrefix(o.Dir, "/") && !filepath.IsAbs(o.Dir):
		return errors.New("acphost: ACPOptions.Dir must be an absolute directory on the agent's machine when a Transport reaches it")
	}
	return nil
}

// Start spawns the agent, runs initialize, opens a session and returns a
// warm client. ctx bounds the start-up only; it never ends the agent's life.
// Call Close when done.
func Start(ctx context.Context, opts ACPOptions) (*ACPClient, error) {
	if opts.Transport != nil {
		return newClient(ctx, opts, func(c *ACPClient) dialer { return transportDialer(c.opts.Transport, &c.opts) })
	}
	if opts.Command == "" {
		return nil, errors.New("acphost: ACPOptions.Command and Transport are both empty")
	}
	return newClient(ctx, opts, func(c *ACPClient) dialer { return processDialer(&c.opts, c.PlanMode, &c.planTmp) })
}

// Connect runs a client over an existing connection to an agent (an
// in-process agent over pipes, a socket): r is what the agent writes, w is
// what it reads. Close closes rwc. There is no process to supervise, so an
// agent that does not confirm a cancellation cannot be restarted.
func Connect(ctx context.Context, r io.Reader, w io.Writer, rwc io.Closer, opts ACPOptions) (*ACPClient, error) {
	if opts.Confine != nil {
		return nil, fmt.Errorf("acphost: ACPOptions.Confine needs an agent process that Start spawns: %w", ErrUnsupported)
	}
	if opts.Transport != nil {
		return nil, errors.New("acphost: Connect runs over the stream it is given; pass a Transport to Start")
	}
	return newClient(ctx, opts, func(*ACPClient) dialer { return streamDialer(r, w, rwc) })
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
	c := &ACPClient{opts: opts, roots: roots, writable: writable, rec: newWireRecorder(opts.Record), restartSem: make(chan struct{}, 1), retired: map[*agent]bool{}}
	c.life, c.endLife = context.WithCancel(context.Background())
	c.plan.Store(opts.PlanMode)
	dial := newDialer(c)
	c.dial = func(ctx context.Context) (*agent, error) { return dialAgent(ctx, c, dial) }
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

// SessionID returns the id of the client's default session.
func (c *ACPClient) SessionID() string { return c.def.ID() }

// Session returns the default session: the one Start opened, which the
// client's own GenerateCtx, GenerateStream, Stream, SetMode, Modes and
// ConfigOptions use.
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
// Connect, the transport's own for a Transport.
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
// ACPOptions.Env. Run it with a terminal for the person (the client never
// does); a zero exit means success, after which a new session (or a
// restart) finds the agent logged in. It fails with ErrUnsupported for an
// agent reached by a Transport (its program is the transport's to run) or
// by Connect (the client does not know its program) and for an id that is
// not a terminal method of the agent's.
func (c *ACPClient) TerminalAuthCommand(id string) (command string, args, env []string, err error) {
	a := c.agent()
	return terminalAuthCommand(a.started(), a.init.AuthMethods, id)
}

// started is the options the agent's process was started with, nil for an
// agent the client did not start itself (Connect's stream, a Transport's).
func (a *agent) started() *program {
	if _, ok := a.link.(*processLink); !ok || a.opts.Transport != nil {
		return nil
	}
	return &program{command: a.opts.Command, args: a.opts.Args, env: a.opts.Env}
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
		return "", nil, nil, fmt.Errorf("acphost: terminal authentication of an agent the client did not start (Connect, a Transport): %w", ErrUnsupported)
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

// AuthMethods returns the authentication methods the agent offered.
func (c *ACPClient) AuthMethods() []acp.AuthMethod { return c.agent().init.AuthMethods }

// Modes returns the default session's modes as last reported by the agent
// (session/new, then current_mode_update).
func (c *ACPClient) Modes() acp.SessionModes { return c.def.Modes() }

// ConfigOptions returns the default session's config options as last
// reported.
func (c *ACPClient) ConfigOptions() []acp.ConfigOption { return c.def.ConfigOptions() }

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
//   - the kernel, with ACPOptions.Confine: the agent's process tree may
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

// SetMode asks the agent to switch the default session to mode id; see
// Session.SetMode.
func (c *ACPClient) SetMode(ctx context.Context, id string) error { return c.def.SetMode(ctx, id) }

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

// Enforcement reports which layers hold for the default session.
func (c *ACPClient) Enforcement() Enforcement { return c.def.Enforcement() }

func (c *ACPClient) generate(ctx context.Context, req Request, emit func(StreamEvent)) (Response, error) {
	return c.def.generate(ctx, req, emit, 0)
}

// Stream returns the default session's turn as an iterator; see
// Session.Stream.
func (c *ACPClient) Stream(ctx context.Context, req Request) iter.Seq2[StreamEvent, error] {
	return c.def.Stream(ctx, req)
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
func (c *ACPClient) ListSessions(ctx context.Context, cwd string) ([]SessionInfo, error) {
	a, err := c.readyAgent(ctx)
	if err != nil {
		return nil, err
	}
	if !a.caps.SessionCapabilities.List.present() {
		return nil, fmt.Errorf("acphost: the agent does not support session/list: %w", ErrUnsupported)
	}
	var all []SessionInfo
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
			Sessions   []SessionInfo `json:"sessions"`
			NextCursor string        `json:"nextCursor"`
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
	return Stats{ForeignMessages: c.foreign.Load()}
}

// Containment reports how the current agent process is held (see
// ACPOptions.Contain).
func (c *ACPClient) Containment() Containment {
	if l, ok := c.agent().link.(*processLink); ok {
		return l.containment
	}
	return Containment{}
}
