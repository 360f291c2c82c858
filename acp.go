// Package acphost hosts coding agents — Claude, Codex, opencode, Gemini and
// any other — over the Agent Client Protocol (ACP): newline-delimited
// JSON-RPC 2.0 over the agent subprocess's stdin and stdout.
//
// [Start] spawns an agent, runs initialize, opens a session and returns a
// warm [ACPClient]; turn after turn then runs on the same process:
//
//	c, err := acphost.Start(ctx, acphost.ACPOptions{
//		Command: "npx", Args: []string{"-y", "@agentclientprotocol/claude-agent-acp"},
//		OnUpdate: func(u acphost.Update) { ... },                  // live transcript
//		OnPermission: acphost.RejectChanges(nil),                  // or ask a human
//	})
//	...
//	defer c.Close()
//	resp, err := c.GenerateCtx(ctx, acphost.Request{Prompt: "fix the failing test"})
//
// Four hooks surround each turn: OnPermission (every
// session/request_permission as a typed [PermissionRequest]), OnUpdate
// (every session/update as a typed [Update]), [ACPClient.GenerateCtx] (the
// turn's context is the stop button) and [ACPClient.GenerateStream] (the
// turn as [StreamEvent]s). Package fakeagent is a scriptable ACP agent for
// tests and demos.
//
// # Which one do I use
//
// A turn runs four ways; each is on [ACPClient] (its default session) and
// on [Session] (one opened with NewSession, LoadSession, ResumeSession or
// ForkSession), which is all the second set adds:
//
//	GenerateCtx(ctx, req)          the turn, cancelled by ctx: the one to start with
//	GenerateStream(ctx, req, emit) the same, and each event to emit as it comes (on the dispatcher goroutine)
//	Stream(ctx, req)               the same events as an iterator: for ev, err := range c.Stream(ctx, req)
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
//	RejectChanges                     the same rule for permission requests only (RejectWrites is its old name)
//	Confinement                       the kernel's version (Linux, Landlock): the agent's own tools cannot write either
//	SetMode(ctx, "plan")              the agent's own mode of that name, where it has one: its promise, not the host's
//	EventPlan, Update's Plan          the agent's to-do list for the turn, nothing to do with permissions
//
// A [PermissionAnswer] with Reason [ReasonHook] was chosen by OnPermission:
// the caller's own function or a policy, not the library.
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
// updates and waits for the agent's answer, up to ACPOptions.CancelGrace.
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
// are bounded by ACPOptions.WriteTimeout, if set: a write blocked that
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
// refuses the host's file writes and commands. [ParsePermissionRequest]
// decodes the presentation record and structured changes real agents attach.
//
// # Process lifecycle
//
// The agent runs in its own process group, and on Linux in a cgroup of its
// own (ACPOptions.Contain, [ACPClient.Containment]); its stderr is always
// drained (into ACPOptions.Stderr and a 64 KiB tail quoted in errors). The
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
// everything it runs, may write ([Confinement], ACPOptions.Confine), and
// likewise the commands the host runs for it (TerminalOptions.Confine): a
// plan mode that the agent's own tools cannot get around.
//
// # Containment
//
// Every byte from the agent is treated as hostile. What it can make the
// host hold is bounded (ACPOptions.MaxLineBytes, MaxQueuedUpdates,
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
// errors.go:
//
//	Sentinel (errors.Is)   Error type (errors.As)  Meaning
//	ErrClosed              -                       the client (ErrPoolClosed: the pool) was closed
//	ErrAgentExited         *ExitError              the agent process ended; status and stderr tail
//	ErrProtocol            *ProtocolError          the agent broke the protocol
//	ErrLineTooLong         *ProtocolError          a line over ACPOptions.MaxLineBytes (with ErrProtocol)
//	ErrFlood               *ProtocolError          the agent sent more than the limits allow (with ErrProtocol)
//	-                      *RPCError               a JSON-RPC error; errors.Is(err, &RPCError{Code: c}) compares codes (Code*)
//	ErrAuthRequired        *AuthError              no session until the client authenticates; the agent's methods, the one tried
//	ErrUnsupported         -                       not advertised by the agent, or not possible here
//	ErrUnsupported         *MCPServerError         an MCP server of a transport the agent did not advertise
//	ErrCancelUnconfirmed   -                       a cancelled turn the agent never answered; restarted before the next turn
//	ErrAgentNotReading     -                       the agent stopped reading its stdin (with ErrCancelUnconfirmed or ErrWriteTimeout)
//	ErrTurnTimeout         -                       ACPOptions.TurnTimeout ended the turn
//	ErrIdleTimeout         -                       ACPOptions.IdleTimeout ended the turn
//	ErrWriteTimeout        -                       ACPOptions.WriteTimeout stopped the agent
//	-                      *RestartError           the agent was replaced before this turn
//	ErrContextLost         *RestartError           ... and its session could not be re-attached
//	-                      *CrashLoopError         recovery gave up: the agent died too often
//	ErrReentrant           -                       a call from a callback that it would wait for
//	ErrRefused             -                       the host refused an fs write or a command (plan mode, a hook)
//	ErrUnaskedChange       *UnaskedChangeError     the agent reported a change it made unasked (RequireAsking); the turn was stopped
//	ErrPlanModeBypassed    *UnaskedChangeError     ... or any change it made in plan mode
//	ErrFileTooLarge        -                       a file over FSOptions.MaxReadBytes
//	ErrElicitationContent  *FormContentError       an accepted elicitation's content did not fit its schema: not sent
//	ErrRequestEnded        -                       the cause of a request-scoped elicitation's ctx: the client's request it belongs to ended
//	ErrLinkLost            *LinkError              the link to the agent failed (SSH, WebSocket, …), not the agent
package acphost

import (
	"encoding/json"
)

// ProtocolVersion is the ACP protocol version this package speaks.
const ProtocolVersion = 1

// BlockType is the type of a [ContentBlock]. The set is open: a block of a
// type this version does not know keeps the agent's string and its JSON.
type BlockType string

// The content block types of ACP v1.
const (
	BlockText         BlockType = "text"
	BlockImage        BlockType = "image"
	BlockAudio        BlockType = "audio"
	BlockResourceLink BlockType = "resource_link"
	BlockResource     BlockType = "resource"
)

// ContentBlock is a piece of content in a prompt, a message chunk or a tool
// call. Type is one of the Block constants or a type this version does not
// know. A text block has only Text; image, audio, resource_link and resource
// blocks carry the rest of their fields in Attachment, which is nil for a
// text block (so the block streamed with every chunk stays small). Raw keeps
// the block's JSON as received (it is nil for blocks built in Go).
type ContentBlock struct {
	Type BlockType
	Text string
	// Attachment holds the fields of a block that is not plain text: nil
	// for a text block and for blocks of a type this version does not know.
	Attachment *Attachment
	Raw        json.RawMessage
}

// Attachment is what an image, audio, resource_link or resource block
// carries besides its type: its fields are those of the block's JSON.
type Attachment struct {
	Data     string `json:"data,omitempty"` // base64, for image and audio
	MimeType string `json:"mimeType,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"` // resource_link
	Title    string `json:"title,omitempty"`
	// Resource is the embedded resource of a "resource" block.
	Resource *EmbeddedResource `json:"resource,omitempty"`
}

// EmbeddedResource is the body of a "resource" content block: text or a
// base64 blob.
type EmbeddedResource struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// contentBlockJSON is a block's JSON: the attachment's members sit beside
// type and text (encoding/json flattens the embedded pointer, allocating it
// only when one of them is present).
type contentBlockJSON struct {
	Type BlockType `json:"type"`
	Text string    `json:"text,omitempty"`
	*Attachment
}

// UnmarshalJSON decodes a block and keeps a copy of its raw JSON.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	return b.decode(append(json.RawMessage(nil), data...))
}

// decode decodes raw into b, keeping raw itself (the caller's to give).
func (b *ContentBlock) decode(raw json.RawMessage) error {
	var j contentBlockJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return err
	}
	*b = ContentBlock{Type: j.Type, Text: j.Text, Attachment: j.Attachment, Raw: raw}
	return nil
}

// MarshalJSON writes Raw when the block has an unknown type and came from
// the wire, so unknown blocks pass through unchanged.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	if len(b.Raw) > 0 && !knownContentType(b.Type) {
		return b.Raw, nil
	}
	return json.Marshal(contentBlockJSON{Type: b.Type, Text: b.Text, Attachment: b.Attachment})
}

// plainText reports whether b is a text block and nothing else.
func (b *ContentBlock) plainText() bool {
	return b.Type == BlockText && b.Attachment == nil
}

func knownContentType(t BlockType) bool {
	switch t {
	case BlockText, BlockImage, BlockAudio, BlockResourceLink, BlockResource:
		return true
	}
	return false
}

// TextBlock returns a text content block.
func TextBlock(s string) ContentBlock { return ContentBlock{Type: BlockText, Text: s} }

// ImageBlock returns an image content block from base64 data.
func ImageBlock(mimeType, base64Data string) ContentBlock {
	return ContentBlock{Type: BlockImage, Attachment: &Attachment{MimeType: mimeType, Data: base64Data}}
}

// ResourceLinkBlock returns a link to a resource the agent can fetch itself.
func ResourceLinkBlock(name, uri string) ContentBlock {
	return ContentBlock{Type: BlockResourceLink, Attachment: &Attachment{Name: name, URI: uri}}
}

// ResourceBlock returns an embedded text resource (an @-mentioned file).
func ResourceBlock(uri, mimeType, text string) ContentBlock {
	return ContentBlock{Type: BlockResource, Attachment: &Attachment{Resource: &EmbeddedResource{URI: uri, MimeType: mimeType, Text: text}}}
}

// StopReason is why the agent ended a turn.
type StopReason string

// The stop reasons of ACP v1.
const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

// SessionMode is one mode a session can be in.
type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SessionModes is the mode state the agent reported for a session.
type SessionModes struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []SessionMode `json:"availableModes"`
}

// ConfigOption is one session configuration option (a model picker, a
// thought level …). Type is "select", "boolean" or unknown; Raw keeps the
// whole option. For a select, Choices lists the values in the agent's
// order (grouped ones flattened, each with its Group) and CurrentValue is
// the chosen value's JSON string; for a boolean, CurrentValue is true or
// false.
type ConfigOption struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	Category     ConfigCategory  `json:"category,omitempty"`
	Type         string          `json:"type"`
	CurrentValue json.RawMessage `json:"currentValue,omitempty"`
	Choices      []ConfigChoice  `json:"-"`
	Raw          json.RawMessage `json:"-"`
}

// ConfigCategory says what a config option is for, so that a UI can put
// the model and the thought level in pickers of their own. The set is
// open; "" when the agent gives none.
type ConfigCategory string

// The categories of the schema.
const (
	CategoryMode         ConfigCategory = "mode"
	CategoryModel        ConfigCategory = "model"
	CategoryModelConfig  ConfigCategory = "model_config"
	CategoryThoughtLevel ConfigCategory = "thought_level"
)

// ConfigChoice is one value of a select option: Value is what
// SetConfigOption takes; Group and GroupName name the group it was listed
// in, when the agent grouped them.
type ConfigChoice struct {
	Value       string
	Name        string
	Description string
	Group       string
	GroupName   string
}

// Current returns the select's current value ("" for other types).
func (o *ConfigOption) Current() string {
	var v string
	if json.Unmarshal(o.CurrentValue, &v) != nil {
		return ""
	}
	return v
}

// UnmarshalJSON decodes an option and keeps its raw JSON.
func (o *ConfigOption) UnmarshalJSON(data []byte) error {
	type plain ConfigOption
	var p struct {
		plain
		Options json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*o = ConfigOption(p.plain)
	o.Choices = decodeChoices(p.Options)
	o.Raw = data
	return nil
}

// decodeChoices flattens a select's options, grouped or not; items that
// do not decode are skipped.
func decodeChoices(raw json.RawMessage) []ConfigChoice {
	var items []struct {
		Value       *string `json:"value"`
		Name        string  `json:"name"`
		Description string  `json:"description"`
		Group       string  `json:"group"`
		Options     []struct {
			Value       *string `json:"value"`
			Name        string  `json:"name"`
			Description string  `json:"description"`
		} `json:"options"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []ConfigChoice
	for _, it := range items {
		if it.Value != nil {
			out = append(out, ConfigChoice{Value: *it.Value, Name: it.Name, Description: it.Description})
			continue
		}
		for _, c := range it.Options {
			if c.Value != nil {
				out = append(out, ConfigChoice{Value: *c.Value, Name: c.Name, Description: c.Description, Group: it.Group, GroupName: it.Name})
			}
		}
	}
	return out
}

// decodeConfigOptions keeps every option it can decode; an option of an
// unknown type is kept with its raw JSON, a malformed one is skipped.
func decodeConfigOptions(raw json.RawMessage) []ConfigOption {
	return decodeEach(raw, func(item json.RawMessage) (ConfigOption, bool) {
		var o ConfigOption
		return o, json.Unmarshal(item, &o) == nil
	})
}

// Implementation names a program: the agent's agentInfo.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// AuthMethod is one way the agent offers to authenticate. Type "" or
// "agent" is done by the agent through authenticate (ACPOptions.AuthMethod);
// "terminal" (offered only with ACPOptions.TerminalAuth) by running the
// agent's own program interactively with Args appended and Env set — see
// ACPClient.TerminalAuthCommand. Other types are the agent's own.
type AuthMethod struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Type        string            `json:"type,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
}
