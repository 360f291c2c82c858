package render

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// JSONLine is one line of --json output: a library StreamEvent (type as in
// the library) or, after each turn, a "result". Strings are the agent's,
// unfiltered: JSON escapes control characters, and the consumer decides how
// to display them.
type JSONLine struct {
	Type string `json:"type"`
	// SessionID is the session the line is of, on every line; Session
	// its name (acphost -s NAME), when it has one.
	SessionID string `json:"sessionId,omitempty"`
	Session   string `json:"session,omitempty"`
	Delta     string `json:"delta,omitempty"`
	// Tool events; permission and permission_answer carry the tool call's
	// id, name (title) and kind too.
	ID      string            `json:"id,omitempty"`
	Name    string            `json:"name,omitempty"`
	Via     string            `json:"via,omitempty"`
	Kind    string            `json:"kind,omitempty"`
	Status  string            `json:"status,omitempty"`
	Input   json.RawMessage   `json:"input,omitempty"`
	Output  json.RawMessage   `json:"output,omitempty"`
	Content []json.RawMessage `json:"content,omitempty"` // tool_result: the call's final content
	// plan
	Entries []acp.PlanEntry `json:"entries,omitempty"`
	// permission
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	Options     []JSONOption `json:"options,omitempty"`
	// permission_answer
	OptionID   string `json:"optionId,omitempty"`
	OptionKind string `json:"optionKind,omitempty"`
	Cancelled  bool   `json:"cancelled,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// elicitation (mode "form" or "url"; title and description are the
	// form's), elicitation_answer and elicitation_complete
	Message       string          `json:"message,omitempty"`
	Schema        json.RawMessage `json:"requestedSchema,omitempty"`
	URL           string          `json:"url,omitempty"`
	ElicitationID string          `json:"elicitationId,omitempty"`
	Action        string          `json:"action,omitempty"`
	Values        map[string]any  `json:"values,omitempty"` // an accepted form's content as sent
	// usage
	Used *uint64   `json:"used,omitempty"`
	Size *uint64   `json:"size,omitempty"`
	Cost *acp.Cost `json:"cost,omitempty"`
	// mode
	Mode string `json:"mode,omitempty"`
	// permission_decision (after the permission_answer of a request
	// answered without asking): who decided and by which rule
	DecidedBy string `json:"decidedBy,omitempty"`
	Rule      string `json:"rule,omitempty"`
	// done, error and result
	StopReason string `json:"stopReason,omitempty"`
	Error      string `json:"error,omitempty"`
	// result
	Text       *string `json:"text,omitempty"`
	DurationMS *int64  `json:"durationMs,omitempty"`
	// result: the turn's tokens, where the agent reported them (cost, the
	// session's as of the turn's end, is in Cost)
	TurnUsage *acp.Usage `json:"usage,omitempty"`
}

type JSONOption struct {
	OptionID    string   `json:"optionId"`
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Description string   `json:"description,omitempty"`
	Changes     []string `json:"changes,omitempty"` // PermissionChange.Describe of each change
}

// JSONSink writes --json output: one object per line, nothing else.
type JSONSink struct {
	mu  sync.Mutex
	enc *json.Encoder
	// last is the session of the last line written; named and name the
	// session that has a name (SetName).
	last, named, name string
	// Decision says who answered a permission without asking (ok false:
	// the person answered, or nobody did).
	Decision func(toolCallID string, ans *acphost.PermissionAnswer) (by, rule string, ok bool)
	// Elicit is the --elicit policy: with "ask" the person answers
	// questions, else the policy does.
	Elicit string
}

// The reasons of --json answers given by acphost itself, where the library
// says only "hook" (its OnPermission or elicitation hook answered).
const (
	ReasonPerson = "person" // the person answered, asked at the terminal
	ReasonElicit = "elicit" // the --elicit policy answered without asking
)

func NewJSONSink(w io.Writer) *JSONSink {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &JSONSink{enc: enc}
}

// SetName names session id on its lines (the "session" field).
func (j *JSONSink) SetName(id, name string) {
	j.mu.Lock()
	j.named, j.name = id, name
	j.mu.Unlock()
}

func (j *JSONSink) write(l *JSONLine) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if l.SessionID == "" {
		l.SessionID = j.last // a line of no event: the session of the one before
	}
	j.last = l.SessionID
	if l.SessionID != "" && l.SessionID == j.named {
		l.Session = j.name
	}
	if err := j.enc.Encode(l); err != nil {
		// Only raw members can fail (JSON the agent sent that does not
		// re-encode); drop them rather than the event.
		l.Input, l.Output, l.Content, l.Schema = nil, nil, nil, nil
		_ = j.enc.Encode(l)
	}
}

func (j *JSONSink) BeginTurn(string, bool) {}

func (j *JSONSink) Event(ev acphost.StreamEvent) {
	l := &JSONLine{Type: string(ev.Type), SessionID: ev.SessionID}
	switch ev.Type {
	case acphost.EventText, acphost.EventThought:
		l.Delta = ev.Delta
	case acphost.EventToolCall, acphost.EventToolUpdate, acphost.EventToolResult:
		l.ID, l.Name, l.Via, l.Kind, l.Status = ev.ID, ev.Name, ev.Via, string(ev.Kind), string(ev.Status)
		l.Input, l.Output = ev.Input, ev.Output
		if ev.Type == acphost.EventToolResult && ev.ToolCall != nil {
			l.Content = toolContentJSON(ev.ToolCall.Content)
		}
	case acphost.EventPlan:
		l.Entries = ev.Plan
		if l.Entries == nil {
			l.Entries = []acp.PlanEntry{}
		}
	case acphost.EventPermission:
		l.ID, l.Name, l.Kind = ev.ID, ev.Name, string(ev.Kind)
		if req := ev.Permission; req != nil {
			l.Title, _ = req.Heading()
			if p := req.Presentation; p.Present() {
				l.Description = p.Description
			}
			l.Input = req.ToolCall.RawInput
			l.Options = make([]JSONOption, 0, len(req.Options))
			for _, o := range req.Options {
				jo := JSONOption{OptionID: o.ID, Name: o.Name, Kind: string(o.Kind), Description: o.Meta.Description}
				for _, c := range o.Meta.Changes {
					jo.Changes = append(jo.Changes, c.Describe())
				}
				l.Options = append(l.Options, jo)
			}
		}
	case acphost.EventPermissionAnswer:
		l.ID, l.Name = ev.ID, ev.Name
		var by, rule string
		decided := false
		if j.Decision != nil {
			by, rule, decided = j.Decision(ev.ID, ev.Answer)
		}
		if a := ev.Answer; a != nil {
			l.OptionID, l.Cancelled, l.Reason = a.OptionID, a.Cancelled, string(a.Reason)
			if a.Reason == acphost.ReasonHook { // acphost's own hook: say which part of it
				l.Reason = ReasonPerson
				if decided {
					l.Reason = by
				}
			}
			if a.Option != nil {
				l.OptionKind = string(a.Option.Kind)
			}
			if a.Err != nil {
				l.Error = a.Err.Error()
			}
		}
		j.write(l)
		if decided {
			j.write(&JSONLine{Type: "permission_decision", SessionID: l.SessionID, ID: l.ID, Name: l.Name, OptionID: l.OptionID,
				OptionKind: l.OptionKind, Cancelled: l.Cancelled, DecidedBy: by, Rule: rule})
		}
		return
	case acphost.EventElicitation, acphost.EventElicitationAnswer:
		l.ID = ev.ID
		if req := ev.Elicitation; req != nil {
			l.Mode, l.Message, l.URL, l.ElicitationID = string(req.Mode), req.Message, req.URL, req.ElicitationID
			if req.Form != nil && ev.Type == acphost.EventElicitation {
				l.Title, l.Description, l.Schema = req.Form.Title, req.Form.Description, req.Form.Raw
			}
		}
		if a := ev.ElicitationAnswer; a != nil {
			l.Message, l.URL = "", ""
			l.Action, l.Values, l.Reason, l.Error = string(a.Action), a.Content, string(a.Reason), errText(a.Err)
			if a.Reason == acphost.ReasonHook {
				l.Reason = ReasonElicit
				if j.Elicit == "ask" {
					l.Reason = ReasonPerson
				}
			}
		}
	case acphost.EventUsage:
		if u := ev.Usage; u != nil {
			l.Used, l.Size, l.Cost = &u.Used, &u.Size, u.Cost
		}
	case acphost.EventMode:
		l.Mode = ev.Mode
	case acphost.EventRestart:
		l.Error = errText(ev.Err)
	case acphost.EventDone:
		l.StopReason = string(ev.StopReason)
	case acphost.EventError:
		l.StopReason = string(ev.StopReason)
		l.Error = errText(ev.Err)
	}
	j.write(l)
}

func (j *JSONSink) ElicitationComplete(c acp.ElicitationComplete) {
	j.write(&JSONLine{Type: "elicitation_complete", ElicitationID: c.ElicitationID})
}

// EndTurn writes the turn's "result" line.
func (j *JSONSink) EndTurn(r TurnResult) {
	text := r.Resp.Text
	ms := r.Elapsed.Milliseconds()
	l := &JSONLine{Type: "result", SessionID: r.Resp.SessionID, StopReason: string(r.Stop), Text: &text, DurationMS: &ms, TurnUsage: r.Resp.Usage, Cost: r.Resp.Cost}
	if r.Err != nil && !r.UserCancel {
		l.Error = r.Err.Error()
	}
	j.write(l)
}

// toolContentJSON renders a tool call's content items in their ACP shape.
func toolContentJSON(items []acp.ToolCallContent) []json.RawMessage {
	var out []json.RawMessage
	for _, c := range items {
		var v any
		switch {
		case c.Content != nil:
			v = map[string]any{"type": "content", "content": c.Content}
		case c.Diff != nil:
			v = map[string]any{"type": "diff", "path": c.Diff.Path, "oldText": c.Diff.OldText, "newText": c.Diff.NewText}
		case c.TerminalID != "":
			v = map[string]any{"type": "terminal", "terminalId": c.TerminalID}
		case len(c.Raw) > 0:
			out = append(out, c.Raw)
			continue
		default:
			continue
		}
		if b, err := json.Marshal(v); err == nil {
			out = append(out, b)
		}
	}
	return out
}
