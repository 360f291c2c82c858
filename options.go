package acphost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/acphost/acphost/acp"
)

// ACPOptions configures a client. The zero value of every field is a
// documented default; Start needs Command or Transport. What most hosts
// set is on top; the rest sits in groups whose zero values are defaults
// too: Process (the local subprocess), Limits, Timeouts, Elicitation,
// Advertise (what initialize offers) and Debug.
type ACPOptions struct {
	// Command and Args start the agent as a local subprocess, e.g. "npx"
	// and ["-y", "@agentclientprotocol/claude-agent-acp"].
	Command string
	Args    []string
	// Dir is the session's working directory (absolute). Default: the
	// current directory. The agent process also starts there. With a
	// Transport it is a directory on the agent's machine, not checked
	// here, and required.
	Dir string
	// Transport, if set, reaches the agent instead of starting Command
	// (see Transport): over SSH, a WebSocket, a container engine, or your
	// own. Command, Args and Process are then the transport's business
	// and must be unset; FS and Terminal need a link
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
	// allow-kind option (see [DefaultPermission]), and a Debug.Logger
	// warning the first time the client answers so: an agent is hostile
	// until shown otherwise, so choose a hook (RejectChanges, AllowReads,
	// a person) rather than inherit this one.
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
	// MCPServers are given to the agent on session/new, load and resume
	// of every session (SessionOptions.MCPServers replaces them). Each is
	// checked before anything is sent: a server of a transport the agent
	// did not advertise in its mcpCapabilities fails the open with an
	// *MCPServerError (ErrUnsupported). Nil: none.
	MCPServers []acp.MCPServer
	// SystemPrompt, if set, is the system-level instructions of every
	// session (SessionOptions.SystemPrompt replaces it), sent as
	// systemPrompt on session/new, load, resume and fork; see
	// SessionOptions.SystemPrompt for what is checked and refused. Start
	// fails with a *SystemPromptError (ErrSystemPromptUnsupported) when
	// the agent does not take it. Nil: none.
	SystemPrompt *acp.SystemPrompt
	// HostTools, if set, serves tools of the host's own to every session,
	// their servers given to the agent after MCPServers (see HostTools and
	// package hosttools). A local agent (Start without a Transport, or
	// a StreamTransport) shares the host's loopback; a link that is a HostForwarder
	// (ssh) is given a forwarded port; with another link the open fails
	// with ErrUnsupported. Nil: none.
	HostTools HostTools
	// FS serves fs/* inside the session's roots; nil serves nothing.
	FS *FSOptions
	// Terminal serves terminal/*; nil serves nothing.
	Terminal *TerminalOptions
	// Recover, if set, restarts a crashed agent on the next call and
	// re-attaches its sessions (see RecoverOptions). Nil: a dead agent stays
	// dead and every call returns why.
	Recover *RecoverOptions
	// Unstable turns on the parts of the protocol the schema marks
	// unstable that this version serves — ACPClient.ForkSession
	// (session/fork) and Session.SetTitle (session/set_title) — which may
	// change with the spec before they are stable. False: they fail with
	// ErrUnsupported, as for an agent that does not offer them.
	Unstable bool

	// Process configures the agent's local subprocess (Start without a
	// Transport): its environment, confinement and containment.
	Process ProcessOptions
	// Limits bound what an agent can make the host hold.
	Limits Limits
	// Timeouts bound turns, cancels, writes and Close.
	Timeouts Timeouts
	// Elicitation serves the agent's elicitation/create requests.
	Elicitation ElicitationOptions
	// Advertise chooses what initialize offers beyond what the hooks and
	// services imply.
	Advertise AdvertiseOptions
	// Debug receives the client's diagnostics and a recording of its wire.
	Debug DebugOptions
}

// ProcessOptions configures the agent's local subprocess; a Transport
// takes none of them (Start fails if any is set).
type ProcessOptions struct {
	// Env is added to the host's environment for the agent ("KEY=value").
	Env []string
	// CleanEnv starts the agent with Env only, not the host's environment
	// (which may hold credentials and proxy settings the agent should not
	// see). Remember PATH and HOME then.
	CleanEnv bool
	// Stderr, if set, receives everything the agent writes to stderr. The
	// last 64 KiB are always kept for error messages.
	Stderr io.Writer
	// Confine, if set, has the kernel confine the agent process and all it
	// starts to writing where Confine.Writable says (see Confinement). Nil:
	// the agent may write wherever its user may. Start only: a StreamTransport's
	// agent is not ours to confine.
	Confine *Confinement
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

// Limits bound what an agent can make the host hold (SPEC.md,
// Containment, has the budget). Zero: the default of each field.
type Limits struct {
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
}

// Timeouts bound the waits of a client. Zero: the default of each field.
type Timeouts struct {
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
	// the next turn (a StreamTransport's agent cannot be replaced). It is checked
	// every WriteTimeout/4 (at least every 10ms). The whole message counts:
	// set it well above the time a live agent takes to read your largest
	// prompt. Zero: no bound; a cancelled call's writes are still bounded
	// by CancelGrace.
	WriteTimeout time.Duration
}

// ElicitationOptions serve the agent's elicitation/create requests.
type ElicitationOptions struct {
	// OnRequest answers the agent's elicitation/create requests (a
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
	OnRequest ElicitationFunc
	// Modes are the modes advertised when OnElicitation is set.
	// Nil: form and url.
	Modes []acp.ElicitationMode
	// Timeout bounds the wait for one OnElicitation answer; when
	// it fires the request is answered "cancel" with ReasonTimeout. Zero:
	// no limit.
	Timeout time.Duration
	// OnComplete receives the agent's elicitation/complete for
	// a URL elicitation this client accepted (others are ignored), on the
	// dispatcher goroutine in wire order. Nil: ignored.
	OnComplete func(acp.ElicitationComplete)
}

// AdvertiseOptions choose what initialize advertises beyond what the hooks
// and services imply. Zero: nothing more, and acphost as the client.
type AdvertiseOptions struct {
	// ClientInfo is sent in initialize. Default: acphost and its Version.
	ClientInfo acp.Implementation
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
	// PermissionPresentation declares clientCapabilities._meta.jetbrains.air
	// so that current Claude and Codex adapters attach their permission
	// presentation record. It opts into the whole AIR contract; see SPEC.md.
	PermissionPresentation bool
}

// DebugOptions receive the client's diagnostics.
type DebugOptions struct {
	// Logger receives diagnostics (skipped stdout lines, unknown responses).
	// Nil: nothing is logged.
	Logger *slog.Logger
	// OnSkippedLine is called on the read loop with each stdout line that is
	// not a JSON-RPC 2.0 message (banners, logs). It must not block.
	OnSkippedLine func(line []byte)
	// Record, if set, receives the client's wire as NDJSON: both directions,
	// stderr lines and skipped stdout lines, with timestamps and the agent
	// process generation. fakeagent.ReplayCommand replays such a recording
	// as the agent, turning a real session into a regression test. Writes
	// are serialized; a slow writer slows the client.
	Record io.Writer
	// OnTurn, if set, is called as each turn of the client's sessions
	// begins (Generate, GenerateCtx, GenerateStream and Stream, on the
	// goroutine that called them, before the turn waits for its
	// session), for telemetry (the module acphost/otel): the [TurnWatch]
	// it returns says what the turn adds to its prompt and where its
	// events go as well. A panic in it is logged and the turn runs
	// unwatched. Nil: turns are not watched.
	OnTurn func(ctx context.Context, t TurnInfo) TurnWatch
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
	if o.Debug.Logger == nil {
		o.Debug.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeouts.CloseGrace <= 0 {
		o.Timeouts.CloseGrace = 2 * time.Second
	}
	if o.Timeouts.CancelGrace <= 0 {
		o.Timeouts.CancelGrace = 5 * time.Second
	}
	if o.Limits.MaxLineBytes <= 0 {
		o.Limits.MaxLineBytes = defaultMaxLineBytes
	}
	if o.Limits.MaxQueuedUpdates <= 0 {
		o.Limits.MaxQueuedUpdates = defaultMaxQueuedUpdates
	}
	if o.Limits.MaxQueuedBytes <= 0 {
		o.Limits.MaxQueuedBytes = defaultMaxQueuedBytes
	}
	if o.Limits.MaxPendingRequests <= 0 {
		o.Limits.MaxPendingRequests = defaultMaxPendingRequests
	}
	if o.Limits.MaxResponseBytes <= 0 {
		o.Limits.MaxResponseBytes = defaultMaxResponseBytes
	}
	if o.Advertise.ClientInfo.Name == "" {
		o.Advertise.ClientInfo = acp.Implementation{Name: "acphost", Version: Version}
	}
	if o.MCPServers == nil {
		o.MCPServers = []acp.MCPServer{}
	}
	if p := o.SystemPrompt; p != nil && !noSystemPrompt(p) {
		if err := p.Check(); err != nil {
			return fmt.Errorf("acphost: ACPOptions.SystemPrompt: %w", err)
		}
	}
	return checkConfinement(o)
}

// checkTransport refuses options a Transport makes meaningless: what
// starts a local process, and what only a local process can honour.
func (o *ACPOptions) checkTransport() error {
	if o.Transport == nil {
		return nil
	}
	switch {
	case o.Command != "" || len(o.Args) > 0 || len(o.Process.Env) > 0 || o.Process.CleanEnv:
		return errors.New("acphost: ACPOptions.Command, Args, Process.Env and Process.CleanEnv start a local agent; with a Transport, give them to the transport")
	case o.Process.Confine != nil:
		return fmt.Errorf("acphost: ACPOptions.Process.Confine is Landlock on a local agent process, which a Transport's agent is not: %w", ErrUnsupported)
	case o.Process.Contain != ContainAuto:
		return fmt.Errorf("acphost: ACPOptions.Process.Contain holds a local agent's process tree; a Transport's agent is held by the transport: %w", ErrUnsupported)
	case o.Dir == "" || !strings.HasPrefix(o.Dir, "/") && !filepath.IsAbs(o.Dir):
		return errors.New("acphost: ACPOptions.Dir must be an absolute directory on the agent's machine when a Transport reaches it")
	}
	return nil
}

// elicitationModes are the modes the client advertises: none without
// OnElicitation, else Elicitation.Modes (nil: form and url).
func (o *ACPOptions) elicitationModes() []acp.ElicitationMode {
	if o.Elicitation.OnRequest == nil {
		return nil
	}
	if o.Elicitation.Modes == nil {
		return []acp.ElicitationMode{acp.ModeForm, acp.ModeURL}
	}
	return o.Elicitation.Modes
}

// elicitationCapability is clientCapabilities.elicitation, or nil.
func (o *ACPOptions) elicitationCapability() map[string]any {
	modes := o.elicitationModes()
	if len(modes) == 0 {
		return nil
	}
	caps := map[string]any{}
	for _, m := range modes {
		caps[string(m)] = map[string]any{}
	}
	return caps
}

// profileFor is ACPOptions.Profile, else the known profile the agent's
// agentInfo name or command names.
func (o *ACPOptions) profileFor(agentName string) *AgentProfile {
	if o.Profile != nil {
		return o.Profile
	}
	return recogniseProfile(append([]string{agentName}, commandWords(o)...)...)
}

// agentEnv is the environment a local agent is started with; nil (this
// process's) for a transport's agent.
func (o *ACPOptions) agentEnv() []string {
	if o.Transport != nil {
		return nil
	}
	if o.Process.CleanEnv {
		return o.Process.Env
	}
	return append(os.Environ(), o.Process.Env...)
}
