package fakeagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Script describes an agent's whole behaviour. It is plain data: it round-trips through
// encoding/json, which is how [Command] hands it to a re-executed subprocess.
type Script struct {
	// Name is agentInfo.name in the initialize result; "" means "fakeagent".
	Name string `json:"name,omitempty"`
	// ProtocolVersion is returned by initialize; 0 means 1.
	ProtocolVersion int `json:"protocolVersion,omitempty"`
	// AgentCapabilities is returned verbatim as agentCapabilities; nil means
	// {"loadSession":false,"promptCapabilities":{"image":true,"embeddedContext":true}}.
	// With "loadSession":true the agent answers session/load by replaying the session's
	// history (each prompt as user_message_chunk updates, then what the agent sent, before
	// the answer, as the spec asks); sessionCapabilities resume, list, close and delete turn on those methods
	// (delete removes the session from session/list). Load and resume answer with the
	// modes and configOptions of NewSessionResult, the current mode the one the session
	// was last set to (kept in the history, as agents store it).
	AgentCapabilities json.RawMessage `json:"agentCapabilities,omitempty"`
	// AuthMethods is returned as authMethods; nil means [].
	AuthMethods json.RawMessage `json:"authMethods,omitempty"`
	// RequireAuth makes session/new and session/prompt fail with -32000
	// "Authentication required" until an authenticate request has arrived.
	RequireAuth bool `json:"requireAuth,omitempty"`
	// AuthAtPrompt, with RequireAuth, lets session/new through and
	// refuses only session/prompt, as claude-agent-acp does without
	// credentials.
	AuthAtPrompt bool `json:"authAtPrompt,omitempty"`
	// AuthFile, if set, is a login that outlives the process, as real
	// agents keep their credentials: authenticate creates it, and so does
	// the agent's terminal login (the agent run with [LoginArg]), logout
	// removes it, and RequireAuth is satisfied while it exists.
	AuthFile string `json:"authFile,omitempty"`
	// HistoryFile, if set, keeps every session's history (its prompts and the updates sent
	// in it) in this file, so that session/load in a restarted agent process replays what
	// an earlier process said. Without it the history lives in memory.
	HistoryFile string `json:"historyFile,omitempty"`
	// ForgetSessions makes session/load and session/resume of a session
	// this process has no history of fail with an internal error, as real
	// agents answer for a session they never persisted (without it such a
	// session is accepted with nothing to replay).
	ForgetSessions bool `json:"forgetSessions,omitempty"`
	// RefuseSystemPrompt, if set, refuses every session/new, load, resume
	// and fork that carries a systemPrompt with -32602 and this message, as
	// an agent that advertises sessionCapabilities.systemPrompt but cannot
	// apply the prompt it is given does. Without it a systemPrompt is taken
	// when agentCapabilities advertises sessionCapabilities.systemPrompt
	// (override mode only with its mode.override) and its content is
	// non-empty text blocks, and refused -32602 otherwise; Agent.SystemPrompt
	// tells what each session was opened with.
	RefuseSystemPrompt string `json:"refuseSystemPrompt,omitempty"`
	// SessionID is the id of the first session; "" means "s1". Later session/new calls get
	// SessionID+"-2", SessionID+"-3", and so on.
	SessionID string `json:"sessionId,omitempty"`
	// NewSessionResult holds extra fields merged into the session/new result object, such as
	// {"modes":{...},"configOptions":[...]}. The agent always sets sessionId itself.
	NewSessionResult json.RawMessage `json:"newSessionResult,omitempty"`
	// BeforeSessionNew are steps played for the new session's id before session/new is
	// answered, for example an early available_commands_update, or a request-scoped
	// elicitation (a ForRequest step). They cannot be cancelled.
	BeforeSessionNew []Step `json:"beforeSessionNew,omitempty"`
	// BeforeAuthenticate are steps played before authenticate is answered (and counts as
	// done), for example a request-scoped elicitation asking for the account (a ForRequest
	// step). They name no session: a Request step without ForRequest gets "sessionId":"".
	// They cannot be cancelled.
	BeforeAuthenticate []Step `json:"beforeAuthenticate,omitempty"`
	// Turns script the prompts: the i-th session/prompt plays Turns[i], and past the end the
	// last Turn repeats. No Turns means one agent_message_chunk "ok", then end_turn.
	Turns []Turn `json:"turns,omitempty"`
	// StderrLines are written to stderr, each followed by "\n", when the agent starts.
	StderrLines []string `json:"stderrLines,omitempty"`
	// IgnoreEOF keeps the agent running after its input reaches EOF, like agents that must be
	// killed. In-process, Serve then returns only when its context ends or a step exits.
	IgnoreEOF bool `json:"ignoreEOF,omitempty"`
	// IgnoreSIGTERM makes a subprocess agent ignore SIGTERM.
	IgnoreSIGTERM bool `json:"ignoreSIGTERM,omitempty"`
	// Grandchild makes a subprocess agent start a child of its own (in the same process group,
	// inheriting stdout and stderr) that sleeps, so stdout stays open after the agent dies
	// unless the whole process group is killed. The sleeper gives up after an hour.
	Grandchild bool `json:"grandchild,omitempty"`
	// StringIDs makes the ids of agent→client requests strings ("req-0", "req-1", …) instead
	// of numbers counting from 0.
	StringIDs bool `json:"stringIds,omitempty"`
	// RecordFile, if set, is a file to which every message received from the client is
	// appended as one JSON [Message] line, written as it arrives. Read it with [ReadRecord].
	RecordFile string `json:"recordFile,omitempty"`
	// SetModeFails makes session/set_mode answer -32601 instead of {} followed by a
	// current_mode_update.
	SetModeFails bool `json:"setModeFails,omitempty"`
	// NeverConfirmMode makes session/set_mode answer {} with no
	// current_mode_update after it, as agents that confirm a mode only by
	// their answer do.
	NeverConfirmMode bool `json:"neverConfirmMode,omitempty"`
	// ReadOnlyModes are session modes in which the agent changes nothing,
	// as real agents' plan and read-only modes: a Run step there is not
	// run but reported as a failed tool call. A session's mode is the
	// currentModeId (or the currentValue of a config option of category
	// "mode") of NewSessionResult until session/set_mode or
	// session/set_config_option changes it.
	ReadOnlyModes []string `json:"readOnlyModes,omitempty"`
	// AskingModes are session modes in which the agent asks before it
	// acts, as real agents' default modes do: a Run step there first sends
	// a session/request_permission for its tool call and runs only when an
	// option of an allow kind is chosen. In any other mode a Run step runs
	// unasked.
	AskingModes []string `json:"askingModes,omitempty"`
	// NeverAnswer lists client→agent methods (such as "session/set_mode") whose requests
	// are recorded and never answered, for tests of a client that gives up on a call.
	NeverAnswer []string `json:"neverAnswer,omitempty"`
}

// Turn scripts one session/prompt.
type Turn struct {
	// Prompt, if set, selects the turn by the prompt's text: a prompt whose text contains
	// Prompt plays the first such turn, every time. Prompts that match no such turn play
	// the turns without Prompt in order, as described at Script.Turns.
	Prompt string `json:"prompt,omitempty"`
	// Steps are played in order before the prompt is answered.
	Steps []Step `json:"steps,omitempty"`
	// StopReason answers the prompt when the steps are done; "" means "end_turn".
	StopReason string `json:"stopReason,omitempty"`
	// Usage, if set, is sent verbatim as the usage member of that answer
	// (end-of-turn token usage, unstable in the schema), e.g.
	// {"totalTokens":240,"inputTokens":200,"outputTokens":40}.
	Usage json.RawMessage `json:"usage,omitempty"`
	// Error, if set, answers the prompt instead with this JSON-RPC error
	// object ({"code":-32603,"message":"Internal error","data":…}).
	Error json.RawMessage `json:"error,omitempty"`
	// After are steps played once the prompt has been answered, whatever the answer (late
	// updates, a protocol violation some agents commit). They cannot be cancelled.
	After []Step `json:"after,omitempty"`
	// OnCancel says what happens when session/cancel arrives for the session during the turn:
	//
	//   - "" or "answer": stop playing steps at once (also stop waiting for a permission
	//     answer), send a tool_call_update {"status":"failed"} for every tool call of the
	//     turn (announced by an update or a permission request) that is not completed or
	//     failed, then answer {"stopReason":"cancelled"}.
	//     A permission answer that arrives later is just recorded.
	//   - "await_permission": like gemini-cli, wait until every open permission request of
	//     the turn is answered (with anything), then answer {"stopReason":"cancelled"}.
	//   - "ignore": never answer the prompt; the agent still answers other requests.
	//   - "continue": the cancel changes nothing: the steps play on (WaitCancel returns)
	//     and the prompt is answered with StopReason, as agents that ignore cancel do.
	//   - "error": answer the prompt with JSON-RPC error -32603 "aborted".
	//   - "end_turn": answer {"stopReason":"end_turn"}.
	//   - "cancel_request": send $/cancel_request for every open agent→client request of
	//     the turn, then behave as "answer".
	OnCancel string `json:"onCancel,omitempty"`
}

// Step is one action of a turn. Exactly one action field is set; NoWait and
// UpdatesNumbered only modify an action.
type Step struct {
	// Update is a SessionUpdate object, sent as session/update {sessionId, update}.
	// "{{answer}}" anywhere in its strings is replaced by the optionId of the turn's last
	// permission answer to arrive, "cancelled" if that outcome was cancelled, "error" if the
	// client answered with an error, or "" before any answer. "{{turn}}" in it (and in
	// Permission's and Request's params) is replaced by the turn's number in its session,
	// counting the prompts of its history (an earlier process's, with HistoryFile): tool
	// call ids such as "t{{turn}}" then differ from turn to turn, as a real agent's do.
	Update json.RawMessage `json:"update,omitempty"`
	// Permission holds the params of a session/request_permission request; "sessionId" is
	// added if absent. The agent waits for the answer unless NoWait is set.
	Permission json.RawMessage `json:"permission,omitempty"`
	// NoWait, with Permission or Request, leaves the request open instead of waiting for its
	// answer; several may be open at once and WaitAll waits for them.
	NoWait bool `json:"noWait,omitempty"`
	// ForRequest, with Request, scopes the request to the client's request whose handling
	// plays the step, as ACP's request-scoped elicitations are: "requestId" is set to that
	// request's id (the session/new or authenticate of BeforeSessionNew or
	// BeforeAuthenticate; in a turn, the prompt's) unless the params have one, and no
	// "sessionId" is added.
	ForRequest bool `json:"forRequest,omitempty"`
	// IfAnswer, with any action, plays the step only after the turn's last
	// permission answer: "allowed" when it selected an option of an allow
	// kind, "rejected" otherwise (a reject option, cancelled, an error or
	// no answer), as an agent runs a tool only once it is allowed.
	IfAnswer string `json:"ifAnswer,omitempty"`
	// WaitAll waits until every agent→client request of the turn has been answered.
	WaitAll bool `json:"waitAll,omitempty"`
	// Request is any agent→client request (fs/read_text_file, terminal/create, an unknown
	// method, …). Object params get "sessionId" added if absent. The agent waits for the
	// answer unless NoWait is set.
	Request *Call `json:"request,omitempty"`
	// Notify is any agent→client notification; its params are sent verbatim.
	Notify *Call `json:"notify,omitempty"`
	// CancelRequest sends $/cancel_request for the most recent unanswered agent→client
	// request of the turn, then waits for that request's answer (the client must still
	// answer it, typically with -32800). It does nothing if no request is open.
	CancelRequest bool `json:"cancelRequest,omitempty"`
	// Raw is written to stdout verbatim followed by "\n": junk lines, banners, ANSI
	// sequences, JSON that is not JSON-RPC, a fake response without "jsonrpc".
	Raw string `json:"raw,omitempty"`
	// HugeLine writes one valid session/update notification line (an agent_message_chunk
	// padded with "x") of this many bytes, not counting the "\n".
	HugeLine int `json:"hugeLine,omitempty"`
	// Stderr is written to stderr followed by "\n".
	Stderr string `json:"stderr,omitempty"`
	// Exit ends the agent at once: a subprocess exits with this code; in-process, Serve
	// stops writing and returns an error wrapping [ErrExited].
	Exit *int `json:"exit,omitempty"`
	// WaitCancel blocks until session/cancel arrives for the session, then the turn's
	// OnCancel behaviour runs. In After or BeforeSessionNew it blocks until the agent stops.
	WaitCancel bool `json:"waitCancel,omitempty"`
	// Updates sends this many agent_message_chunk updates with the text "x", or with the
	// decimal index (from 0) when UpdatesNumbered is set.
	Updates         int  `json:"updates,omitempty"`
	UpdatesNumbered bool `json:"updatesNumbered,omitempty"`
	// Delay is simulated work: the step waits this long (a Go duration such as "200ms").
	// A cancel of the turn ends the wait, as it would end a model call.
	Delay string `json:"delay,omitempty"`
	// StopReading makes the agent stop reading its stdin for good, as a wedged agent
	// does: what the client sends after it is never handled. The step waits for the agent's
	// read of stdin to be in flight; that read still takes in one write's worth (in-process)
	// or one buffer's worth (a pipe), and once the pipe is full the client's writes block.
	// The agent goes on writing, and a subprocess ends only by signal; in-process, Serve
	// returns when its ctx ends.
	StopReading bool `json:"stopReading,omitempty"`
	// Run has the agent run a command itself, as agents' own tools do (Claude's Bash,
	// Codex's exec), in the agent process's working directory (not the session's cwd): a
	// tool_call of kind execute, in progress, then a tool_call_update, completed or failed
	// (a non-zero exit, or a command that did not start), with the combined output as text
	// content. A cancel of the turn kills the command's process group.
	Run []string `json:"run,omitempty"`
	// MCPCall has the agent call a tool of an MCP server it was given in
	// the session's mcpServers (an http one: Streamable HTTP, with the
	// server's headers), as an agent calls an MCP tool: a tool_call of
	// kind other titled mcp__<server>__<tool>, in progress, with the
	// arguments as rawInput, then a tool_call_update, completed (failed
	// for a result with isError, an MCP error, or a server that cannot
	// be reached), with the result's text as content and the whole result
	// as rawOutput. A cancel of the turn ends the call.
	MCPCall *MCPCall `json:"mcpCall,omitempty"`
}

// MCPCall names a tool of an MCP server given in the session's mcpServers,
// and its arguments (a JSON object; nil: {}).
type MCPCall struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Call is an agent→client request or notification.
type Call struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

var validOnCancel = map[string]bool{
	"": true, "answer": true, "await_permission": true, "ignore": true, "continue": true,
	"error": true, "end_turn": true, "cancel_request": true,
}

// validate reports the first problem that would make the script misbehave silently.
func (s *Script) validate() error {
	if err := checkJSON("AgentCapabilities", s.AgentCapabilities, '{'); err != nil {
		return err
	}
	if err := checkJSON("AuthMethods", s.AuthMethods, '['); err != nil {
		return err
	}
	if err := checkJSON("NewSessionResult", s.NewSessionResult, '{'); err != nil {
		return err
	}
	if err := validateSteps("BeforeSessionNew", s.BeforeSessionNew); err != nil {
		return err
	}
	if err := validateSteps("BeforeAuthenticate", s.BeforeAuthenticate); err != nil {
		return err
	}
	for i, t := range s.Turns {
		if !validOnCancel[t.OnCancel] {
			return fmt.Errorf("fakeagent: Turns[%d].OnCancel %q is not a known behaviour", i, t.OnCancel)
		}
		if err := validateSteps(fmt.Sprintf("Turns[%d].Steps", i), t.Steps); err != nil {
			return err
		}
		if err := validateSteps(fmt.Sprintf("Turns[%d].After", i), t.After); err != nil {
			return err
		}
	}
	return nil
}

func validateSteps(where string, steps []Step) error {
	for i, st := range steps {
		if err := st.validate(); err != nil {
			return fmt.Errorf("fakeagent: %s[%d]: %w", where, i, err)
		}
	}
	return nil
}

func (st Step) validate() error {
	if n := st.actions(); n != 1 {
		return fmt.Errorf("step has %d actions, want exactly one", n)
	}
	if st.NoWait && !isSet(st.Permission) && st.Request == nil {
		return fmt.Errorf("NoWait applies only to Permission and Request")
	}
	if st.ForRequest && st.Request == nil {
		return fmt.Errorf("ForRequest applies only to Request")
	}
	if st.IfAnswer != "" && st.IfAnswer != "allowed" && st.IfAnswer != "rejected" {
		return fmt.Errorf("IfAnswer %q: want \"allowed\" or \"rejected\"", st.IfAnswer)
	}
	if err := checkJSON("Update", st.Update, '{'); err != nil {
		return err
	}
	if err := checkJSON("Permission", st.Permission, '{'); err != nil {
		return err
	}
	if err := st.Request.validate("Request"); err != nil {
		return err
	}
	if c := st.MCPCall; c != nil {
		if c.Server == "" || c.Tool == "" {
			return fmt.Errorf("MCPCall needs a Server and a Tool")
		}
		if err := checkJSON("MCPCall.Arguments", c.Arguments, '{'); err != nil {
			return err
		}
	}
	if st.Delay != "" {
		if _, err := time.ParseDuration(st.Delay); err != nil {
			return fmt.Errorf("bad delay: %w", err)
		}
	}
	return st.Notify.validate("Notify")
}

func (st Step) actions() int {
	n := 0
	for _, set := range []bool{
		isSet(st.Update), isSet(st.Permission), st.WaitAll, st.Request != nil,
		st.Notify != nil, st.CancelRequest, st.Raw != "", st.HugeLine > 0,
		st.Stderr != "", st.Exit != nil, st.WaitCancel, st.Updates > 0, st.Delay != "",
		st.StopReading, len(st.Run) > 0, st.MCPCall != nil,
	} {
		if set {
			n++
		}
	}
	return n
}

func (c *Call) validate(field string) error {
	if c == nil {
		return nil
	}
	if c.Method == "" {
		return fmt.Errorf("%s has no Method", field)
	}
	return checkJSON(field+".Params", c.Params, 0)
}

// checkJSON checks that raw, if set, is valid JSON starting with the byte first (0: any).
func checkJSON(field string, raw json.RawMessage, first byte) error {
	if !isSet(raw) {
		return nil
	}
	if !json.Valid(raw) {
		return fmt.Errorf("fakeagent: %s is not valid JSON", field)
	}
	if first != 0 && bytes.TrimSpace(raw)[0] != first {
		return fmt.Errorf("fakeagent: %s must be a JSON %s", field, map[byte]string{'{': "object", '[': "array"}[first])
	}
	return nil
}

// isSet reports whether raw holds a value (JSON null counts as unset).
func isSet(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}
