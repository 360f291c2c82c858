// Package acphost hosts coding agents — Claude, Codex, opencode, Gemini and
// any other — over the Agent Client Protocol (ACP): newline-delimited
// JSON-RPC 2.0 over the agent subprocess's stdin and stdout.
//
// [Start] spawns an agent, runs initialize, opens a session and returns a
// warm [ACPClient]; turn after turn then runs on the same process. The
// protocol's words the hooks receive are package
// [github.com/acphost/acphost/acp]'s:
//
//	c, err := acphost.Start(ctx, acphost.ACPOptions{
//		Command: "npx", Args: []string{"-y", "@agentclientprotocol/claude-agent-acp"},
//		OnUpdate: func(u acp.Update) { ... },                      // live transcript
//		OnPermission: acphost.RejectChanges(nil),                  // or ask a human
//	})
//	...
//	defer c.Close()
//	resp, err := c.GenerateCtx(ctx, acphost.Request{Prompt: "fix the failing test"})
//
// Four hooks surround each turn: OnPermission (every
// session/request_permission as a typed [acp.PermissionRequest]), OnUpdate
// (every session/update as a typed [acp.Update]), [ACPClient.GenerateCtx] (the
// turn's context is the stop button) and [ACPClient.GenerateStream] (the
// turn as [StreamEvent]s). Package fakeagent is a scriptable ACP agent for
// tests and demos.
//
// # Which one do I use
//
// A turn runs four ways, all on [Session] (the default one is
// [ACPClient.Session]; others are opened with NewSession, LoadSession,
// ResumeSession or ForkSession); [ACPClient] has the three of the seed for
// its default session:
//
//	GenerateCtx(ctx, req)          the turn, cancelled by ctx: the one to start with
//	GenerateStream(ctx, req, emit) the same, and each event to emit as it comes (on the dispatcher goroutine)
//	Stream(ctx, req)               the same events as an iterator: for ev, err := range s.Stream(ctx, req) (Session only)
//	Generate(req)                  GenerateCtx without a ctx (no stop button): scripts and examples
//
// OnUpdate sees every update of every session, turn or not; the stream
// sees one turn's, as [StreamEvent] values (whose Name is the tool
// call's title: [StreamEvent.Title]).
//
// "Plan" means several things, only the first three enforced by the host:
//
//	ACPOptions.PlanMode, SetPlanMode  the host's read-only mode: permission requests of tools that can change
//	                                  anything rejected, and the host's fs writes and commands refused
//	RejectChanges                     the same rule for permission requests only
//	Confinement                       the kernel's version (Linux, Landlock): the agent's own tools cannot write either
//	Session.SetMode(ctx, "plan")      the agent's own mode of that name, where it has one: its promise, not the host's
//	EventPlan, Update's Plan          the agent's to-do list for the turn, nothing to do with permissions
//
// A [PermissionAnswer] with Reason [ReasonHook] was chosen by OnPermission:
// the caller's own function or a policy, not the library. Without
// OnPermission every request is allowed (the first allow option, Reason
// [ReasonDefault]) and ACPOptions.Debug.Logger is warned once per client:
// set a hook, as the example above does.
//
// # Concurrency
//
// All methods of ACPClient, Session and Pool are safe for concurrent use.
// Turns on one session run one at a time; a GenerateCtx made while another
// turn of the session runs waits for it. One reader goroutine reads the agent's stdout and never runs user
// code. OnUpdate and the emit function of GenerateStream run on a single
// dispatcher goroutine, in wire order; OnPermission, FSOptions.OnWriteFile,
// FSOptions.OnReadFile and TerminalOptions.OnCommand each run on a
// goroutine of their own, concurrently. No lock of the library is held
// while user code runs. A panic in a callback is recovered.
//
// Every update that arrived before a prompt's answer has been delivered to
// OnUpdate before GenerateCtx returns. Updates that arrive between turns
// (before session/new answered, after a prompt's answer) are delivered too.
// A permission request is handed to OnPermission only after every earlier
// update of its session was delivered, so a UI has seen the tool call.
//
// # Cancellation
//
// Cancelling the ctx of GenerateCtx (or calling [ACPClient.Cancel]) sends
// session/cancel, answers the session's pending permission requests
// "cancelled" (and any that arrive until the turn ends), keeps delivering
// updates and waits for the agent's answer, up to ACPOptions.Timeouts.CancelGrace.
// The call then returns the Response gathered so far, with StopReason
// "cancelled", and an error matching ctx.Err(). The process and session stay
// warm. An agent that never answers is restarted before the next turn (the
// turn's error matches [ErrCancelUnconfirmed]; the next turn reports a
// [RestartError]), so no turn ever overlaps a zombie one. The grace bounds
// writes too: a cancelled call still blocked writing to an agent that
// stopped reading its stdin gives up after CancelGrace with
// [ErrAgentNotReading], and that agent is replaced the same way.
// TurnTimeout and IdleTimeout end a turn the same way, with
// [ErrTurnTimeout] or [ErrIdleTimeout]. Calls that are never cancelled
// are bounded by ACPOptions.Timeouts.WriteTimeout, if set: a write blocked that
// long stops the agent ([ErrWriteTimeout]).
//
// # Permissions
//
// OnPermission answers with the ID of one offered option. It runs off the
// read loop and may wait for a human; its ctx ends when the turn is
// cancelled, when the agent withdraws the request ($/cancel_request), when
// PermissionTimeout fires (the request is then answered with a reject
// option) or when the client closes. Each request is answered exactly once.
// Without OnPermission the first allow_once option is chosen. Policies
// ([RejectChanges], [AllowReads], [AllowAll], [RejectAll], [Remember]) compose
// with a caller's own function; ACPOptions.PlanMode (or SetPlanMode) also
// refuses the host's file writes and commands. [acp.ParsePermissionRequest]
// decodes the presentation record and structured changes real agents attach.
//
// # Process lifecycle
//
// The agent runs in its own process group, and on Linux in a cgroup of its
// own (ACPOptions.Process.Contain, [ACPClient.Containment]); its stderr is always
// drained (into ACPOptions.Process.Stderr and a 64 KiB tail quoted in errors). The
// ctx given to Start bounds the start-up only. An agent that exits or
// crashes fails every pending call at once with an [*ExitError] carrying its
// status and stderr tail. [ACPClient.Close] closes stdin, waits CloseGrace,
// sends SIGTERM to the group, waits again, sends SIGKILL to the group and the
// cgroup, and returns only when every process the agent started (however it
// detached) and every goroutine of the client have ended. A host that dies
// without Close (killed, crashed) takes its agents' trees with it: its
// cgroups are killed by a watcher, or, without cgroups, the kernel sends the
// agent SIGKILL.
//
// On Linux the kernel (Landlock) can also confine where the agent, and
// everything it runs, may write ([Confinement], ACPOptions.Process.Confine), and
// likewise the commands the host runs for it (TerminalOptions.Confine): a
// plan mode that the agent's own tools cannot get around.
//
// # Containment
//
// Every byte from the agent is treated as hostile. What it can make the
// host hold is bounded (ACPOptions.Limits.MaxLineBytes, MaxQueuedUpdates,
// MaxQueuedBytes, MaxPendingRequests, MaxResponseBytes,
// FSOptions.MaxReadBytes, TerminalOptions.MaxTerminals and MaxOutputBytes);
// at each bound the host stops reading (backpressure, nothing dropped) or
// answers with a typed error ([ErrFlood]). Updates and requests naming a
// session the connection did not open reach no hook ([ACPClient.Stats]).
// The host's file writes land exactly where they were reviewed, and for a
// confined agent only where it may write itself. SPEC.md, Containment, has
// the memory budget.
//
// # Errors
//
// Errors match with errors.Is and errors.As; a cancelled or timed-out call
// also matches its ctx.Err(). Every error of the package is defined in
// errors.go, the protocol package's in acp/errors.go:
//
//	Sentinel (errors.Is)   Error type (errors.As)  Meaning
//	ErrClosed              -                       the client (ErrPoolClosed: the pool) was closed
//	ErrAgentExited         *ExitError              the agent process ended; status and stderr tail
//	ErrProtocol            *ProtocolError          the agent broke the protocol
//	ErrLineTooLong         *ProtocolError          a line over ACPOptions.Limits.MaxLineBytes (with ErrProtocol)
//	ErrFlood               *ProtocolError          the agent sent more than the limits allow (with ErrProtocol)
//	-                      *RPCError               a JSON-RPC error; errors.Is(err, &RPCError{Code: c}) compares codes (acp.Code*)
//	ErrAuthRequired        *AuthError              no session until the client authenticates; the agent's methods, the one tried
//	ErrUnsupported         -                       not advertised by the agent, or not possible here
//	ErrUnsupported         *MCPServerError         an MCP server of a transport the agent did not advertise
//	ErrSystemPromptUnsupported *SystemPromptError  a system prompt the agent did not advertise (nothing sent) or refused (-32602); matches ErrUnsupported
//	acp.ErrSystemPrompt    -                       a system prompt the spec forbids sending (not text, empty): not sent
//	ErrCancelUnconfirmed   -                       a cancelled turn the agent never answered; restarted before the next turn
//	ErrAgentNotReading     -                       the agent stopped reading its stdin (with ErrCancelUnconfirmed or ErrWriteTimeout)
//	ErrTurnTimeout         -                       ACPOptions.Timeouts.TurnTimeout ended the turn
//	ErrIdleTimeout         -                       ACPOptions.Timeouts.IdleTimeout ended the turn
//	ErrWriteTimeout        -                       ACPOptions.Timeouts.WriteTimeout stopped the agent
//	-                      *RestartError           the agent was replaced before this turn
//	ErrContextLost         *RestartError           ... and its session could not be re-attached
//	-                      *CrashLoopError         recovery gave up: the agent died too often
//	ErrReentrant           -                       a call from a callback that it would wait for
//	ErrRefused             -                       the host refused an fs write or a command (plan mode, a hook)
//	ErrUnaskedChange       *UnaskedChangeError     the agent reported a change it made unasked (RequireAsking); the turn was stopped
//	ErrPlanModeBypassed    *UnaskedChangeError     ... or any change it made in plan mode
//	ErrFileTooLarge        -                       a file over FSOptions.MaxReadBytes
//	acp.ErrMalformed       -                       an agent's message whose params break the protocol (the acp decoders)
//	acp.ErrElicitationContent *acp.FormContentError an accepted elicitation's content did not fit its schema: not sent
//	ErrRequestEnded        -                       the cause of a request-scoped elicitation's ctx: the client's request it belongs to ended
//	ErrLinkLost            *LinkError              the link to the agent failed (SSH, WebSocket, …), not the agent
package acphost
