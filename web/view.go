package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// The messages of the event stream, one JSON object per SSE "data:" line,
// told apart by Type. Every string that came from the agent has been
// through acphost.SafeText, except the raw file content of a proposal (which
// the person edits and which is written as is) and the ids and values that
// are answered byte-exact (option, mode, config, field and choice ids):
// those are never shown, each comes with a display string (Name, Label)
// that went through SafeText, the id itself when the agent gave no name.

// Limits on what one message carries of a tool call, so that a huge output
// does not reach every tab whole.
const (
	maxFieldBytes = 64 << 10
	maxDiffLines  = 4000
)

type msgReset struct {
	Type    string      `json:"type"` // "reset": the transcript starts again (a tab connected, or another session)
	Agent   agentMsg    `json:"agent"`
	Session sessionView `json:"session"`
	Dropped int         `json:"dropped"` // transcript messages no longer kept
}

type sessionView struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
	// Branch and Dir name the worktree the session runs in, if any.
	Branch string `json:"branch,omitempty"`
	Dir    string `json:"dir,omitempty"`
}

// viewSession shows sess, which runs in worktree wt (nil: none).
func viewSession(sess *acphost.Session, wt *Worktree) sessionView {
	v := sessionView{ID: safe(sess.ID()), Title: safe(sess.Details().Title)}
	if wt != nil {
		v.Branch, v.Dir = safe(wt.Branch), safe(wt.Dir)
	}
	return v
}

type agentMsg struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Replay, on a transcript message, says it is history a loaded session
// replayed (shown dimmed), not this page's activity.

type msgUser struct {
	Type   string `json:"type"` // "user"
	Turn   int    `json:"turn"`
	Text   string `json:"text"`
	Replay bool   `json:"replay,omitempty"`
}

type msgDelta struct {
	Type   string `json:"type"` // "text" or "thought"
	Turn   int    `json:"turn"`
	Delta  string `json:"delta"`
	Replay bool   `json:"replay,omitempty"`
}

type msgTool struct {
	Type   string   `json:"type"` // "tool"
	Turn   int      `json:"turn"`
	Tool   toolView `json:"tool"`
	Replay bool     `json:"replay,omitempty"`
}

type toolView struct {
	ID        string        `json:"id"`
	Title     string        `json:"title"`
	Kind      string        `json:"kind"`
	Status    string        `json:"status"`
	Locations []string      `json:"locations"`
	Content   []contentView `json:"content"`
	Input     string        `json:"input,omitempty"`
	Output    string        `json:"output,omitempty"`
}

type contentView struct {
	Type string `json:"type"` // "text", "diff", "terminal" or another type, shown as its JSON
	Text string `json:"text,omitempty"`
	// Diff is a unified diff (lines starting with ' ', '-', '+', '@'); Path
	// the file it changes.
	Diff    string `json:"diff,omitempty"`
	Path    string `json:"path,omitempty"`
	Added   int    `json:"added,omitempty"`
	Removed int    `json:"removed,omitempty"`
}

type msgPlan struct {
	Type    string      `json:"type"` // "plan"
	Turn    int         `json:"turn"`
	Entries []planEntry `json:"entries"`
	Replay  bool        `json:"replay,omitempty"`
}

type planEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

type msgUsage struct {
	Type     string  `json:"type"` // "usage"
	Turn     int     `json:"turn"`
	Used     uint64  `json:"used"`
	Size     uint64  `json:"size"`
	Cost     float64 `json:"cost,omitempty"`
	Currency string  `json:"currency,omitempty"`
}

type msgNote struct {
	Type string `json:"type"` // "note": a line of the transcript (mode change, restart, answer given)
	Turn int    `json:"turn"`
	Kind string `json:"kind"` // "mode", "restart", "permission", "answer", "elicitation", "notice"
	Text string `json:"text"`
}

// msgWrite is a write the person amended before applying it: what landed,
// as a diff against the file before, in place of the agent's version.
type msgWrite struct {
	Type string      `json:"type"` // "write"
	Turn int         `json:"turn"`
	Diff contentView `json:"diff"`
}

type msgEnd struct {
	Type       string `json:"type"` // "done" or "error"
	Turn       int    `json:"turn"`
	StopReason string `json:"stopReason,omitempty"`
	Error      string `json:"error,omitempty"`
}

type msgState struct {
	Type       string      `json:"type"` // "state"
	Running    bool        `json:"running"`
	Switching  bool        `json:"switching"` // a session is opening
	Session    sessionView `json:"session"`
	Permission string      `json:"permission,omitempty"` // the policy's name, when not the page alone
	Recording  bool        `json:"recording"`            // sessions are recorded (Config.Sessions)
	// Worktrees: the new-session form offers a worktree (Config.Worktree).
	Worktrees bool `json:"worktrees,omitempty"`
	Turn      int  `json:"turn"`
	PlanMode  bool `json:"planMode"`
	// Holds says what holds of plan mode, layer by layer, or that the
	// agent acts without asking (acphost.Enforcement's summary).
	Holds string       `json:"holds,omitempty"`
	Mode  string       `json:"mode"`
	Modes []choiceView `json:"modes"`
	// ModeOption, when set, is the config option (of category "mode") the
	// mode picker sets, for an agent that offers its modes only so.
	ModeOption string       `json:"modeOption,omitempty"`
	Config     []configView `json:"config"`
	AgentError string       `json:"agentError,omitempty"`
	// Containment is how the agent's processes are held, in a word
	// (acphost.Containment.Word).
	Containment string `json:"containment,omitempty"`
}

type choiceView struct {
	Value       string `json:"value"` // raw: answered, never shown
	Name        string `json:"name"`  // shown: the name, else the value, safe
	Description string `json:"description,omitempty"`
}

type configView struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Type        string       `json:"type"`    // "select" or "boolean"
	Value       any          `json:"value"`   // a select's value id, or a bool
	Options     []choiceView `json:"options"` // a select's choices
}

type msgDialog struct {
	Type        string           `json:"type"` // "dialog"
	ID          string           `json:"id"`
	Kind        string           `json:"kind"` // "permission", "proposal", "elicitation"
	Permission  *permissionView  `json:"permission,omitempty"`
	Proposal    *proposalView    `json:"proposal,omitempty"`
	Elicitation *elicitationView `json:"elicitation,omitempty"`
}

type msgDialogClose struct {
	Type string `json:"type"` // "dialog_close"
	ID   string `json:"id"`
	How  string `json:"how"` // "answered", or "ended" (withdrawn, cancelled, timed out, closed)
}

type permissionView struct {
	Heading string `json:"heading"`
	// FromPresentation says the heading is the agent's presentation record,
	// Description its explanation.
	FromPresentation bool         `json:"fromPresentation"`
	Description      string       `json:"description,omitempty"`
	DefaultToNo      bool         `json:"defaultToNo"`
	Surface          string       `json:"surface"`
	Command          string       `json:"command,omitempty"`
	URL              string       `json:"url,omitempty"`
	Plan             string       `json:"plan,omitempty"`
	Tool             toolView     `json:"tool"`
	Options          []optionView `json:"options"`
}

type optionView struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Kind        string       `json:"kind"`
	Description string       `json:"description,omitempty"`
	Changes     []changeView `json:"changes"`
}

type changeView struct {
	Text  string `json:"text"`
	Known bool   `json:"known"`
}

type proposalView struct {
	Path     string `json:"path"`
	Resolved string `json:"resolved,omitempty"` // when a symlink made it differ from Path
	Exists   bool   `json:"exists"`
	Current  string `json:"current"`  // raw
	Proposed string `json:"proposed"` // raw: the text area's content
	Diff     string `json:"diff"`
	Added    int    `json:"added"`
	Removed  int    `json:"removed"`
	// Hidden says the proposed content holds characters a reader cannot
	// see (controls, bidirectional overrides, zero-width characters).
	Hidden bool `json:"hidden"`
}

type elicitationView struct {
	Mode        string      `json:"mode"`
	Message     string      `json:"message"`
	URL         string      `json:"url,omitempty"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description,omitempty"`
	Fields      []fieldView `json:"fields"`
}

type fieldView struct {
	Name        string       `json:"name"`  // raw: the answer's key, never shown
	Label       string       `json:"label"` // shown: the title, else the name, safe
	Kind        string       `json:"kind"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	Required    bool         `json:"required"`
	Default     any          `json:"default,omitempty"`
	Choices     []choiceView `json:"choices"`
	Range       string       `json:"range,omitempty"` // its bounds, as the terminal words them: "1 to 5"
	Min         *float64     `json:"min,omitempty"`   // a number's
	Max         *float64     `json:"max,omitempty"`
}

// fieldRange words a field's bounds as the terminal does: "1 to 5", "at
// least 3 characters", "at most 2 choices"; "" for none.
func fieldRange(f *acp.FormField) string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	between := func(lo, hi *float64, unit string) string {
		var s string
		switch {
		case lo != nil && hi != nil:
			s = num(*lo) + " to " + num(*hi)
		case lo != nil:
			s = "at least " + num(*lo)
		case hi != nil:
			s = "at most " + num(*hi)
		default:
			return ""
		}
		return strings.TrimSpace(s + " " + unit)
	}
	ints := func(lo, hi *int, unit string) string {
		f := func(p *int) *float64 {
			if p == nil {
				return nil
			}
			v := float64(*p)
			return &v
		}
		return between(f(lo), f(hi), unit)
	}
	switch f.Kind {
	case acp.FormNumber, acp.FormInteger:
		return between(f.Minimum, f.Maximum, "")
	case acp.FormMultiSelect:
		return ints(f.MinItems, f.MaxItems, "choices")
	case acp.FormString:
		return ints(f.MinLength, f.MaxLength, "characters")
	}
	return ""
}

// label is what the page shows for something the agent named, or else only
// identified: its name, else its id, both safe.
func label(name, id string) string {
	if n := safe(name); n != "" {
		return n
	}
	return safe(id)
}

// safe is acphost.SafeText capped at maxFieldBytes.
func safe(s string) string {
	if len(s) > maxFieldBytes {
		s = fmt.Sprintf("%s\n… %d more bytes not shown", s[:maxFieldBytes], len(s)-maxFieldBytes)
	}
	return acp.SafeText(s)
}

// rawText shows raw JSON: a string as its text, anything else indented.
func rawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return safe(s)
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") == nil {
		return safe(buf.String())
	}
	return safe(string(raw))
}

func viewPlan(entries []acp.PlanEntry) []planEntry {
	out := []planEntry{}
	for _, e := range entries {
		out = append(out, planEntry{Content: safe(e.Content), Priority: safe(e.Priority), Status: safe(e.Status)})
	}
	return out
}

func diffView(d acp.FileDiff) contentView {
	text, st := d.Unified(acp.DiffOptions{MaxLines: maxDiffLines})
	return contentView{Type: "diff", Path: acp.SafeText(d.Path), Diff: acp.SafeText(text), Added: st.Added, Removed: st.Removed}
}

func viewTool(tc acp.ToolCall) toolView {
	v := toolView{ID: tc.ID, Title: safe(tc.Title), Kind: safe(string(tc.Kind)), Status: safe(string(tc.Status)),
		Locations: []string{}, Content: []contentView{}, Input: rawText(tc.RawInput), Output: rawText(tc.RawOutput)}
	if v.Title == "" {
		v.Title = safe(tc.Name)
	}
	for _, l := range tc.Locations {
		loc := acp.SafeText(l.Path)
		if l.Line != nil {
			loc += fmt.Sprintf(":%d", *l.Line)
		}
		v.Locations = append(v.Locations, loc)
	}
	for _, c := range tc.Content {
		switch {
		case c.Diff != nil:
			v.Content = append(v.Content, diffView(*c.Diff))
		case c.Content != nil:
			v.Content = append(v.Content, contentView{Type: "text", Text: blockText(*c.Content)})
		case c.Type == "terminal":
			v.Content = append(v.Content, contentView{Type: "terminal", Text: "terminal " + acp.SafeText(c.TerminalID)})
		default:
			v.Content = append(v.Content, contentView{Type: safe(c.Type), Text: rawText(c.Raw)})
		}
	}
	return v
}

// blockText shows a content block: its text, or what it is.
func blockText(b acp.ContentBlock) string {
	a := b.Attachment
	switch {
	case b.Type == acp.BlockText:
		return safe(b.Text)
	case a != nil && a.Resource != nil && a.Resource.Text != "":
		return safe(a.Resource.URI + "\n" + a.Resource.Text)
	case a != nil && a.URI != "":
		return safe(fmt.Sprintf("[%s] %s", b.Type, a.URI))
	default:
		return safe(fmt.Sprintf("[%s]", b.Type))
	}
}

func viewPermission(req *acp.PermissionRequest) *permissionView {
	heading, fromPresentation := req.Heading()
	v := &permissionView{Heading: safe(heading), FromPresentation: fromPresentation,
		DefaultToNo: req.Presentation.DefaultToNo, Tool: viewTool(req.ToolCall), Options: []optionView{}}
	if v.Heading == "" {
		v.Heading = "Allow this tool call?"
	}
	if p := req.Presentation; p.Present() && p.HasDescription {
		v.Description = safe(p.Description)
	}
	cl := acp.Classify(req)
	v.Surface = string(cl.Surface)
	v.Command, v.URL, v.Plan = safe(cl.Command), safe(cl.URL), safe(cl.Plan)
	if len(v.Tool.Content) == 0 {
		for _, d := range cl.Changes {
			v.Tool.Content = append(v.Tool.Content, diffView(d))
		}
	}
	for _, o := range req.Options {
		ov := optionView{ID: o.ID, Name: label(o.Name, string(o.Kind)), Kind: safe(string(o.Kind)), Description: safe(o.Meta.Description), Changes: []changeView{}}
		for _, ch := range o.Meta.Changes {
			ov.Changes = append(ov.Changes, changeView{Text: safe(ch.Describe()), Known: ch.Known()})
		}
		v.Options = append(v.Options, ov)
	}
	return v
}

func viewProposal(p *acphost.WriteProposal) *proposalView {
	d := diffView(p.FileDiff())
	v := &proposalView{Path: acp.SafeText(p.Path), Exists: p.Exists, Current: p.Current, Proposed: p.Proposed,
		Diff: d.Diff, Added: d.Added, Removed: d.Removed}
	if p.Resolved != "" && p.Resolved != p.Path {
		v.Resolved = acp.SafeText(p.Resolved)
	}
	lf := strings.ReplaceAll(p.Proposed, "\r\n", "\n")
	v.Hidden = acp.SafeText(lf) != lf
	return v
}

func viewElicitation(req *acp.ElicitationRequest) *elicitationView {
	v := &elicitationView{Mode: safe(string(req.Mode)), Message: safe(req.Message), Fields: []fieldView{}}
	if req.Mode == acp.ModeURL {
		v.URL = safe(req.URL)
	}
	if f := req.Form; f != nil {
		v.Title, v.Description = safe(f.Title), safe(f.Description)
		for _, fl := range f.Fields {
			fv := fieldView{Name: fl.Name, Label: label(fl.Title, fl.Name), Kind: string(fl.Kind), Title: safe(fl.Title), Description: safe(fl.Description),
				Required: fl.Required, Default: fl.Default, Choices: []choiceView{}, Range: fieldRange(&fl), Min: fl.Minimum, Max: fl.Maximum}
			if s, ok := fv.Default.(string); ok {
				fv.Default = safe(s)
			}
			for _, c := range fl.Choices {
				fv.Choices = append(fv.Choices, choiceView{Value: c.Value, Name: label(c.Title, c.Value), Description: safe(c.Description)})
			}
			v.Fields = append(v.Fields, fv)
		}
	}
	return v
}

// viewConfig shows a config option; a select's choices are its Choices
// (flattened from groups, a group's name before each of its own).
func viewConfig(o acp.ConfigOption) configView {
	v := configView{ID: o.ID, Name: label(o.Name, o.ID), Description: safe(o.Description), Type: safe(o.Type), Options: []choiceView{}}
	if len(o.CurrentValue) > 0 {
		var val any
		if json.Unmarshal(o.CurrentValue, &val) == nil {
			v.Value = val
		}
	}
	for _, c := range o.Choices {
		name := label(c.Name, c.Value)
		if c.GroupName != "" {
			name = safe(c.GroupName + ": " + name)
		}
		v.Options = append(v.Options, choiceView{Value: c.Value, Name: name, Description: safe(c.Description)})
	}
	return v
}
