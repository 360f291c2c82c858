package acphost

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/acphost/acphost/internal/fastjson"
)

// This file decodes the parts of session/request_permission that are not in
// the ACP v1 schema: the request-level presentation record some adapters
// attach (a prompt title and description), the option-level structured
// changes of the Claude and Codex adapters, and the companion
// toolCall._meta.claudeCode record. Everything here is a hint for the user
// interface. Nothing in it says what an option does: the agent applies its
// own decision for the selected optionId, so answer with the exact ID and
// never derive an effect from Kind, Name or this metadata.

// PresentationSource says where a request's [Presentation] was read from.
type PresentationSource string

// The places a presentation is read from, in the order they are tried.
const (
	// PresentationNone: the request carries no presentation record.
	PresentationNone PresentationSource = ""
	// PresentationAIR: _meta.jetbrains.air.permission (Claude adapter ≥ 0.82,
	// Codex adapter ≥ 2.0, sent only to clients that declared JetBrains AIR).
	PresentationAIR PresentationSource = "_meta.jetbrains.air.permission"
	// PresentationMeta: the request's _meta.permission (Claude adapter
	// 0.71–0.81, Codex adapter 1.7–1.13).
	PresentationMeta PresentationSource = "_meta.permission"
	// PresentationV2: the first-class title and description of an ACP v2
	// request.
	PresentationV2 PresentationSource = "acp.v2"
	// PresentationUnknown: a record was found but could not be decoded (a
	// version other than 1, no title, a field of the wrong type). Its JSON
	// is in Presentation.Raw; nothing else is set.
	PresentationUnknown PresentationSource = "unknown"
)

// Presentation is the prompt text an agent attached to a permission request:
// a heading for the approval dialog and an optional explanation. It is a
// hint only. The subject of the request is always the tool call (its title,
// content and locations); render that too.
//
// The places are tried in the order _meta.jetbrains.air.permission,
// _meta.permission, ACP v2 title/description, and the first that decodes
// wins. A record is decoded only when its version is the number 1 and its
// title a string with printable text (a v2 title needs only the latter);
// unknown members are ignored, but a known member of the wrong type makes
// the record undecodable. When no place decodes, the first record found is
// kept in Raw with Source PresentationUnknown and no other field set: it is
// never half-decoded. A request-level _meta.permission holding changes and
// no title is option-level metadata sent at the wrong level and is ignored.
// Use [Presentation.Present] before reading Title, and
// [PermissionRequest.Heading] for a heading that falls back to the tool
// call's title.
//
// Title and Description are exactly as the agent sent them. The Claude
// adapter puts the raw shell command in Title for Bash and PowerShell calls
// (no length limit, may span lines, may contain control characters), and
// Codex does not clean its descriptions. Print them with
// [Presentation.SafeTitle] and [Presentation.SafeDescription], or [SafeText].
type Presentation struct {
	// Title is the dialog heading, e.g. "npm test", "Ready to code?",
	// "Run command?". It has printable text when Present reports true.
	Title string
	// Description is an explanation, e.g. "Reason: Needed to verify the
	// change." (Claude: the model's decision reason; Codex: its reason).
	Description string
	// HasDescription reports whether the record carried a description (it
	// may be the empty string).
	HasDescription bool
	// DefaultToNo asks the UI to make a reject option the default (focused)
	// answer. The agent has already put the reject options first.
	DefaultToNo bool
	// Source is where the presentation was found; PresentationNone when
	// nothing was, PresentationUnknown when a record was found but not
	// decoded.
	Source PresentationSource
	// Version is the record's version: 1 when decoded from a _meta record,
	// 0 for ACP v2 fields, and for an unknown record the integer it carried
	// (0 if none).
	Version int
	// Raw is the record as found (for PresentationV2, an object holding the
	// request's title and description members). Nil for PresentationNone.
	Raw json.RawMessage
}

// Present reports whether a presentation was decoded (Source is
// PresentationAIR, PresentationMeta or PresentationV2), so Title is set.
func (p Presentation) Present() bool {
	switch p.Source {
	case PresentationAIR, PresentationMeta, PresentationV2:
		return true
	}
	return false
}

// SafeTitle returns Title with control characters, terminal escape
// sequences and invalid UTF-8 removed; see [SafeText].
func (p Presentation) SafeTitle() string { return SafeText(p.Title) }

// SafeDescription returns Description with control characters, terminal
// escape sequences and invalid UTF-8 removed; see [SafeText].
func (p Presentation) SafeDescription() string { return SafeText(p.Description) }

// Heading returns the text to show as the approval dialog's heading: the
// decoded presentation title (fromPresentation is true), else the tool
// call's title, else the tool call's name, skipping those with no printable
// text. It is empty only when the agent sent none of them (Codex sends requests with no title at all); show a
// generic heading of your own then. The text is as the agent sent it: pass
// it through [SafeText] before printing it on a terminal.
func (r *PermissionRequest) Heading() (text string, fromPresentation bool) {
	if r == nil {
		return "", false
	}
	if r.Presentation.Present() {
		return r.Presentation.Title, true
	}
	if !pmBlank(r.ToolCall.Title) {
		return r.ToolCall.Title, false
	}
	if !pmBlank(r.ToolCall.Name) {
		return r.ToolCall.Name, false
	}
	return "", false
}

// OptionMeta is the decoded metadata of one permission option: a
// description (Codex MCP approvals) and the structured changes selecting the
// option would make (Codex adapter 1.1.8–1.6.2, Claude adapter
// 0.64.1–0.70.0). It is read from the option's _meta.jetbrains.air.permission
// and _meta.permission records, in that order; the description comes from
// the first record that has one, the changes from the first record that has
// them.
//
// It describes, it does not decide: the agent applies its own stored
// decision for the selected option id. Missing changes mean the effect is
// unknown, not that it is unrestricted.
type OptionMeta struct {
	// Version is 1 when a version 1 record was decoded, else 0 (an
	// unknown record's version is in Raw).
	Version int
	// Description is a one-option explanation, as sent.
	Description string
	// HasDescription reports whether a decoded record carried a description.
	HasDescription bool
	// Changes are the option's changes, in the agent's order. Items that
	// could not be decoded are kept (see [PermissionChange.Known]).
	Changes []PermissionChange
	// Raw is the option's whole _meta object as received (other agents'
	// records, such as _meta.codex, are only here). Nil when the option had
	// no _meta.
	Raw json.RawMessage
	// Unknown reports that a permission record was there but was not
	// decoded (its version was not 1, or it was malformed); its JSON is in
	// Raw. Another, version 1 record may still have been decoded.
	Unknown bool
}

// Present reports whether a version 1 option record was decoded.
func (m OptionMeta) Present() bool { return m.Version == 1 }

// ChangeType is the kind of a [PermissionChange]. The set is open: unknown
// types are kept as sent.
type ChangeType string

// The change types known to this version.
const (
	// ChangePolicyRule adds, removes or replaces a rule (Operation "add",
	// "remove", "replace"; RuleBehavior "allow", "deny" or "ask").
	ChangePolicyRule ChangeType = "policy_rule"
	// ChangeGrant grants access for a Lifetime (Operation "grant").
	ChangeGrant ChangeType = "grant"
	// ChangePermissionMode sets the agent's permission mode (Operation
	// "set", Provider, Mode); it has no targets.
	ChangePermissionMode ChangeType = "permission_mode"
)

// TargetType is the kind of a [ChangeTarget]. The set is open.
type TargetType string

// The target types known to this version.
const (
	TargetCommand    TargetType = "command"    // shell commands; matcher argv_prefix
	TargetNetwork    TargetType = "network"    // network access; matcher host or any
	TargetFilesystem TargetType = "filesystem" // files; Access, matcher directory, exact_path, glob or special
	TargetTool       TargetType = "tool"       // an agent tool (ToolName); matcher provider_rule or none
)

// MatcherType is the kind of a [ChangeMatcher]. The set is open.
type MatcherType string

// The matcher types known to this version.
const (
	MatcherArgvPrefix   MatcherType = "argv_prefix"   // Argv: commands starting with these words
	MatcherHost         MatcherType = "host"          // Host, optional Protocol
	MatcherAny          MatcherType = "any"           // everything of the target's kind
	MatcherDirectory    MatcherType = "directory"     // Path and everything under it
	MatcherExactPath    MatcherType = "exact_path"    // Path itself
	MatcherGlob         MatcherType = "glob"          // Pattern
	MatcherSpecial      MatcherType = "special"       // Provider and a provider-defined Value, e.g. {"kind":"tmpdir"}
	MatcherProviderRule MatcherType = "provider_rule" // Provider and a rule string in Value, e.g. "npm test:*"
)

// PermissionChange is one change an option would make, from the
// option-level {version: 1, changes: [...]} record. Every field is as sent;
// enums are open and a change whose parts are not all recognised is kept
// with its Raw JSON and Description (so is an item that is not even an
// object). A member of the wrong JSON type is left empty and makes
// [PermissionChange.Known] report false. Show [PermissionChange.Describe];
// the same holds for [ChangeTarget] and [ChangeMatcher].
type PermissionChange struct {
	Type ChangeType
	// Operation is "add", "remove" or "replace" (policy_rule), "grant"
	// (grant) or "set" (permission_mode); open.
	Operation string
	// RuleBehavior is "allow", "deny" or "ask" (policy_rule only); open.
	RuleBehavior string
	// Description is the agent's own sentence for the change, e.g. "Allow
	// commands starting with npm install". It is agent text: print it with
	// SafeText.
	Description string
	// Provider names the agent-specific vocabulary of Mode ("claudeCode").
	Provider string
	// Mode is the permission mode a permission_mode change sets, e.g.
	// "acceptEdits".
	Mode string
	// Lifetime says how long the change lasts; nil when the agent did not
	// say (Codex policy amendments).
	Lifetime *ChangeLifetime
	// Targets are what the change applies to.
	Targets []ChangeTarget
	// Raw is the change object as received.
	Raw json.RawMessage

	malformed bool // a known member had the wrong JSON type
}

// ChangeLifetime is how long a change lasts. Scope is "turn", "session",
// "process", "persistent" or "unknown" (open); Storage, for persistent and
// process scopes, is "user", "project", "project_local" or "cli_argument"
// (open).
type ChangeLifetime struct {
	Scope   string
	Storage string
	Raw     json.RawMessage
}

// ChangeTarget is one thing a change applies to.
type ChangeTarget struct {
	Type TargetType
	// Access is the filesystem access granted ("read", "write"); empty means
	// the agent did not restrict it (deny rules, directory rules).
	Access []string
	// ToolName is the agent tool of a tool target, e.g. "Bash".
	ToolName string
	// Matcher selects within the target; nil for a whole tool.
	Matcher *ChangeMatcher
	// Raw is the target object as received.
	Raw json.RawMessage

	malformed bool
}

// ChangeMatcher selects commands, hosts, paths or rules within a target.
// The fields set depend on Type.
type ChangeMatcher struct {
	Type MatcherType
	// Argv is the command prefix of an argv_prefix matcher, one word each.
	Argv []string
	// Host and Protocol ("http", "https", "socks5Tcp", "socks5Udp"; may be
	// empty) of a host matcher.
	Host     string
	Protocol string
	// Path of a directory or exact_path matcher.
	Path string
	// Pattern of a glob matcher.
	Pattern string
	// Provider of a special or provider_rule matcher ("codex", "claudeCode").
	Provider string
	// Value is the provider-defined value of a special matcher (an object
	// such as {"kind":"tmpdir"}) or provider_rule matcher (a rule string
	// such as "npm test:*"), raw.
	Value json.RawMessage
	// Raw is the matcher object as received.
	Raw json.RawMessage

	malformed bool
}

// ClaudeCodeMeta is the Claude adapter's toolCall._meta.claudeCode record.
type ClaudeCodeMeta struct {
	// ToolName is Claude Code's tool name, e.g. "Bash" or "mcp__docs__search".
	ToolName string
	// ParentToolUseID is the Agent/Task tool call that spawned this call when
	// it runs inside a subagent; empty otherwise.
	ParentToolUseID string
	// MCPServer names the MCP server of an MCP tool; nil otherwise.
	MCPServer *MCPServerRef
	// Raw is the claudeCode object as received.
	Raw json.RawMessage
}

// MCPServerRef names an MCP server. Source is where it was configured, e.g.
// "project", or "sdk" for a server the host registered.
type MCPServerRef struct {
	Name   string
	Source string
}

// ClaudeCode decodes the Claude adapter's _meta.claudeCode record of the
// tool call. ok is false when there is none. Fields of the wrong type are
// left empty.
func (tc ToolCall) ClaudeCode() (meta ClaudeCodeMeta, ok bool) {
	m, isObj := pmObject(tc.Meta)
	if !isObj {
		return ClaudeCodeMeta{}, false
	}
	raw := m.get("claudeCode")
	cc, isObj := pmObject(raw)
	if !isObj {
		return ClaudeCodeMeta{}, false
	}
	meta.Raw = raw
	meta.ToolName, _ = pmString(cc.get("toolName"))
	meta.ParentToolUseID, _ = pmString(cc.get("parentToolUseId"))
	if srv, isObj := pmObject(cc.get("mcpServer")); isObj {
		ref := &MCPServerRef{}
		ref.Name, _ = pmString(srv.get("name"))
		ref.Source, _ = pmString(srv.get("source"))
		meta.MCPServer = ref
	}
	return meta, true
}

// Known option ids of the Claude adapter (claude-agent-acp 0.71.0 and
// later, sent to every client). They are for convenience only, for example
// to pick an icon: the library never derives behaviour from an option id,
// and a UI must answer with the id the agent sent, whatever it is.
const (
	ClaudeAllowOnce                = "allow-once"                   // allow_once "Yes"
	ClaudeAllowWithUpdates         = "allow-with-updates"           // allow_always; applies the durable effect named in the label
	ClaudeAllowSkillExact          = "allow-skill-exact"            // allow_always; always allow this Skill
	ClaudeAllowSkillPrefix         = "allow-skill-prefix"           // allow_always; always allow "<first-word>:*" Skills
	ClaudeExitPlanDefault          = "exit-plan-default"            // ExitPlanMode: leave plan mode, approve edits manually
	ClaudeExitPlanAuto             = "exit-plan-auto"               // ExitPlanMode: leave plan mode into auto mode
	ClaudeExitPlanBypass           = "exit-plan-bypass"             // ExitPlanMode: leave plan mode, bypass permissions
	ClaudeExitPlanAcceptEdits      = "exit-plan-accept-edits"       // ExitPlanMode: leave plan mode, accept edits
	ClaudeExitPlanClearAuto        = "exit-plan-clear-auto"         // ExitPlanMode: clear context, then auto mode
	ClaudeExitPlanClearBypass      = "exit-plan-clear-bypass"       // ExitPlanMode: clear context, then bypass permissions
	ClaudeExitPlanClearAcceptEdits = "exit-plan-clear-accept-edits" // ExitPlanMode: clear context, then accept edits
	ClaudeReject                   = "reject"                       // reject_once "No" (a user denial, not a cancellation)
)

// Known option ids of the Codex adapter's command, file-change and
// network approvals (codex-acp; which ones appear depends on the adapter
// version and on the decisions Codex offers). Convenience only: the library
// never derives behaviour from them; answer with the id the agent sent.
const (
	CodexAllowOnce                         = "allow_once"                      // accept this once
	CodexAllowAlways                       = "allow_always"                    // ≤ 1.6: accept for the session; MCP approvals: accept and always persist
	CodexRejectOnce                        = "reject_once"                     // ≤ 1.6: decline
	CodexAllowForSession                   = "allow_for_session"               // ≥ 1.7: accept for the session
	CodexDecline                           = "decline"                         // ≥ 1.7: decline, the turn continues
	CodexCancel                            = "cancel"                          // ≥ 1.7: decline and interrupt the turn
	CodexAcceptExecpolicyAmendment         = "accept_execpolicy_amendment"     // accept and allow the proposed command prefix
	CodexApplyNetworkPolicyAmendmentPrefix = "apply_network_policy_amendment:" // followed by the amendment's index
)

// Known option ids of the Codex adapter's permission-profile and MCP
// approvals. Convenience only, as above.
const (
	CodexAllowPermissionsTurn                 = "allow_permissions_turn"                    // grant for this turn
	CodexAllowPermissionsTurnStrictAutoReview = "allow_permissions_turn_strict_auto_review" // grant for this turn, strict auto review
	CodexAllowPermissionsSession              = "allow_permissions_session"                 // grant for the session
	CodexRejectPermissions                    = "reject_permissions"                        // grant nothing
	CodexAllowSession                         = "allow_session"                             // MCP approvals: accept and persist for the session
)

// ParsePermissionRequest decodes the params of a session/request_permission
// request. It is pure and tolerant: the session id, tool call (v1 toolCall
// or the ACP v2 subject {type: "tool_call", toolCall}), options in the
// agent's order, the request's presentation and each option's metadata are
// decoded where they can be, and every Raw field keeps the JSON as received.
// Metadata that cannot be decoded never makes it fail.
//
// The only error, wrapping [ErrProtocol], is for params that are not a JSON
// object with an "options" array. Every element of that array yields one
// option, even one that is not an object (its ID is then empty; it cannot
// be selected). An empty options array is accepted; such a request can
// only be answered as cancelled.
//
// The members read here (sessionId, options, optionId, _meta …) are matched
// by exact name, as the agent's own JSON parser does; encoding/json alone
// would also take "OptionID" for "optionId". For duplicate members the last
// one wins, as in JavaScript. Option ids are JSON-unescaped and otherwise
// kept byte for byte, spaces and case included (only invalid UTF-8 and
// unpaired surrogate escapes become U+FFFD, as everywhere in encoding/json).
func ParsePermissionRequest(params json.RawMessage) (*PermissionRequest, error) {
	raw := bytes.Clone(params)
	top, ok := pmObject(raw)
	if !ok {
		return nil, &ProtocolError{Msg: "session/request_permission: params are not a JSON object"}
	}
	optRaw, ok := pmArray(top.get("options"))
	if !ok {
		return nil, &ProtocolError{Msg: "session/request_permission: params have no options array"}
	}
	req := &PermissionRequest{Raw: raw}
	req.SessionID, _ = pmString(top.get("sessionId"))
	req.ToolCall, req.toolSet = pmRequestToolCall(top)
	req.Options = make([]PermissionOption, 0, len(optRaw))
	for _, o := range optRaw {
		req.Options = append(req.Options, pmDecodeOption(o))
	}
	req.Presentation = pmDecodeRequestPresentation(top)
	return req, nil
}

// pmRequestToolCall decodes the request's toolCall, or the ACP v2 subject.
func pmRequestToolCall(top pmObj) (ToolCall, ToolCallFields) {
	if raw := top.get("toolCall"); pmFirst(raw) == '{' {
		if tc, set, err := decodeToolCall(raw); err == nil {
			return tc, set
		}
	}
	subj, ok := pmObject(top.get("subject"))
	if !ok {
		return ToolCall{}, 0
	}
	switch typ, _ := pmString(subj.get("type")); typ {
	case "tool_call":
		if raw := subj.get("toolCall"); pmFirst(raw) == '{' {
			if tc, set, err := decodeToolCall(raw); err == nil {
				return tc, set
			}
		}
	case "command":
		// A v2 command subject is not a tool call; keep only the id that
		// links it to one, if any. The command itself stays in Raw.
		id, _ := pmString(subj.get("toolCallId"))
		return ToolCall{ID: id}, 0
	}
	return ToolCall{}, 0
}

func pmDecodeOption(raw json.RawMessage) PermissionOption {
	opt := PermissionOption{Raw: raw}
	m, ok := pmObject(raw)
	if !ok {
		return opt
	}
	opt.ID, _ = pmString(m.get("optionId"))
	opt.Name, _ = pmString(m.get("name"))
	kind, _ := pmString(m.get("kind"))
	opt.Kind = PermissionKind(kind)
	opt.Meta = pmDecodeOptionMeta(m.get("_meta"))
	return opt
}

// pmPermissionRecords returns the _meta.jetbrains.air.permission and
// _meta.permission members of a _meta object (nil when absent).
func pmPermissionRecords(meta pmObj) (air, plain json.RawMessage) {
	if jb, ok := pmObject(meta.get("jetbrains")); ok {
		if a, ok := pmObject(jb.get("air")); ok {
			air = a.get("permission")
		}
	}
	return air, meta.get("permission")
}

func pmDecodeRequestPresentation(top pmObj) Presentation {
	var unknown *Presentation
	try := func(p Presentation, decoded bool) (Presentation, bool) {
		if decoded {
			return p, true
		}
		if unknown == nil && p.Source == PresentationUnknown {
			unknown = &p
		}
		return Presentation{}, false
	}
	if meta, ok := pmObject(top.get("_meta")); ok {
		air, plain := pmPermissionRecords(meta)
		if p, ok := try(pmDecodePresentationRecord(air, PresentationAIR)); ok {
			return p
		}
		if p, ok := try(pmDecodePresentationRecord(plain, PresentationMeta)); ok {
			return p
		}
	}
	if p, ok := try(pmDecodeV2Presentation(top)); ok {
		return p
	}
	if unknown != nil {
		return *unknown
	}
	return Presentation{}
}

// pmDecodePresentationRecord decodes a {version, title, description?,
// defaultToNo?} record. It returns a PresentationUnknown value and false for
// a record it cannot decode, and a zero value and false when there is no
// record (absent, null, or option-level changes with no title).
func pmDecodePresentationRecord(raw json.RawMessage, src PresentationSource) (Presentation, bool) {
	if pmNull(raw) {
		return Presentation{}, false
	}
	unknown := Presentation{Source: PresentationUnknown, Raw: raw}
	m, ok := pmObject(raw)
	if !ok {
		return unknown, false
	}
	if pmNull(m.get("title")) && !pmNull(m.get("changes")) {
		// Option-level structured changes sent at request level: not a
		// presentation.
		return Presentation{}, false
	}
	v, one := pmVersion(m.get("version"))
	unknown.Version = v
	if !one {
		return unknown, false
	}
	title, ok := pmString(m.get("title"))
	if !ok || pmBlank(title) {
		return unknown, false
	}
	p := Presentation{Title: title, Source: src, Version: 1, Raw: raw}
	if d := m.get("description"); !pmNull(d) {
		if p.Description, ok = pmString(d); !ok {
			return unknown, false
		}
		p.HasDescription = true
	}
	if d := m.get("defaultToNo"); !pmNull(d) {
		if p.DefaultToNo, ok = pmBool(d); !ok {
			return unknown, false
		}
	}
	return p, true
}

// pmDecodeV2Presentation decodes an ACP v2 request's top-level title and
// description.
func pmDecodeV2Presentation(top pmObj) (Presentation, bool) {
	t, d := top.get("title"), top.get("description")
	if pmNull(t) {
		return Presentation{}, false
	}
	var b bytes.Buffer
	b.WriteString(`{"title":`)
	b.Write(t)
	if !pmNull(d) {
		b.WriteString(`,"description":`)
		b.Write(d)
	}
	b.WriteByte('}')
	unknown := Presentation{Source: PresentationUnknown, Raw: b.Bytes()}
	title, ok := pmString(t)
	if !ok || pmBlank(title) {
		return unknown, false
	}
	p := Presentation{Title: title, Source: PresentationV2, Raw: unknown.Raw}
	if !pmNull(d) {
		if p.Description, ok = pmString(d); !ok {
			return unknown, false
		}
		p.HasDescription = true
	}
	return p, true
}

func pmDecodeOptionMeta(raw json.RawMessage) OptionMeta {
	var om OptionMeta
	if pmNull(raw) {
		return om
	}
	om.Raw = raw
	meta, ok := pmObject(raw)
	if !ok {
		return om
	}
	air, plain := pmPermissionRecords(meta)
	haveChanges := false
	for _, rec := range []json.RawMessage{air, plain} {
		if pmNull(rec) {
			continue
		}
		m, ok := pmObject(rec)
		_, one := pmVersion(m.get("version"))
		desc, descOK := pmString(m.get("description"))
		changes, changesOK := pmArray(m.get("changes"))
		if !ok || !one || (!descOK && !pmNull(m.get("description"))) || (!changesOK && !pmNull(m.get("changes"))) {
			om.Unknown = true
			continue
		}
		om.Version = 1
		if descOK && !om.HasDescription {
			om.Description, om.HasDescription = desc, true
		}
		if changesOK && !haveChanges {
			haveChanges = true
			om.Changes = make([]PermissionChange, 0, len(changes))
			for _, c := range changes {
				om.Changes = append(om.Changes, pmDecodeChange(c))
			}
		}
	}
	return om
}

// pmFields reads the members of a decoded object, noting members of the
// wrong JSON type.
type pmFields struct {
	m   pmObj
	bad bool
}

func (f *pmFields) str(key string) string {
	v := f.m.get(key)
	if pmNull(v) {
		return ""
	}
	s, ok := pmString(v)
	if !ok {
		f.bad = true
	}
	return s
}

func (f *pmFields) strs(key string) []string {
	v := f.m.get(key)
	if pmNull(v) {
		return nil
	}
	arr, ok := pmArray(v)
	if !ok {
		f.bad = true
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := pmString(e)
		if !ok {
			f.bad = true
			continue
		}
		out = append(out, s)
	}
	return out
}

func pmDecodeChange(raw json.RawMessage) PermissionChange {
	c := PermissionChange{Raw: raw}
	m, ok := pmObject(raw)
	if !ok {
		c.malformed = true
		return c
	}
	f := pmFields{m: m}
	c.Type = ChangeType(f.str("type"))
	c.Operation = f.str("operation")
	c.RuleBehavior = f.str("ruleBehavior")
	c.Description = f.str("description")
	c.Provider = f.str("provider")
	c.Mode = f.str("mode")
	if v := m.get("lifetime"); !pmNull(v) {
		lt := &ChangeLifetime{Raw: v}
		if lm, ok := pmObject(v); ok {
			lf := pmFields{m: lm}
			lt.Scope = lf.str("scope")
			lt.Storage = lf.str("storage")
			f.bad = f.bad || lf.bad
		} else {
			f.bad = true
		}
		c.Lifetime = lt
	}
	if v := m.get("targets"); !pmNull(v) {
		if arr, ok := pmArray(v); ok {
			c.Targets = make([]ChangeTarget, 0, len(arr))
			for _, t := range arr {
				c.Targets = append(c.Targets, pmDecodeTarget(t))
			}
		} else {
			f.bad = true
		}
	}
	c.malformed = f.bad
	return c
}

func pmDecodeTarget(raw json.RawMessage) ChangeTarget {
	t := ChangeTarget{Raw: raw}
	m, ok := pmObject(raw)
	if !ok {
		t.malformed = true
		return t
	}
	f := pmFields{m: m}
	t.Type = TargetType(f.str("type"))
	t.Access = f.strs("access")
	t.ToolName = f.str("toolName")
	if v := m.get("matcher"); !pmNull(v) {
		mt := pmDecodeMatcher(v)
		t.Matcher = &mt
	}
	t.malformed = f.bad
	return t
}

func pmDecodeMatcher(raw json.RawMessage) ChangeMatcher {
	mt := ChangeMatcher{Raw: raw}
	m, ok := pmObject(raw)
	if !ok {
		mt.malformed = true
		return mt
	}
	f := pmFields{m: m}
	mt.Type = MatcherType(f.str("type"))
	mt.Argv = f.strs("argv")
	mt.Host = f.str("host")
	mt.Protocol = f.str("protocol")
	mt.Path = f.str("path")
	mt.Pattern = f.str("pattern")
	mt.Provider = f.str("provider")
	if v := m.get("value"); !pmNull(v) {
		mt.Value = v
	}
	mt.malformed = f.bad
	return mt
}

// Describe returns a one-line description of the change for an approval
// UI, e.g. "Allow commands starting with `npm test` for this session". When
// every part of the change is recognised ([PermissionChange.Known]) the text
// is built from the structured fields; otherwise it is the agent's own
// Description, or a note that the change is not recognised. Agent-supplied
// values are passed through [SafeText] and quoted in backticks, so the
// result is safe to print on a terminal.
func (c PermissionChange) Describe() string {
	if s, ok := c.describe(); ok {
		return s
	}
	if d := pmOneLine(c.Description); d != "" {
		return d
	}
	if c.Type != "" {
		return "Unrecognised permission change " + pmCode(string(c.Type))
	}
	return "Unrecognised permission change"
}

// Known reports whether every part of the change (type, operation,
// behaviour, lifetime, targets and matchers) is recognised by this version,
// so that Describe is built from the structure rather than from the agent's
// Description. A UI may flag unknown changes.
func (c PermissionChange) Known() bool {
	_, ok := c.describe()
	return ok
}

func (c PermissionChange) describe() (string, bool) {
	if c.malformed {
		return "", false
	}
	life, ok := c.Lifetime.describe()
	if !ok {
		return "", false
	}
	switch c.Type {
	case ChangePermissionMode:
		if c.Operation != "set" || c.Mode == "" || len(c.Targets) > 0 {
			return "", false
		}
		var who string
		switch c.Provider {
		case "":
			who = "permission mode"
		case "claudeCode":
			who = "Claude Code permission mode"
		default:
			who = pmCode(c.Provider) + " permission mode"
		}
		return "Set " + who + " to " + pmCode(c.Mode) + life, true
	case ChangeGrant, ChangePolicyRule:
	default:
		return "", false
	}
	targets, ok := pmDescribeTargets(c.Targets)
	if !ok {
		return "", false
	}
	if c.Type == ChangeGrant {
		if c.Operation != "grant" || (c.RuleBehavior != "" && c.RuleBehavior != "allow") {
			return "", false
		}
		return "Allow " + targets + life, true
	}
	var verb string
	switch c.RuleBehavior {
	case "allow":
		verb = "allow"
	case "deny":
		verb = "deny"
	case "ask":
		verb = "ask before"
	default:
		return "", false
	}
	switch c.Operation {
	case "add":
		return strings.ToUpper(verb[:1]) + verb[1:] + " " + targets + life, true
	case "remove":
		return "Remove " + c.RuleBehavior + " rules for " + targets + life, true
	case "replace":
		return "Replace " + c.RuleBehavior + " rules with " + targets + life, true
	}
	return "", false
}

func pmDescribeTargets(ts []ChangeTarget) (string, bool) {
	if len(ts) == 0 {
		return "", false
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		s, ok := t.describe()
		if !ok {
			return "", false
		}
		parts[i] = s
	}
	if len(parts) == 1 {
		return parts[0], true
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1], true
}

// describe returns the lifetime's suffix (" for this session"), empty for
// a nil lifetime.
func (l *ChangeLifetime) describe() (string, bool) {
	if l == nil {
		return "", true
	}
	switch l.Scope {
	case "turn", "session":
		if l.Storage == "" {
			return " for this " + l.Scope, true
		}
	case "process":
		switch l.Storage {
		case "", "cli_argument":
			return " until the agent exits", true
		}
	case "persistent":
		switch l.Storage {
		case "":
			return " permanently", true
		case "user":
			return " permanently, in user settings", true
		case "project":
			return " permanently, in project settings", true
		case "project_local":
			return " permanently, in local project settings", true
		}
	case "unknown":
		if l.Storage == "" {
			return " (lifetime unknown)", true
		}
	}
	return "", false
}

// Describe returns a noun phrase for the target, e.g. "commands starting
// with `npm install`" or "write access under `/tmp/out`", safe to print on a
// terminal. An unrecognised target is described as such.
func (t ChangeTarget) Describe() string {
	if s, ok := t.describe(); ok {
		return s
	}
	if t.Type != "" {
		return "unrecognised " + pmCode(string(t.Type)) + " target"
	}
	return "unrecognised target"
}

// Known reports whether the target, its access list and its matcher are
// all recognised.
func (t ChangeTarget) Known() bool {
	_, ok := t.describe()
	return ok
}

func (t ChangeTarget) describe() (string, bool) {
	if t.malformed || (t.Matcher != nil && !t.Matcher.Known()) {
		return "", false
	}
	if len(t.Access) > 0 && t.Type != TargetFilesystem {
		return "", false
	}
	mt := MatcherType("")
	if t.Matcher != nil {
		mt = t.Matcher.Type
	}
	switch t.Type {
	case TargetCommand:
		switch mt {
		case MatcherArgvPrefix:
			return "commands starting with " + pmCode(pmArgv(t.Matcher.Argv)), true
		case MatcherAny:
			return "all commands", true
		}
	case TargetNetwork:
		switch mt {
		case MatcherHost:
			return "network access to " + pmCode(t.Matcher.Host) + pmProtocol(t.Matcher.Protocol), true
		case MatcherAny:
			return "network access", true
		}
	case TargetFilesystem:
		access, ok := pmAccess(t.Access)
		if !ok {
			return "", false
		}
		switch mt {
		case MatcherDirectory:
			return access + " under " + pmCode(t.Matcher.Path), true
		case MatcherExactPath:
			return access + " to " + pmCode(t.Matcher.Path), true
		case MatcherGlob:
			return access + " to paths matching " + pmCode(t.Matcher.Pattern), true
		case MatcherSpecial:
			return access + " to " + t.Matcher.Describe(), true
		case MatcherAny:
			return access + " to all files", true
		}
	case TargetTool:
		if t.ToolName == "" {
			return "", false
		}
		switch mt {
		case "":
			return "all " + pmCode(t.ToolName) + " calls", true
		case MatcherProviderRule:
			return pmCode(t.ToolName) + " calls matching " + t.Matcher.ruleText(), true
		}
	}
	return "", false
}

// pmProtocol describes a host matcher's protocol (" over HTTPS").
func pmProtocol(p string) string {
	switch p {
	case "":
		return ""
	case "http":
		return " over HTTP"
	case "https":
		return " over HTTPS"
	case "socks5Tcp":
		return " over SOCKS5 (TCP)"
	case "socks5Udp":
		return " over SOCKS5 (UDP)"
	}
	return " over " + pmCode(p)
}

// pmAccess describes a filesystem access list.
func pmAccess(access []string) (string, bool) {
	var read, write bool
	for _, a := range access {
		switch a {
		case "read":
			read = true
		case "write":
			write = true
		default:
			return "", false
		}
	}
	switch {
	case read && write:
		return "read and write access", true
	case read:
		return "read access", true
	case write:
		return "write access", true
	}
	return "filesystem access", true
}

// Describe returns a noun phrase for the matcher on its own, e.g. "argv
// prefix `npm install`" or "host `example.com`", safe to print on a
// terminal.
func (m ChangeMatcher) Describe() string {
	if s, ok := m.describe(); ok {
		return s
	}
	if m.Type != "" {
		return "unrecognised " + pmCode(string(m.Type)) + " matcher"
	}
	return "unrecognised matcher"
}

// Known reports whether the matcher's type is recognised and it carries the
// fields that type needs.
func (m ChangeMatcher) Known() bool {
	_, ok := m.describe()
	return ok
}

func (m ChangeMatcher) describe() (string, bool) {
	if m.malformed {
		return "", false
	}
	switch m.Type {
	case MatcherArgvPrefix:
		if len(m.Argv) > 0 {
			return "argv prefix " + pmCode(pmArgv(m.Argv)), true
		}
	case MatcherHost:
		if m.Host != "" {
			return "host " + pmCode(m.Host) + pmProtocol(m.Protocol), true
		}
	case MatcherAny:
		return "anything", true
	case MatcherDirectory:
		if m.Path != "" {
			return "directory " + pmCode(m.Path), true
		}
	case MatcherExactPath:
		if m.Path != "" {
			return "path " + pmCode(m.Path), true
		}
	case MatcherGlob:
		if m.Pattern != "" {
			return "glob " + pmCode(m.Pattern), true
		}
	case MatcherSpecial:
		if present(m.Value) {
			return "special path " + pmCode(pmSpecialValue(m.Value)), true
		}
	case MatcherProviderRule:
		if s, ok := pmString(m.Value); ok && s != "" {
			return "rule " + m.ruleText(), true
		}
	}
	return "", false
}

func (m ChangeMatcher) ruleText() string {
	s, _ := pmString(m.Value)
	return pmCode(s)
}

// pmSpecialValue renders a special-path value: its kind when it is
// {"kind": "..."}, the string when it is one, else compact JSON.
func pmSpecialValue(v json.RawMessage) string {
	if s, ok := pmString(v); ok {
		return s
	}
	if obj, ok := pmObject(v); ok && obj.only("kind") {
		if k, ok := pmString(obj.get("kind")); ok {
			return k
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// pmArgv joins argv words with spaces, single-quoting words that are empty
// or contain spaces or quotes.
func pmArgv(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}

// pmCode quotes an agent-supplied value for a one-line description:
// sanitised, newlines and tabs shown as \n and \t, in backticks.
func pmCode(s string) string {
	s = SafeText(s)
	s = strings.ReplaceAll(s, "\n", `\n`)
	s = strings.ReplaceAll(s, "\t", `\t`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// pmBlank reports whether s has nothing to show once sanitised.
func pmBlank(s string) bool { return strings.TrimSpace(SafeText(s)) == "" }

// pmOneLine sanitises agent text and collapses its whitespace to single
// spaces.
func pmOneLine(s string) string {
	return strings.Join(strings.Fields(SafeText(s)), " ")
}

// SafeText returns s made safe to print on a terminal: it removes C0
// control characters other than newline and tab (so also CR and BEL), DEL,
// C1 control characters (U+0080–U+009F, and the raw 8-bit bytes 0x80–0x9F),
// terminal escape sequences whole (CSI "ESC [ … final", OSC "ESC ] … BEL or
// ESC \" such as OSC 8 hyperlinks, DCS, SOS, PM and APC strings, other ESC
// sequences, and their 8-bit C1 forms), and invalid UTF-8. It also removes
// what a reader cannot see but a model or a terminal acts on: the Unicode
// bidirectional controls (overrides and isolates U+202A–U+202E,
// U+2066–U+2069, and the marks LRM, RLM and ALM, which can make text read
// differently from what it is), invisible characters (zero-width space,
// joiners and non-joiner, word joiner and invisible operators, BOM, soft
// hyphen, the combining grapheme joiner, Hangul fillers, the Mongolian vowel
// separator, deprecated format controls and interlinear annotation
// marks), the tag characters U+E0000–U+E007F (hidden ASCII), and variation
// selectors other than a single one right after a character (a run of
// them hides bytes). Line and paragraph separators (U+2028, U+2029) become
// newlines, so a line break is never invisible. Other text, including all
// printable Unicode, is kept (emoji built with joiners fall apart into
// their parts). A string sequence (OSC …) that is never terminated is
// removed to the end of s, as a terminal would swallow it. When there is
// nothing to remove, s itself is returned.
func SafeText(s string) string {
	if pmSafe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	afterChar := false // the last rune kept may take a variation selector
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			afterChar = c >= 0x20 && c != 0x7f
			switch {
			case c == '\n' || c == '\t':
				b.WriteByte(c)
				i++
			case c == 0x1b:
				i = pmSkipEscape(s, i+1)
			case c < 0x20 || c == 0x7f:
				i++
			default:
				b.WriteByte(c)
				i++
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if c <= 0x9f { // raw 8-bit C1 control
				i = pmSkipC1(s, i+1, c)
			} else {
				i++
			}
		case r <= 0x9f:
			i = pmSkipC1(s, i+size, byte(r))
		case r == 0x2028 || r == 0x2029:
			b.WriteByte('\n')
			afterChar = false
			i += size
		case pmVariationSelector(r):
			if afterChar {
				b.WriteString(s[i : i+size])
			}
			afterChar = false
			i += size
		case pmBidiControl(r) || pmInvisible(r):
			i += size
		default:
			b.WriteString(s[i : i+size])
			afterChar = true
			i += size
		}
	}
	return b.String()
}

// pmSafe reports whether SafeText has nothing to remove from s.
func pmSafe(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r <= 0x9f || pmBidiControl(r) || pmInvisible(r) || r == 0x2028 || r == 0x2029 {
			return false
		}
		if pmVariationSelector(r) {
			if prev, _ := utf8.DecodeLastRuneInString(s[:i]); i == 0 || pmVariationSelector(prev) || prev < 0x20 {
				return false
			}
		}
		i += size
	}
	return true
}

func pmBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// pmInvisible reports the characters SafeText removes because they show
// nothing: zero-width and joining controls, fillers, tags.
func pmInvisible(r rune) bool {
	switch {
	case r == 0x00ad, r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5, r == 0x180e,
		r == 0x3164, r == 0xfeff, r == 0xffa0:
		return true
	case r >= 0x200b && r <= 0x200d, r >= 0x2060 && r <= 0x2064, r >= 0x206a && r <= 0x206f,
		r >= 0xfff9 && r <= 0xfffb, r >= 0xe0000 && r <= 0xe007f:
		return true
	}
	return false
}

// pmVariationSelector reports U+FE00–U+FE0F and U+E0100–U+E01EF.
func pmVariationSelector(r rune) bool {
	return (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0100 && r <= 0xe01ef)
}

// pmSkipEscape skips an escape sequence whose ESC was just before s[i] and
// returns the index after it.
func pmSkipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return pmSkipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC
		return pmSkipString(s, i+1)
	}
	// ESC, intermediate bytes 0x20–0x2F, final byte 0x30–0x7E.
	j := i
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
		j++
	}
	if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
		return j + 1
	}
	return j
}

// pmSkipC1 skips what follows the C1 control c (0x80–0x9F), which ended
// just before s[i].
func pmSkipC1(s string, i int, c byte) int {
	switch c {
	case 0x9b: // CSI
		return pmSkipCSI(s, i)
	case 0x9d, 0x90, 0x98, 0x9e, 0x9f: // OSC, DCS, SOS, PM, APC
		return pmSkipString(s, i)
	}
	return i
}

// pmSkipCSI skips the parameter, intermediate and final bytes of a control
// sequence.
func pmSkipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// pmSkipString skips a control string up to and including its terminator:
// BEL, ESC \ or ST (0x9C, raw or as U+009C). Another ESC ends the string
// without being consumed. An unterminated string runs to the end of s. The
// payload is read rune by rune, so a UTF-8 continuation byte 0x9C inside a
// character does not end it.
func pmSkipString(s string, i int) int {
	for i < len(s) {
		switch c := s[i]; {
		case c == 0x07:
			return i + 1
		case c == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i
		case c < utf8.RuneSelf:
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0x9c || (r == utf8.RuneError && size == 1 && s[i] == 0x9c) {
			return i + size
		}
		i += size
	}
	return i
}

// JSON helpers. They match members by exact name and check JSON types by
// the first byte, so null never passes for a string, object or array.

func pmFirst(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// pmNull reports whether a member is absent or null.
func pmNull(raw json.RawMessage) bool {
	c := pmFirst(raw)
	return c == 0 || c == 'n'
}

// pmObj is a JSON object's members in wire order.
type pmObj []pmMember

type pmMember struct {
	key []byte
	val json.RawMessage
}

// get returns the member named key, the last one when it is repeated (as
// in JavaScript), or nil.
func (o pmObj) get(key string) json.RawMessage {
	for i := len(o) - 1; i >= 0; i-- {
		if string(o[i].key) == key {
			return o[i].val
		}
	}
	return nil
}

// only reports whether key is the object's one member name.
func (o pmObj) only(key string) bool {
	for _, m := range o {
		if string(m.key) != key {
			return false
		}
	}
	return len(o) > 0
}

// pmObject splits an object into its members in one pass over raw. The
// keys and values point into raw.
func pmObject(raw json.RawMessage) (pmObj, bool) {
	if pmFirst(raw) != '{' {
		return nil, false
	}
	c := fastjson.Cursor{B: raw}
	o := make(pmObj, 0, 8)
	ok := c.Object(func(key []byte) bool {
		v, ok := c.Value()
		o = append(o, pmMember{key, v})
		return ok
	})
	if ok && c.End() {
		return o, true
	}
	// The walker refuses keys with invalid UTF-8, which encoding/json takes.
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	o = o[:0]
	for k, v := range m {
		o = append(o, pmMember{[]byte(k), v})
	}
	return o, true
}

func pmArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	if pmFirst(raw) != '[' {
		return nil, false
	}
	c := fastjson.Cursor{B: raw}
	a := []json.RawMessage{}
	ok := c.Array(func() bool {
		v, ok := c.Value()
		a = append(a, v)
		return ok
	})
	if !ok || !c.End() {
		return nil, false
	}
	return a, true
}

func pmString(raw json.RawMessage) (string, bool) {
	if pmFirst(raw) != '"' {
		return "", false
	}
	c := fastjson.Cursor{B: raw}
	if s, ok := c.Str(); ok && c.End() {
		return s, true
	}
	var s string // invalid UTF-8, which encoding/json replaces
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func pmBool(raw json.RawMessage) (bool, bool) {
	var b bool
	switch pmFirst(raw) {
	case 't', 'f':
		if json.Unmarshal(raw, &b) == nil {
			return b, true
		}
	}
	return false, false
}

// pmVersion reads a record's version: its value when it is an integral JSON
// number that fits an int (else 0), and whether it equals 1.
func pmVersion(raw json.RawMessage) (v int, one bool) {
	c := pmFirst(raw)
	if c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil {
		return 0, false
	}
	if f == math.Trunc(f) && math.Abs(f) <= math.MaxInt32 {
		v = int(f)
	}
	return v, f == 1
}
