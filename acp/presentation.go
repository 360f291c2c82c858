package acp

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/acphost/acphost/internal/fastjson"
)

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
	top, ok := fastjson.ParseObject(raw)
	if !ok {
		return nil, malformed("session/request_permission: params are not a JSON object")
	}
	optRaw, ok := fastjson.ParseArray(top.Get("options"))
	if !ok {
		return nil, malformed("session/request_permission: params have no options array")
	}
	req := &PermissionRequest{Raw: raw}
	req.SessionID, _ = fastjson.ParseString(top.Get("sessionId"))
	req.ToolCall, req.ToolCallSet = pmRequestToolCall(top)
	req.Options = make([]PermissionOption, 0, len(optRaw))
	for _, o := range optRaw {
		req.Options = append(req.Options, pmDecodeOption(o))
	}
	req.Presentation = pmDecodeRequestPresentation(top)
	return req, nil
}

// pmRequestToolCall decodes the request's toolCall, or the ACP v2 subject.
func pmRequestToolCall(top fastjson.Object) (ToolCall, ToolCallFields) {
	if raw := top.Get("toolCall"); fastjson.First(raw) == '{' {
		if tc, set, err := decodeToolCall(raw); err == nil {
			return tc, set
		}
	}
	subj, ok := fastjson.ParseObject(top.Get("subject"))
	if !ok {
		return ToolCall{}, 0
	}
	switch typ, _ := fastjson.ParseString(subj.Get("type")); typ {
	case "tool_call":
		if raw := subj.Get("toolCall"); fastjson.First(raw) == '{' {
			if tc, set, err := decodeToolCall(raw); err == nil {
				return tc, set
			}
		}
	case "command":
		// A v2 command subject is not a tool call; keep only the id that
		// links it to one, if any. The command itself stays in Raw.
		id, _ := fastjson.ParseString(subj.Get("toolCallId"))
		return ToolCall{ID: id}, 0
	}
	return ToolCall{}, 0
}

func pmDecodeOption(raw json.RawMessage) PermissionOption {
	opt := PermissionOption{Raw: raw}
	m, ok := fastjson.ParseObject(raw)
	if !ok {
		return opt
	}
	opt.ID, _ = fastjson.ParseString(m.Get("optionId"))
	opt.Name, _ = fastjson.ParseString(m.Get("name"))
	kind, _ := fastjson.ParseString(m.Get("kind"))
	opt.Kind = PermissionKind(kind)
	opt.Meta = pmDecodeOptionMeta(m.Get("_meta"))
	return opt
}

// pmPermissionRecords returns the _meta.jetbrains.air.permission and
// _meta.permission members of a _meta object (nil when absent).
func pmPermissionRecords(meta fastjson.Object) (air, plain json.RawMessage) {
	if jb, ok := fastjson.ParseObject(meta.Get("jetbrains")); ok {
		if a, ok := fastjson.ParseObject(jb.Get("air")); ok {
			air = a.Get("permission")
		}
	}
	return air, meta.Get("permission")
}

func pmDecodeRequestPresentation(top fastjson.Object) Presentation {
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
	if meta, ok := fastjson.ParseObject(top.Get("_meta")); ok {
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
	if fastjson.Null(raw) {
		return Presentation{}, false
	}
	unknown := Presentation{Source: PresentationUnknown, Raw: raw}
	m, ok := fastjson.ParseObject(raw)
	if !ok {
		return unknown, false
	}
	if fastjson.Null(m.Get("title")) && !fastjson.Null(m.Get("changes")) {
		// Option-level structured changes sent at request level: not a
		// presentation.
		return Presentation{}, false
	}
	v, one := pmVersion(m.Get("version"))
	unknown.Version = v
	if !one {
		return unknown, false
	}
	title, ok := fastjson.ParseString(m.Get("title"))
	if !ok || blank(title) {
		return unknown, false
	}
	p := Presentation{Title: title, Source: src, Version: 1, Raw: raw}
	if d := m.Get("description"); !fastjson.Null(d) {
		if p.Description, ok = fastjson.ParseString(d); !ok {
			return unknown, false
		}
		p.HasDescription = true
	}
	if d := m.Get("defaultToNo"); !fastjson.Null(d) {
		if p.DefaultToNo, ok = fastjson.ParseBool(d); !ok {
			return unknown, false
		}
	}
	return p, true
}

// pmDecodeV2Presentation decodes an ACP v2 request's top-level title and
// description.
func pmDecodeV2Presentation(top fastjson.Object) (Presentation, bool) {
	t, d := top.Get("title"), top.Get("description")
	if fastjson.Null(t) {
		return Presentation{}, false
	}
	var b bytes.Buffer
	b.WriteString(`{"title":`)
	b.Write(t)
	if !fastjson.Null(d) {
		b.WriteString(`,"description":`)
		b.Write(d)
	}
	b.WriteByte('}')
	unknown := Presentation{Source: PresentationUnknown, Raw: b.Bytes()}
	title, ok := fastjson.ParseString(t)
	if !ok || blank(title) {
		return unknown, false
	}
	p := Presentation{Title: title, Source: PresentationV2, Raw: unknown.Raw}
	if !fastjson.Null(d) {
		if p.Description, ok = fastjson.ParseString(d); !ok {
			return unknown, false
		}
		p.HasDescription = true
	}
	return p, true
}

func pmDecodeOptionMeta(raw json.RawMessage) OptionMeta {
	var om OptionMeta
	if fastjson.Null(raw) {
		return om
	}
	om.Raw = raw
	meta, ok := fastjson.ParseObject(raw)
	if !ok {
		return om
	}
	air, plain := pmPermissionRecords(meta)
	haveChanges := false
	for _, rec := range []json.RawMessage{air, plain} {
		if fastjson.Null(rec) {
			continue
		}
		m, ok := fastjson.ParseObject(rec)
		_, one := pmVersion(m.Get("version"))
		desc, descOK := fastjson.ParseString(m.Get("description"))
		changes, changesOK := fastjson.ParseArray(m.Get("changes"))
		if !ok || !one || (!descOK && !fastjson.Null(m.Get("description"))) || (!changesOK && !fastjson.Null(m.Get("changes"))) {
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
	m   fastjson.Object
	bad bool
}

func (f *pmFields) str(key string) string {
	v := f.m.Get(key)
	if fastjson.Null(v) {
		return ""
	}
	s, ok := fastjson.ParseString(v)
	if !ok {
		f.bad = true
	}
	return s
}

func (f *pmFields) strs(key string) []string {
	v := f.m.Get(key)
	if fastjson.Null(v) {
		return nil
	}
	arr, ok := fastjson.ParseArray(v)
	if !ok {
		f.bad = true
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := fastjson.ParseString(e)
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
	m, ok := fastjson.ParseObject(raw)
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
	if v := m.Get("lifetime"); !fastjson.Null(v) {
		lt := &ChangeLifetime{Raw: v}
		if lm, ok := fastjson.ParseObject(v); ok {
			lf := pmFields{m: lm}
			lt.Scope = lf.str("scope")
			lt.Storage = lf.str("storage")
			f.bad = f.bad || lf.bad
		} else {
			f.bad = true
		}
		c.Lifetime = lt
	}
	if v := m.Get("targets"); !fastjson.Null(v) {
		if arr, ok := fastjson.ParseArray(v); ok {
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
	m, ok := fastjson.ParseObject(raw)
	if !ok {
		t.malformed = true
		return t
	}
	f := pmFields{m: m}
	t.Type = TargetType(f.str("type"))
	t.Access = f.strs("access")
	t.ToolName = f.str("toolName")
	if v := m.Get("matcher"); !fastjson.Null(v) {
		mt := pmDecodeMatcher(v)
		t.Matcher = &mt
	}
	t.malformed = f.bad
	return t
}

func pmDecodeMatcher(raw json.RawMessage) ChangeMatcher {
	mt := ChangeMatcher{Raw: raw}
	m, ok := fastjson.ParseObject(raw)
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
	if v := m.Get("value"); !fastjson.Null(v) {
		mt.Value = v
	}
	mt.malformed = f.bad
	return mt
}

// pmVersion reads a record's version: its value when it is an integral JSON
// number that fits an int (else 0), and whether it equals 1.
func pmVersion(raw json.RawMessage) (v int, one bool) {
	c := fastjson.First(raw)
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
