package fakeagent

import "encoding/json"

// Option is one permission option offered by a session/request_permission request.
type Option struct {
	ID   string `json:"optionId"`
	Name string `json:"name"`
	Kind string `json:"kind"` // allow_once, allow_always, reject_once or reject_always
	// Meta, when set, is sent as the option's _meta: a version 1 record
	// under _meta.permission (or _meta.jetbrains.air.permission, with
	// Meta.AIR) carrying the option's description and the changes
	// selecting it would make, as the Claude and Codex adapters send them.
	Meta *OptionMeta `json:"-"`
	// RawMeta, when set, is sent as the option's _meta exactly as given
	// (for malformed or hostile records); it wins over Meta. It must be
	// valid JSON.
	RawMeta json.RawMessage `json:"-"`
}

// MarshalJSON encodes the option as an ACP PermissionOption, with its _meta
// from RawMeta or Meta.
func (o Option) MarshalJSON() ([]byte, error) {
	type plain struct {
		ID   string          `json:"optionId"`
		Name string          `json:"name"`
		Kind string          `json:"kind"`
		Meta json.RawMessage `json:"_meta,omitempty"`
	}
	p := plain{ID: o.ID, Name: o.Name, Kind: o.Kind, Meta: o.RawMeta}
	if p.Meta == nil && o.Meta != nil {
		rec, err := json.Marshal(o.Meta)
		if err != nil {
			return nil, err
		}
		if o.Meta.AIR {
			p.Meta = mustJSON(map[string]any{"jetbrains": map[string]any{"air": map[string]json.RawMessage{"permission": rec}}})
		} else {
			p.Meta = mustJSON(map[string]json.RawMessage{"permission": rec})
		}
	}
	return json.Marshal(p)
}

// OptionMeta is an option's permission record, {version: 1, description,
// changes}. Version 0 is sent as 1.
type OptionMeta struct {
	Version     int      `json:"version"`
	Description string   `json:"description,omitempty"`
	Changes     []Change `json:"changes,omitempty"`
	// AIR puts the record under _meta.jetbrains.air.permission instead of
	// _meta.permission.
	AIR bool `json:"-"`
}

// MarshalJSON encodes the record with version 1 unless another is set.
func (m OptionMeta) MarshalJSON() ([]byte, error) {
	type record OptionMeta
	r := record(m)
	if r.Version == 0 {
		r.Version = 1
	}
	return json.Marshal(r)
}

// Change is one structured change of an option, e.g. a policy rule
// {type: "policy_rule", operation: "add", ruleBehavior: "allow", lifetime:
// {scope: "session"}, targets: [{type: "command", matcher: {type:
// "argv_prefix", argv: ["npm", "test"]}}]}. Empty members are left out.
type Change struct {
	Type         string          `json:"type"`                   // policy_rule, grant, permission_mode
	Operation    string          `json:"operation,omitempty"`    // add, remove, replace, grant, set
	RuleBehavior string          `json:"ruleBehavior,omitempty"` // allow, deny, ask
	Description  string          `json:"description,omitempty"`
	Provider     string          `json:"provider,omitempty"` // claudeCode
	Mode         string          `json:"mode,omitempty"`     // a permission_mode change's mode
	Lifetime     *ChangeLifetime `json:"lifetime,omitempty"`
	Targets      []ChangeTarget  `json:"targets,omitempty"`
}

// ChangeLifetime is how long a change lasts: Scope turn, session, process,
// persistent or unknown; Storage user, project, project_local or
// cli_argument.
type ChangeLifetime struct {
	Scope   string `json:"scope"`
	Storage string `json:"storage,omitempty"`
}

// ChangeTarget is what a change applies to: Type command, network,
// filesystem or tool.
type ChangeTarget struct {
	Type     string         `json:"type"`
	Access   []string       `json:"access,omitempty"`   // filesystem: read, write
	ToolName string         `json:"toolName,omitempty"` // tool: e.g. Bash
	Matcher  *ChangeMatcher `json:"matcher,omitempty"`
}

// ChangeMatcher selects within a target: Type argv_prefix (Argv), host
// (Host, Protocol), any, directory or exact_path (Path), glob (Pattern),
// special or provider_rule (Provider, Value).
type ChangeMatcher struct {
	Type     string          `json:"type"`
	Argv     []string        `json:"argv,omitempty"`
	Host     string          `json:"host,omitempty"`
	Protocol string          `json:"protocol,omitempty"`
	Path     string          `json:"path,omitempty"`
	Pattern  string          `json:"pattern,omitempty"`
	Provider string          `json:"provider,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
}

// StdOptions are the options [PermissionParams] offers when given none: allow (allow_once),
// allow-always (allow_always) and reject (reject_once).
var StdOptions = []Option{
	{ID: "allow", Name: "Allow", Kind: "allow_once"},
	{ID: "allow-always", Name: "Always allow", Kind: "allow_always"},
	{ID: "reject", Name: "Reject", Kind: "reject_once"},
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type chunk struct {
	SessionUpdate string    `json:"sessionUpdate"`
	Content       textBlock `json:"content"`
}

// Text returns an agent_message_chunk update carrying a text content block.
func Text(s string) json.RawMessage {
	return mustJSON(chunk{"agent_message_chunk", textBlock{"text", s}})
}

// Thought returns an agent_thought_chunk update carrying a text content block.
func Thought(s string) json.RawMessage {
	return mustJSON(chunk{"agent_thought_chunk", textBlock{"text", s}})
}

type toolCall struct {
	SessionUpdate string `json:"sessionUpdate,omitempty"`
	ToolCallID    string `json:"toolCallId"`
	Title         string `json:"title,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Status        string `json:"status,omitempty"`
	// Content is a tool_call_update's content (a Run step's output).
	Content []toolContent `json:"content,omitempty"`
	// RawInput and RawOutput are an MCPCall step's arguments and result.
	RawInput  json.RawMessage `json:"rawInput,omitempty"`
	RawOutput json.RawMessage `json:"rawOutput,omitempty"`
}

type toolContent struct {
	Type    string    `json:"type"`
	Content textBlock `json:"content"`
}

// ToolCall returns a tool_call update with status pending.
func ToolCall(id, title, kind string) json.RawMessage {
	return mustJSON(toolCall{SessionUpdate: "tool_call", ToolCallID: id, Title: title, Kind: kind, Status: "pending"})
}

// ToolUpdate returns a tool_call_update update that sets the status.
func ToolUpdate(id, status string) json.RawMessage {
	return mustJSON(toolCall{SessionUpdate: "tool_call_update", ToolCallID: id, Status: status})
}

type planEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// Plan returns a plan update whose entries all have priority medium and status pending.
func Plan(entries ...string) json.RawMessage {
	list := make([]planEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, planEntry{e, "medium", "pending"})
	}
	return mustJSON(struct {
		SessionUpdate string      `json:"sessionUpdate"`
		Entries       []planEntry `json:"entries"`
	}{"plan", list})
}

// PermissionParams returns session/request_permission params (without sessionId, which the
// agent adds) for a pending tool call, offering options, or [StdOptions] if none are given.
func PermissionParams(toolCallID, title, kind string, options ...Option) json.RawMessage {
	if len(options) == 0 {
		options = StdOptions
	}
	return mustJSON(struct {
		ToolCall toolCall `json:"toolCall"`
		Options  []Option `json:"options"`
	}{toolCall{ToolCallID: toolCallID, Title: title, Kind: kind, Status: "pending"}, options})
}

// Say returns a step that sends the update u.
func Say(u json.RawMessage) Step { return Step{Update: u} }

// Ask returns a step that sends a permission request with params and waits for the answer.
func Ask(params json.RawMessage) Step { return Step{Permission: params} }

// CallMCP is an MCPCall step: call tool of the session's MCP server
// server with args (a JSON object; nil: {}).
func CallMCP(server, tool string, args json.RawMessage) Step {
	return Step{MCPCall: &MCPCall{Server: server, Tool: tool, Arguments: args}}
}

// Demo returns the built-in demo script used by examples: every turn streams a thought,
// announces an "ls" tool call tN (N the turn's number in its session, see {{turn}}) and
// asks permission for it; allowed, it completes with the
// output "a.txt", otherwise it fails unrun; then it sends a plan and answers "picked
// <optionId>", and ends the turn.
func Demo() Script {
	call := json.RawMessage(`{"sessionUpdate":"tool_call","toolCallId":"t{{turn}}","title":"ls",` +
		`"kind":"execute","status":"pending","rawInput":{"path":"."}}`)
	done := json.RawMessage(`{"sessionUpdate":"tool_call_update","toolCallId":"t{{turn}}","status":"completed",` +
		`"content":[{"type":"content","content":{"type":"text","text":"a.txt"}}]}`)
	refused := json.RawMessage(`{"sessionUpdate":"tool_call_update","toolCallId":"t{{turn}}","status":"failed",` +
		`"content":[{"type":"content","content":{"type":"text","text":"not run: {{answer}}"}}]}`)
	return Script{Turns: []Turn{{
		Steps: []Step{
			Say(Thought("thinking about it")),
			Say(call),
			Ask(PermissionParams("t{{turn}}", "ls", "execute")),
			{Update: done, IfAnswer: "allowed"},
			{Update: refused, IfAnswer: "rejected"},
			Say(Plan("list the files", "pick one")),
			Say(Text("picked {{answer}}")),
		},
		StopReason: "end_turn",
	}}}
}

// mustJSON marshals values of this package's own types, which cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakeagent: " + err.Error())
	}
	return b
}
