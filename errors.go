package acphost

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/sandbox"
)

// This file holds every error the package returns: the sentinels (match
// them with errors.Is), the JSON-RPC and ACP error codes, and the error
// types (match them with errors.As). The package doc has a table of them.

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrClosed is returned by calls on a client after Close.
	ErrClosed = errors.New("acphost: client closed")
	// ErrAgentExited matches an *ExitError: the agent process ended.
	ErrAgentExited = errors.New("acphost: agent exited")
	// ErrLineTooLong matches the error of a connection that received a line
	// over ACPOptions.Limits.MaxLineBytes. It comes with ErrProtocol.
	ErrLineTooLong = errors.New("acphost: line too long")
	// ErrProtocol matches errors caused by an agent that broke the protocol.
	ErrProtocol = errors.New("acphost: protocol error")
	// ErrUnsupported is returned for operations the agent did not advertise,
	// and for options this system or this kind of client cannot honour
	// (Confinement without Landlock, restarting a StreamTransport's agent).
	ErrUnsupported = errors.New("acphost: not supported")
	// ErrCancelUnconfirmed matches the error of a cancelled turn whose agent
	// did not answer the prompt within CancelGrace; the client restarts the
	// agent before the next turn.
	ErrCancelUnconfirmed = errors.New("acphost: agent did not confirm cancellation")
	// ErrAgentNotReading matches, with ErrCancelUnconfirmed, the error of a
	// cancelled call or turn that was still blocked writing to the agent
	// CancelGrace later, and, with ErrWriteTimeout, the error of calls
	// ended by ACPOptions.Timeouts.WriteTimeout: the agent stopped reading its
	// stdin. Its writes are abandoned and the client restarts it before
	// the next turn.
	ErrAgentNotReading = errors.New("acphost: agent stopped reading its input")
	// ErrTurnTimeout and ErrIdleTimeout are the causes of turns ended by the
	// TurnTimeout and IdleTimeout watchdogs.
	ErrTurnTimeout = errors.New("acphost: turn timeout")
	ErrIdleTimeout = errors.New("acphost: idle timeout")
	// ErrWriteTimeout is the cause of an agent stopped by
	// ACPOptions.Timeouts.WriteTimeout; it comes with ErrAgentNotReading.
	ErrWriteTimeout = errors.New("acphost: write timeout")
	// ErrFlood matches the error of an agent that sent more than the
	// client's limits allow it to have waiting: more bytes of updates than
	// the update queue may hold while a call waited for the agent's answer
	// (four times ACPOptions.Limits.MaxQueuedBytes). It comes with ErrProtocol;
	// the agent is stopped and replaced before the next turn.
	ErrFlood = errors.New("acphost: agent flooded the client")
	// ErrContextLost matches a *RestartError whose session could not be
	// re-attached: the agent runs a fresh session without the conversation.
	ErrContextLost = errors.New("acphost: session context lost")
	// ErrReentrant is returned by calls that would wait for the callback
	// they are made from: a turn or LoadSession started from OnUpdate or a
	// stream's emit (the dispatcher that must deliver the turn's updates is
	// the one running the callback), and a turn of a session started from a
	// callback serving that session's running turn (OnPermission,
	// OnReadFile, OnWriteFile, OnCommand: the running turn waits for that
	// callback, and the new one for the running turn), directly or through
	// a chain of sessions (S's OnPermission runs a turn of T, whose
	// OnPermission runs a turn of S). Start them from another goroutine.
	ErrReentrant = errors.New("acphost: called from a callback it would wait for")
	// ErrUnaskedChange matches an *UnaskedChangeError: the agent reported
	// a change it made (a completed tool call that edits, deletes, moves or
	// runs something, or carries a diff) that it never asked the host
	// about, while the host requires asking (ACPOptions.RequireAsking) or
	// is in plan mode. The turn is cancelled at once.
	ErrUnaskedChange = errors.New("acphost: the agent made a change without asking")
	// ErrPlanModeBypassed matches an *UnaskedChangeError raised in plan
	// mode: the agent reported a change made while plan mode was on.
	ErrPlanModeBypassed = errors.New("acphost: the agent changed something in plan mode")
	// ErrRefused is wrapped by errors the client answers for writes and
	// commands it refuses (plan mode, a hook's refusal).
	ErrRefused = errors.New("acphost: refused")
	// ErrFileTooLarge is matched (errors.Is) by the error for a file read,
	// or shown for review, past FSOptions.MaxReadBytes.
	ErrFileTooLarge = sandbox.ErrTooLarge
	// ErrPoolClosed is returned by a Pool after Close. It matches ErrClosed.
	ErrPoolClosed = fmt.Errorf("acphost: pool closed: %w", ErrClosed)
	// ErrAuthRequired matches an *AuthError: the agent opens no session
	// until the client authenticates.
	ErrAuthRequired = errors.New("acphost: the agent requires authentication")
	// ErrLinkLost matches a *LinkError: the link to the agent failed (a
	// dropped connection, a peer that went away), not the agent itself.
	ErrLinkLost = errors.New("acphost: link to the agent lost")
	// ErrSystemPromptUnsupported matches a *SystemPromptError: the agent
	// does not take the session's system prompt (it did not advertise
	// sessionCapabilities.systemPrompt, or not the override mode asked
	// for, or it refused the prompt when the session was opened). It
	// matches ErrUnsupported too.
	ErrSystemPromptUnsupported = fmt.Errorf("acphost: the agent does not take this system prompt: %w", ErrUnsupported)
	// ErrRequestEnded is the cause of a request-scoped elicitation's ctx
	// ending because the client's request it belongs to ended first: the agent
	// answered it (or failed it) without waiting for the user, or the client
	// gave up on it. The agent is answered "cancel".
	ErrRequestEnded = errors.New("acphost: the request the elicitation belongs to has ended")
)

// RPCError is a JSON-RPC error answered by the agent (or one we answer);
// its codes are the acp package's Code constants.
// errors.Is(err, &RPCError{Code: c}) matches any RPCError with code c.
type RPCError struct {
	Code    int
	Message string
	// Data is the error's data member, raw (agents send strings and objects).
	Data json.RawMessage
	// Method is the method of the call that failed, when known.
	Method string
}

func (e *RPCError) Error() string {
	var b strings.Builder
	b.WriteString("acphost: ")
	if e.Method != "" {
		b.WriteString(e.Method)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "agent error %d: %s", e.Code, agentWords(e.Message, maxErrorMessage))
	if len(e.Data) > 0 && string(e.Data) != "null" {
		b.WriteString(" (")
		b.WriteString(agentWords(string(e.Data), maxErrorData))
		b.WriteString(")")
	}
	return b.String()
}

// maxErrorMessage and maxErrorData bound what an RPCError's message shows
// of the agent's message and data (the fields keep them whole).
const maxErrorMessage, maxErrorData = 512, 256

// agentWords is the agent's text as an error message shows it: on one
// line, without control characters (SafeText, then the line breaks it
// keeps as spaces), cut at max bytes.
func agentWords(s string, max int) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, acp.SafeText(cutBytes(s, max)))
}

// Is reports whether target is an *RPCError with the same code.
func (e *RPCError) Is(target error) bool {
	t, ok := target.(*RPCError)
	return ok && t.Code == e.Code
}

// ExitError reports that the agent process ended. It matches ErrAgentExited.
type ExitError struct {
	// ExitCode is the exit status, or -1 when a signal ended the process.
	ExitCode int
	// Signal names the signal that ended the process ("killed", …), if any.
	Signal string
	// Stderr is the tail of what the agent wrote to stderr (at most 64 KiB).
	Stderr string
	// DuringTurn is true when a turn was running.
	DuringTurn bool
	// PlanKernel, for an agent that ran under plan mode's kernel layer
	// (Confinement), says what the layer let it write and how to let it
	// write more: an agent that exits early there may have died of it.
	PlanKernel string
	// Err is the underlying error from os/exec.
	Err error
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString("acphost: agent exited")
	if e.Signal != "" {
		fmt.Fprintf(&b, " on signal %s", e.Signal)
	} else {
		fmt.Fprintf(&b, " with status %d", e.ExitCode)
	}
	if e.DuringTurn {
		b.WriteString(" during a turn")
	}
	if line := lastLine(e.Stderr); line != "" {
		fmt.Fprintf(&b, ": %s", line)
	}
	if e.PlanKernel != "" {
		fmt.Fprintf(&b, " (%s)", e.PlanKernel)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrAgentExited) hold.
func (e *ExitError) Is(target error) bool { return target == ErrAgentExited }

// Unwrap returns the os/exec error.
func (e *ExitError) Unwrap() error { return e.Err }

// lastLine is the last line of the agent's stderr s, as an error message
// shows it (agentWords).
func lastLine(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(agentWords(s, maxErrorMessage))
}

// ProtocolError reports an agent that broke the wire protocol: a line over
// the size limit, an unsupported protocol version, a malformed answer. It
// matches ErrProtocol, and ErrLineTooLong when that was the cause.
type ProtocolError struct {
	Msg    string
	Err    error
	Stderr string // the tail of the agent's stderr, when known
}

func (e *ProtocolError) Error() string {
	msg := "acphost: protocol error: " + e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if line := lastLine(e.Stderr); line != "" {
		msg += " (agent stderr: " + line + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrProtocol) hold.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// Unwrap returns the cause.
func (e *ProtocolError) Unwrap() error { return e.Err }

// MCPServerError reports an MCP server of a transport the agent did not
// advertise in its mcpCapabilities, refused before anything was sent. It
// matches ErrUnsupported. Its message ends with what would make it work:
// the capability the agent would have to advertise (Capability), and a
// stdio server instead of a remote one, or an agent that takes http for
// the host's own tools.
type MCPServerError struct {
	Method          string           // "session/new", "session/load", …
	Server          string           // the server's name
	Transport       acp.MCPTransport // its transport ("stdio", "http", "sse", …)
	AgentTransports []string         // what the agent takes: "stdio" and its mcpCapabilities
	// HostTools reports that the server is the host's own tools
	// (ACPOptions.HostTools), which are served over http only.
	HostTools bool
	// Capability is the member of the agent's initialize answer that would
	// let it take the server, e.g. "agentCapabilities.mcpCapabilities.http";
	// empty for a transport ACP has no capability for.
	Capability string

	fakeAgent bool // the agent calls itself fakeagent: name the Script field
}

func (e *MCPServerError) Error() string {
	what := fmt.Sprintf("MCP server %q is %s", e.Server, e.Transport)
	if e.HostTools {
		what = fmt.Sprintf("MCP server %q (the host tools of ACPOptions.HostTools) is %s", e.Server, e.Transport)
	}
	msg := fmt.Sprintf("acphost: %s: %s, which the agent does not take (it takes %s)",
		e.Method, what, strings.Join(e.AgentTransports, ", "))
	if e.Capability == "" {
		return msg
	}
	msg += "; it takes one only if it advertises " + e.Capability + " in its initialize answer"
	switch {
	case e.fakeAgent:
		msg += fmt.Sprintf(" (fakeagent: set Script.AgentCapabilities to {\"mcpCapabilities\":{%q:true}})", string(e.Transport))
	case e.HostTools:
		msg += ": use an agent that does, or leave HostTools unset"
	default:
		msg += ": give it a stdio server instead, or leave this one out"
	}
	return msg
}

func (e *MCPServerError) Unwrap() error { return ErrUnsupported }

// SystemPromptError reports a session's system prompt the agent does not
// take; the session was not opened. It matches ErrSystemPromptUnsupported
// (and so ErrUnsupported). Err is nil when the prompt was refused before
// anything was sent: the agent did not advertise
// sessionCapabilities.systemPrompt (Modes empty), or not the mode asked
// for (Modes lists those it did). Err is the agent's *RPCError when the
// agent advertised the mode but answered the open with invalid params
// (-32602), as the spec has an agent that cannot apply a system prompt do.
type SystemPromptError struct {
	Method string               // "session/new", "session/load", …
	Mode   acp.SystemPromptMode // the mode asked for
	Modes  []acp.SystemPromptMode
	Err    error
}

func (e *SystemPromptError) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("acphost: %s: the agent refused the %s system prompt: %s", e.Method, e.Mode, strings.TrimPrefix(e.Err.Error(), "acphost: "))
	case len(e.Modes) == 0:
		return fmt.Sprintf("acphost: %s: the agent does not take a system prompt (it does not advertise sessionCapabilities.systemPrompt)", e.Method)
	}
	modes := make([]string, len(e.Modes))
	for i, m := range e.Modes {
		modes[i] = string(m)
	}
	return fmt.Sprintf("acphost: %s: the agent does not take a system prompt in %s mode (it takes %s)", e.Method, e.Mode, strings.Join(modes, ", "))
}

func (e *SystemPromptError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrSystemPromptUnsupported}
	}
	return []error{ErrSystemPromptUnsupported, e.Err}
}

// AuthError reports that the agent refused to open a session until the
// client authenticates (session/new, load or resume answered -32000), after
// the client tried what it could: ACPOptions.AuthMethod, or else the first
// method of the agent's that is not a terminal one. It carries what a UI
// needs to let a person log in: the agent's methods (its words: show them
// through SafeText) and the one tried ("" when none was). Err is the agent's
// *RPCError, so errors.Is(err, &RPCError{Code: CodeAuthRequired}) holds too.
type AuthError struct {
	Methods []acp.AuthMethod
	Tried   string
	Err     error

	program *program // the agent's command line, for TerminalCommand; nil for an agent the client did not start
}

// TerminalCommand returns the command that runs the agent's terminal
// method id, as ACPClient.TerminalAuthCommand does for a started client:
// run it with a terminal for the person, then start the client again.
func (e *AuthError) TerminalCommand(id string) (command string, args, env []string, err error) {
	return terminalAuthCommand(e.program, e.Methods, id)
}

func (e *AuthError) Error() string {
	msg := "the agent requires authentication"
	if e.Err != nil {
		msg = strings.TrimPrefix(e.Err.Error(), "acphost: ")
	}
	var b strings.Builder
	b.WriteString("acphost: " + msg)
	if e.Tried != "" {
		fmt.Fprintf(&b, " (after authenticating with %q)", cutMethodID(e.Tried))
	}
	if len(e.Methods) > 0 {
		named := e.Methods[:min(len(e.Methods), maxNamedAuthMethods)]
		ids := make([]string, 0, len(named))
		for _, m := range named {
			ids = append(ids, namedAuthMethod(m.ID))
		}
		fmt.Fprintf(&b, "; its methods: %s", strings.Join(ids, ", "))
		if more := len(e.Methods) - len(ids); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
	}
	return b.String()
}

// cutMethodID cuts a method id (maybe the agent's) for an error message.
func cutMethodID(id string) string { return cutBytes(id, maxNamedAuthMethodID) }

// cutBytes cuts the agent's s to at most max bytes (on a rune boundary),
// marking the cut with "…", for an error or log that names it.
func cutBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

// authenticateOp names an authenticate with method id in an error.
func authenticateOp(id string) string { return fmt.Sprintf("authenticate %q", cutMethodID(id)) }

// maxNamedAuthMethods bounds the agent's methods an AuthError's message
// names, and maxNamedAuthMethodID the bytes of each id (the agent's words).
const maxNamedAuthMethods, maxNamedAuthMethodID = 8, 64

// namedAuthMethod is an agent's method id as an error message shows it:
// cut short, and quoted unless it is plain printable text.
func namedAuthMethod(id string) string { return plainOrQuoted(cutMethodID(id)) }

// plainOrQuoted is the agent's word w as a message shows it in a list:
// quoted unless it is plain printable text.
func plainOrQuoted(w string) string {
	if w == "" || acp.SafeText(w) != w || strings.ContainsAny(w, "\n\t ,") {
		return strconv.Quote(w)
	}
	return w
}

// Is matches ErrAuthRequired.
func (e *AuthError) Is(target error) bool { return target == ErrAuthRequired }

// Unwrap returns the agent's error.
func (e *AuthError) Unwrap() error { return e.Err }

// RestartError reports that the client replaced its agent process before a
// turn. ContextLost says whether the session had to start afresh with its
// conversation lost; when it did, the turn was not run and its prompt was
// not sent (call again to run it on the fresh session). A session that had
// no conversation yet (no prompt sent, not opened from a stored one) and
// is given a fresh session (How "new") loses nothing: ContextLost is false
// and the turn runs.
type RestartError struct {
	// Reason is why: an error matching ErrCancelUnconfirmed (and
	// ErrAgentNotReading when the agent stopped reading its stdin), one
	// matching ErrWriteTimeout and ErrAgentNotReading, or the agent's exit
	// error.
	Reason error
	// OldSessionID and NewSessionID are equal when the session was
	// re-attached by load or resume.
	OldSessionID, NewSessionID string
	// How is "load", "resume" or "new".
	How         string
	ContextLost bool
	// Refused is why the agent refused to re-attach the session by load
	// or resume although it offers them (its answers, as *RPCError), when
	// it did; the session then started afresh.
	Refused error
}

func (e *RestartError) Error() string {
	what := "session " + e.OldSessionID + " re-attached by " + e.How
	switch {
	case e.ContextLost:
		what = "session " + e.OldSessionID + " lost; continuing in a fresh session " + e.NewSessionID
	case e.How == "new":
		what = "session " + e.OldSessionID + " had no conversation yet; continuing in a fresh session " + e.NewSessionID
	}
	return fmt.Sprintf("acphost: agent restarted (%s): %v", what, e.Reason)
}

// Is makes errors.Is(err, ErrContextLost) hold for a lost session.
func (e *RestartError) Is(target error) bool { return target == ErrContextLost && e.ContextLost }

// Unwrap returns the reason for the restart.
func (e *RestartError) Unwrap() error { return e.Reason }

// CrashLoopError reports that recovery gave up: the agent died too often.
type CrashLoopError struct {
	Restarts int
	Window   time.Duration
	Last     error // the last crash
}

func (e *CrashLoopError) Error() string {
	return fmt.Sprintf("acphost: agent crashed %d times within %v; not restarting: %v", e.Restarts, e.Window, e.Last)
}

// Unwrap returns the last crash.
func (e *CrashLoopError) Unwrap() error { return e.Last }

// opError says which step failed around an error that may already carry
// the "acphost: " prefix and the step's name (an *RPCError names its
// method): each is said once, and errors.Is and As see err.
type opError struct {
	op  string
	err error
}

func wrapOp(op string, err error) error { return &opError{op: op, err: err} }

func (e *opError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "acphost: ")
	if msg == e.op || strings.HasPrefix(msg, e.op+": ") {
		return "acphost: " + msg
	}
	return "acphost: " + e.op + ": " + msg
}

func (e *opError) Unwrap() error { return e.err }

// UnaskedChangeError is a turn's error when the agent reported a change it
// made without the host's consent (see ErrUnaskedChange). It matches
// ErrUnaskedChange, and ErrPlanModeBypassed when PlanMode is set.
type UnaskedChangeError struct {
	// ToolCall is the tool call as merged when it was reported done.
	ToolCall acp.ToolCall
	// PlanMode: plan mode was on.
	PlanMode bool
	// Mode is the session's mode at the time ("" when the agent offers
	// none); AskingModes are the modes it offers that ask before a change
	// (from its profile or their words), for a message that says what to
	// choose.
	Mode        string
	AskingModes []string
}

func (e *UnaskedChangeError) Error() string {
	what := "made a change without asking"
	if e.PlanMode {
		what = "changed something in plan mode"
	}
	msg := fmt.Sprintf("acphost: the agent %s: %s tool call %q (%s)", what, plainOrQuoted(cutBytes(string(e.ToolCall.Kind), 64)),
		cutBytes(e.ToolCall.Title, 80), plainOrQuoted(cutBytes(e.ToolCall.ID, 64)))
	if e.Mode != "" {
		msg += fmt.Sprintf("; its mode is %q", cutBytes(e.Mode, 64))
	}
	if len(e.AskingModes) > 0 {
		asks := make([]string, len(e.AskingModes))
		for i, m := range e.AskingModes {
			asks[i] = plainOrQuoted(m)
		}
		msg += "; modes that ask: " + strings.Join(asks, ", ")
	}
	return msg
}

// Is reports whether target is ErrUnaskedChange, or ErrPlanModeBypassed
// for a change made in plan mode.
func (e *UnaskedChangeError) Is(target error) bool {
	return target == ErrUnaskedChange || (e.PlanMode && target == ErrPlanModeBypassed)
}

// LinkError reports that the link to an agent failed: the agent may still
// have been running on the far side (the transport stops what it can
// reach). With ACPOptions.Recover the client dials again. It matches
// ErrLinkLost.
type LinkError struct {
	// Transport is the link's Promises.Transport ("ssh", "websocket", …).
	Transport string
	// Op says what failed: "dial", "read", "keepalive", "closed" ….
	Op string
	// DuringTurn is true when a turn was running.
	DuringTurn bool
	// Err is the transport's error.
	Err error
}

func (e *LinkError) Error() string {
	msg := "acphost: " + e.Transport + " link lost"
	if e.Op != "" {
		msg += " (" + e.Op + ")"
	}
	if e.DuringTurn {
		msg += " during a turn"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrLinkLost) hold.
func (e *LinkError) Is(target error) bool { return target == ErrLinkLost }
func (e *LinkError) Unwrap() error        { return e.Err }
