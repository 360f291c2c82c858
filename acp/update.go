package acp

import (
	"encoding/json"
	"slices"

	"github.com/acphost/acphost/internal/acpinternal"
	"github.com/acphost/acphost/internal/fastjson"
)

// Update is one session/update notification from the agent, decoded by its
// sessionUpdate discriminator. The concrete types are *MessageChunk (for
// agent_message_chunk, agent_thought_chunk and user_message_chunk),
// *ToolCallUpdate (tool_call and tool_call_update), *PlanUpdate,
// *AvailableCommandsUpdate, *CurrentModeUpdate, *ConfigOptionUpdate,
// *SessionInfoUpdate, *UsageUpdate and *UnknownUpdate for any other kind.
// Use a type switch; the set is sealed so new protocol kinds arrive as
// *UnknownUpdate rather than being mis-decoded.
type Update interface {
	// SessionID is the session the update belongs to.
	SessionID() string
	// Kind is the sessionUpdate discriminator, e.g. KindAgentMessageChunk;
	// an *UnknownUpdate carries whatever the agent sent.
	Kind() UpdateKind
	// Raw is the whole params object of the session/update notification,
	// exactly as received. It must not be modified.
	Raw() json.RawMessage
	// Replay is true for updates an agent replays while loading a session
	// (history, not new activity).
	Replay() bool
	isUpdate()
}

// UpdateKind is the sessionUpdate discriminator of a session/update. The
// set is open: a kind this version does not know arrives as an
// *UnknownUpdate with the agent's string.
type UpdateKind string

// The sessionUpdate kinds of ACP v1.
const (
	KindUserMessageChunk        UpdateKind = "user_message_chunk"
	KindAgentMessageChunk       UpdateKind = "agent_message_chunk"
	KindAgentThoughtChunk       UpdateKind = "agent_thought_chunk"
	KindToolCall                UpdateKind = "tool_call"
	KindToolCallUpdate          UpdateKind = "tool_call_update"
	KindPlan                    UpdateKind = "plan"
	KindAvailableCommandsUpdate UpdateKind = "available_commands_update"
	KindCurrentModeUpdate       UpdateKind = "current_mode_update"
	KindConfigOptionUpdate      UpdateKind = "config_option_update"
	KindSessionInfoUpdate       UpdateKind = "session_info_update"
	KindUsageUpdate             UpdateKind = "usage_update"
)

// updateHeader carries what every update shares. It is part of every
// streamed chunk, so the kind is a byte: 48 bytes in all.
type updateHeader struct {
	session string
	raw     json.RawMessage
	kind    kindCode
	replay  bool
}

// kindCode is a known UpdateKind as an index into kindNames; kindOther is a
// kind this version does not know (the *UnknownUpdate keeps its string).
type kindCode uint8

const kindOther kindCode = 0

var kindNames = [...]UpdateKind{kindOther: "",
	1: KindUserMessageChunk, 2: KindAgentMessageChunk, 3: KindAgentThoughtChunk, 4: KindToolCall,
	5: KindToolCallUpdate, 6: KindPlan, 7: KindAvailableCommandsUpdate, 8: KindCurrentModeUpdate,
	9: KindConfigOptionUpdate, 10: KindSessionInfoUpdate, 11: KindUsageUpdate, 12: KindNotice,
	13: KindCompactionUpdate, 14: KindCompactionSummaryChunk}

// codeOf returns kind's code, kindOther for a kind this version does not
// know. It runs for every update: a switch, not a search of kindNames.
func codeOf(kind UpdateKind) kindCode {
	switch kind {
	case KindUserMessageChunk:
		return 1
	case KindAgentMessageChunk:
		return 2
	case KindAgentThoughtChunk:
		return 3
	case KindToolCall:
		return 4
	case KindToolCallUpdate:
		return 5
	case KindPlan:
		return 6
	case KindAvailableCommandsUpdate:
		return 7
	case KindCurrentModeUpdate:
		return 8
	case KindConfigOptionUpdate:
		return 9
	case KindSessionInfoUpdate:
		return 10
	case KindUsageUpdate:
		return 11
	case KindNotice:
		return 12
	case KindCompactionUpdate:
		return 13
	case KindCompactionSummaryChunk:
		return 14
	}
	return kindOther
}

func newHeader(session string, kind UpdateKind, raw json.RawMessage) updateHeader {
	return updateHeader{session: session, raw: raw, kind: codeOf(kind)}
}

func (h *updateHeader) SessionID() string { return h.session }

func (h *updateHeader) Kind() UpdateKind { return kindNames[h.kind] }

func (h *updateHeader) Raw() json.RawMessage { return h.raw }

func (h *updateHeader) Replay() bool { return h.replay }

func (h *updateHeader) markReplay() { h.replay = true }

func init() {
	acpinternal.MarkReplay = func(u any) { u.(interface{ markReplay() }).markReplay() }
}

func (*updateHeader) isUpdate() {}

// MessageChunk is a piece of a message: agent_message_chunk (the answer),
// agent_thought_chunk (reasoning) or user_message_chunk (an echo or replay of
// the user's prompt). Kind tells them apart.
type MessageChunk struct {
	updateHeader
	Content ContentBlock
	// MessageID groups chunks of one message when the agent sends it.
	MessageID string
}

// ToolCallUpdate is a tool_call (Kind() == KindToolCall: the agent
// announces a call) or a tool_call_update (a patch: only the fields in Set
// were sent).
//
// Two fields hold a tool call, and they differ: ToolCall is the patch, the
// fields this one update carried (the others are zero, which does not mean
// they were cleared), while State is the whole call as it stands after it.
// To show a tool call, read State.
type ToolCallUpdate struct {
	updateHeader
	// ToolCall is the patch: only the fields this update carried (see Set);
	// the rest are zero. It is not the current state of the call.
	ToolCall ToolCall
	// Set says which fields the update carried; absent fields are unchanged.
	Set ToolCallFields
	// State is the merged call: this update and every earlier one for the
	// same id in the session (as delivered by a client; DecodeUpdate alone
	// sets it to the update itself).
	State ToolCall
}

// ToolCallFields is a bit set of the optional fields of a tool call.
type ToolCallFields uint16

// The optional fields of a tool call, as flags of [ToolCallFields].
const (
	FieldTitle ToolCallFields = 1 << iota
	FieldKind
	FieldStatus
	FieldContent
	FieldLocations
	FieldRawInput
	FieldRawOutput
	FieldName
	FieldMeta
)

// Has reports whether every field in f2 is set in f.
func (f ToolCallFields) Has(f2 ToolCallFields) bool { return f&f2 == f2 }

// ToolKind is the category of a tool call. The set is open: unknown kinds are
// kept as sent and treated as "other" by policies.
type ToolKind string

// The tool kinds of ACP v1.
const (
	ToolRead       ToolKind = "read"
	ToolEdit       ToolKind = "edit"
	ToolDelete     ToolKind = "delete"
	ToolMove       ToolKind = "move"
	ToolSearch     ToolKind = "search"
	ToolExecute    ToolKind = "execute"
	ToolThink      ToolKind = "think"
	ToolFetch      ToolKind = "fetch"
	ToolSwitchMode ToolKind = "switch_mode"
	ToolOther      ToolKind = "other"
)

// ReadOnlyKind reports whether a tool of this kind cannot change anything:
// read, search, fetch and think. Every other kind — edit, delete, move,
// execute, switch_mode, other and kinds this version does not know — may.
func ReadOnlyKind(k ToolKind) bool {
	switch k {
	case ToolRead, ToolSearch, ToolFetch, ToolThink:
		return true
	}
	return false
}

// ToolStatus is the state of a tool call.
type ToolStatus string

// The tool call states of ACP v1.
const (
	StatusPending    ToolStatus = "pending"
	StatusInProgress ToolStatus = "in_progress"
	StatusCompleted  ToolStatus = "completed"
	StatusFailed     ToolStatus = "failed"
)

// Finished reports whether the status is completed or failed.
func (s ToolStatus) Finished() bool { return s == StatusCompleted || s == StatusFailed }

// ToolCall is the state of one tool call the agent runs itself. Updates are
// merged into it by toolCallId; see [ToolCallUpdate].
type ToolCall struct {
	ID        string
	Title     string
	Kind      ToolKind
	Status    ToolStatus
	Content   []ToolCallContent
	Locations []ToolLocation
	RawInput  json.RawMessage
	RawOutput json.RawMessage
	// Name is the programmatic name of the tool invoked (tool_call and
	// tool_call_update name, stable since schema v1.22); "" when the
	// agent sends none. Title is for people; Name is for programs (a
	// policy's rule, a metric's label). It is the agent's string: show it
	// through SafeText.
	Name string
	// Meta is the tool call's _meta object, raw.
	Meta json.RawMessage
}

// ToolLocation is a file a tool call touches.
type ToolLocation struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
}

// ToolCallContent is one item of a tool call's content. Type is "content"
// (Content is set), "diff" (Diff is set), "terminal" (TerminalID is set) or
// an unknown type, whose JSON is kept in Raw.
type ToolCallContent struct {
	Type       string
	Content    *ContentBlock
	Diff       *FileDiff
	TerminalID string
	Raw        json.RawMessage
}

// PlanUpdate is the agent's plan; each one replaces the previous plan whole.
type PlanUpdate struct {
	updateHeader
	Entries []PlanEntry
}

// PlanEntry is one step of a plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// AvailableCommandsUpdate lists the slash commands the agent offers.
type AvailableCommandsUpdate struct {
	updateHeader
	Commands []AvailableCommand
}

// AvailableCommand is one slash command.
type AvailableCommand struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	InputHint   string `json:"-"`
}

// CurrentModeUpdate reports that the session's mode changed.
type CurrentModeUpdate struct {
	updateHeader
	ModeID string
}

// ConfigOptionUpdate carries the complete state of the session's config options.
type ConfigOptionUpdate struct {
	updateHeader
	Options []ConfigOption
}

// SessionInfoUpdate changes the session's metadata. A nil field is
// unchanged; a field set to the empty string with its Cleared flag was
// cleared by an explicit null.
type SessionInfoUpdate struct {
	updateHeader
	Title          *string
	UpdatedAt      *string
	TitleCleared   bool
	UpdatedCleared bool
}

// UsageUpdate reports context window use and cost.
type UsageUpdate struct {
	updateHeader
	Used uint64
	Size uint64
	// Cost is the cumulative cost, when the agent reports it.
	Cost *Cost
}

// Cost is an amount of money.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// UnknownUpdate is an update whose kind this version does not know, or whose
// body did not decode. Raw keeps the whole params; Err says why a known kind
// could not be decoded (nil for an unknown kind).
type UnknownUpdate struct {
	updateHeader
	Err error
	// name is the agent's sessionUpdate string.
	name UpdateKind
}

// Kind is the agent's sessionUpdate string.
func (u *UnknownUpdate) Kind() UpdateKind {
	if u.kind == kindOther {
		return u.name
	}
	return u.updateHeader.Kind()
}

// wireToolCall is the JSON form shared by tool_call, tool_call_update and the
// toolCall of a permission request. Raw fields let us tell absent from null.
type wireToolCall struct {
	ToolCallID string          `json:"toolCallId"`
	Title      *string         `json:"title"`
	Kind       *string         `json:"kind"`
	Status     *string         `json:"status"`
	Content    json.RawMessage `json:"content"`
	Locations  json.RawMessage `json:"locations"`
	RawInput   json.RawMessage `json:"rawInput"`
	RawOutput  json.RawMessage `json:"rawOutput"`
	Name       *string         `json:"name"`
	Meta       json.RawMessage `json:"_meta"`
}

// toolCall converts the wire form, reporting which fields were present.
// Bad content or location items are skipped, as the schema's
// skip-invalid-items annotation asks.
func (w *wireToolCall) toolCall() (ToolCall, ToolCallFields) {
	tc := ToolCall{ID: w.ToolCallID}
	var set ToolCallFields
	if w.Title != nil {
		tc.Title, set = *w.Title, set|FieldTitle
	}
	if w.Kind != nil {
		tc.Kind, set = ToolKind(*w.Kind), set|FieldKind
	}
	if w.Status != nil {
		tc.Status, set = ToolStatus(*w.Status), set|FieldStatus
	}
	if present(w.Content) {
		tc.Content, set = decodeToolContents(w.Content), set|FieldContent
	}
	if present(w.Locations) {
		_ = json.Unmarshal(w.Locations, &tc.Locations)
		set |= FieldLocations
	}
	if present(w.RawInput) {
		tc.RawInput, set = w.RawInput, set|FieldRawInput
	}
	if present(w.RawOutput) {
		tc.RawOutput, set = w.RawOutput, set|FieldRawOutput
	}
	if w.Name != nil {
		tc.Name, set = *w.Name, set|FieldName
	}
	if present(w.Meta) {
		tc.Meta, set = w.Meta, set|FieldMeta
	}
	return tc, set
}

// present reports whether a raw member was sent with a non-null value.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// merge applies the fields of u that are set onto tc.
// HasDiff reports whether the tool call's content holds a diff.
func (tc *ToolCall) HasDiff() bool {
	return slices.ContainsFunc(tc.Content, func(c ToolCallContent) bool { return c.Type == "diff" })
}

// Merge applies a tool_call_update to the state so far: u's id, and the
// fields set says the agent sent (a field it left out keeps its value; one
// it sent as null is cleared).
func (tc *ToolCall) Merge(u *ToolCall, set ToolCallFields) {
	if u.ID != "" {
		tc.ID = u.ID
	}
	if set.Has(FieldTitle) {
		tc.Title = u.Title
	}
	if set.Has(FieldKind) {
		tc.Kind = u.Kind
	}
	if set.Has(FieldStatus) {
		tc.Status = u.Status
	}
	if set.Has(FieldContent) {
		tc.Content = u.Content
	}
	if set.Has(FieldLocations) {
		tc.Locations = u.Locations
	}
	if set.Has(FieldRawInput) {
		tc.RawInput = u.RawInput
	}
	if set.Has(FieldRawOutput) {
		tc.RawOutput = u.RawOutput
	}
	if set.Has(FieldName) {
		tc.Name = u.Name
	}
	if set.Has(FieldMeta) {
		tc.Meta = u.Meta
	}
}

type wireToolContent struct {
	Type       string          `json:"type"`
	Content    *ContentBlock   `json:"content"`
	Path       string          `json:"path"`
	OldText    *string         `json:"oldText"`
	NewText    string          `json:"newText"`
	TerminalID string          `json:"terminalId"`
	Meta       json.RawMessage `json:"_meta"`
}

func decodeToolContents(raw json.RawMessage) []ToolCallContent {
	return decodeEach(raw, decodeToolContent)
}

func decodeToolContent(item json.RawMessage) (ToolCallContent, bool) {
	var w wireToolContent
	if json.Unmarshal(item, &w) != nil {
		return ToolCallContent{}, false
	}
	c := ToolCallContent{Type: w.Type}
	switch w.Type {
	case "content":
		if w.Content == nil {
			return c, false
		}
		c.Content = w.Content
	case "diff":
		c.Diff = &FileDiff{Path: w.Path, OldText: w.OldText, NewText: w.NewText}
	case "terminal":
		c.TerminalID = w.TerminalID
	default:
		c.Raw = item
	}
	return c, true
}

// decodeEach decodes a JSON array item by item, skipping the items decode
// rejects, as the schema's skip-invalid-items rule asks; nil if raw is not
// an array.
func decodeEach[T any](raw json.RawMessage, decode func(json.RawMessage) (T, bool)) []T {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	out := make([]T, 0, len(items))
	for _, item := range items {
		if v, ok := decode(item); ok {
			out = append(out, v)
		}
	}
	return out
}

// decodeToolCall decodes a tool call object (ToolCall or ToolCallUpdate shape).
func decodeToolCall(raw json.RawMessage) (ToolCall, ToolCallFields, error) {
	if tc, set, ok := decodeToolCallFast(raw); ok {
		return tc, set, nil
	}
	var w wireToolCall
	if err := json.Unmarshal(raw, &w); err != nil {
		return ToolCall{}, 0, err
	}
	tc, set := w.toolCall()
	return tc, set, nil
}

// wireUpdate is every field any session/update kind uses, so that one
// decoding pass serves the common kinds.
type wireUpdate struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		SessionUpdate UpdateKind      `json:"sessionUpdate"`
		Content       json.RawMessage `json:"content"`
		MessageID     string          `json:"messageId"`
		CompactionID  string          `json:"compactionId"`
		wireToolCall
		Entries           []PlanEntry     `json:"entries"`
		AvailableCommands json.RawMessage `json:"availableCommands"`
		CurrentModeID     string          `json:"currentModeId"`
		ConfigOptions     json.RawMessage `json:"configOptions"`
		Used              uint64          `json:"used"`
		Size              uint64          `json:"size"`
		Cost              *Cost           `json:"cost"`
	} `json:"update"`
}

// DecodeUpdate decodes the params of a session/update notification. It
// never fails: an unknown kind, or a known kind whose body does not decode,
// yields an *UnknownUpdate keeping the raw params.
func DecodeUpdate(params json.RawMessage) Update {
	return decodeUpdate(params, "", false)
}

// DecodeOwnedUpdate is DecodeUpdate for a caller that gives params up: the
// Update's strings may point into params, which must not change afterwards.
// sessionID, when the update names that session, is reused rather than
// copied (a host's read loop knows the sessions it opened).
func DecodeOwnedUpdate(params json.RawMessage, sessionID string) Update {
	return decodeUpdate(params, sessionID, true)
}

// decodeUpdate is DecodeUpdate with a session id to reuse (see
// decodeFast); shared says params is the client's own copy, which
// strings may point into (see decodeFast).
func decodeUpdate(params json.RawMessage, hint string, shared bool) Update {
	if u, ok := decodeFast(params, hint, shared); ok {
		return u
	}
	return decodeUpdateSlow(params)
}

// decodeUpdateSlow decodes any update with encoding/json.
func decodeUpdateSlow(params json.RawMessage) Update {
	var w wireUpdate
	if err := json.Unmarshal(params, &w); err != nil {
		return unknownUpdate(params, err)
	}
	h := newHeader(w.SessionID, w.Update.SessionUpdate, params)
	u := &w.Update
	switch u.SessionUpdate {
	case KindAgentMessageChunk, KindAgentThoughtChunk, KindUserMessageChunk:
		m := &MessageChunk{updateHeader: h, MessageID: u.MessageID}
		if err := m.Content.decode(u.Content); err != nil {
			return &UnknownUpdate{updateHeader: h, Err: err}
		}
		return m
	case KindToolCall, KindToolCallUpdate:
		// A tool call's content is an array; reuse the shared decoder.
		u.wireToolCall.Content = u.Content
		tc, set := u.wireToolCall.toolCall()
		return &ToolCallUpdate{updateHeader: h, ToolCall: tc, Set: set, State: tc}
	case KindPlan:
		return &PlanUpdate{updateHeader: h, Entries: u.Entries}
	case KindAvailableCommandsUpdate:
		return &AvailableCommandsUpdate{updateHeader: h, Commands: decodeCommands(u.AvailableCommands)}
	case KindCurrentModeUpdate:
		return &CurrentModeUpdate{updateHeader: h, ModeID: u.CurrentModeID}
	case KindConfigOptionUpdate:
		return &ConfigOptionUpdate{updateHeader: h, Options: DecodeConfigOptions(u.ConfigOptions)}
	case KindSessionInfoUpdate:
		return decodeSessionInfo(h)
	case KindUsageUpdate:
		return &UsageUpdate{updateHeader: h, Used: u.Used, Size: u.Size, Cost: u.Cost}
	case KindNotice:
		return decodeNotice(h)
	case KindCompactionUpdate:
		return decodeCompaction(h)
	case KindCompactionSummaryChunk:
		return decodeCompactionChunk(h, u.CompactionID, u.Content)
	}
	return &UnknownUpdate{updateHeader: h, name: u.SessionUpdate}
}

// unknownUpdate salvages the session id and kind of params that did not
// decode as a whole.
func unknownUpdate(params json.RawMessage, err error) *UnknownUpdate {
	var probe struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate UpdateKind `json:"sessionUpdate"`
		} `json:"update"`
	}
	_ = json.Unmarshal(params, &probe)
	h := newHeader(probe.SessionID, probe.Update.SessionUpdate, params)
	return &UnknownUpdate{updateHeader: h, Err: err, name: probe.Update.SessionUpdate}
}

func decodeCommands(raw json.RawMessage) []AvailableCommand {
	var items []struct {
		AvailableCommand
		Input *struct {
			Hint string `json:"hint"`
		} `json:"input"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	out := make([]AvailableCommand, len(items))
	for i, it := range items {
		out[i] = it.AvailableCommand
		if it.Input != nil {
			out[i].InputHint = it.Input.Hint
		}
	}
	return out
}

// decodeSessionInfo tells an omitted field (unchanged) from null (cleared).
func decodeSessionInfo(h updateHeader) *SessionInfoUpdate {
	s := &SessionInfoUpdate{updateHeader: h}
	var fields struct {
		Update struct {
			Title     json.RawMessage `json:"title"`
			UpdatedAt json.RawMessage `json:"updatedAt"`
		} `json:"update"`
	}
	_ = json.Unmarshal(h.raw, &fields)
	s.Title, s.TitleCleared = optionalString(fields.Update.Title)
	s.UpdatedAt, s.UpdatedCleared = optionalString(fields.Update.UpdatedAt)
	return s
}

func optionalString(raw json.RawMessage) (*string, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	if string(raw) == "null" {
		return nil, true
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	return &v, false
}

// ClaudeCode decodes the Claude adapter's _meta.claudeCode record of the
// tool call. ok is false when there is none. Fields of the wrong type are
// left empty.
func (tc ToolCall) ClaudeCode() (meta ClaudeCodeMeta, ok bool) {
	m, isObj := fastjson.ParseObject(tc.Meta)
	if !isObj {
		return ClaudeCodeMeta{}, false
	}
	raw := m.Get("claudeCode")
	cc, isObj := fastjson.ParseObject(raw)
	if !isObj {
		return ClaudeCodeMeta{}, false
	}
	meta.Raw = raw
	meta.ToolName, _ = fastjson.ParseString(cc.Get("toolName"))
	meta.ParentToolUseID, _ = fastjson.ParseString(cc.Get("parentToolUseId"))
	if srv, isObj := fastjson.ParseObject(cc.Get("mcpServer")); isObj {
		ref := &MCPServerRef{}
		ref.Name, _ = fastjson.ParseString(srv.Get("name"))
		ref.Source, _ = fastjson.ParseString(srv.Get("source"))
		meta.MCPServer = ref
	}
	return meta, true
}
