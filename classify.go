package acphost

import (
	"encoding/json"
	"strings"
)

// Surface is the kind of UI a permission request calls for.
type Surface string

// The surfaces Classify routes requests to.
const (
	// SurfacePlanExit: the agent asks to leave plan mode (a switch_mode
	// tool, Claude's ExitPlanMode); Plan holds the plan text when sent.
	SurfacePlanExit Surface = "plan_exit"
	// SurfaceFileChange: the agent wants to change files; Changes holds the
	// proposed diffs (old and new content).
	SurfaceFileChange Surface = "file_change"
	// SurfaceCommand: the agent wants to run a command; Command holds it.
	SurfaceCommand Surface = "command"
	// SurfaceFetch: the agent wants to fetch a URL; URL holds it when known.
	SurfaceFetch Surface = "fetch"
	// SurfaceOther: anything else (an action panel with the options).
	SurfaceOther Surface = "other"
)

// Classification routes a permission request to a UI surface and extracts
// what that surface shows.
type Classification struct {
	Surface Surface
	// Plan is the plan text of a plan exit.
	Plan string
	// Changes are the proposed file changes of a file change.
	Changes []FileDiff
	// Command is the command line of a command.
	Command string
	// URL is the address of a fetch.
	URL string
}

// Classify decides which surface a request needs, from the tool call's kind,
// its diff content and its raw input. It never fails: what it cannot place
// is SurfaceOther.
func Classify(req *PermissionRequest) Classification {
	tc := req.ToolCall
	input := rawInputFields(tc.RawInput)
	toolName := tc.Name
	if cc, ok := tc.ClaudeCode(); ok && cc.ToolName != "" {
		toolName = cc.ToolName
	}
	switch {
	case tc.Kind == ToolSwitchMode || toolName == "ExitPlanMode":
		return Classification{Surface: SurfacePlanExit, Plan: firstNonEmpty(input.Plan, contentText(tc))}
	case len(diffsOf(tc)) > 0:
		return Classification{Surface: SurfaceFileChange, Changes: diffsOf(tc)}
	case tc.Kind == ToolEdit || tc.Kind == ToolDelete || tc.Kind == ToolMove:
		return Classification{Surface: SurfaceFileChange}
	case tc.Kind == ToolExecute:
		return Classification{Surface: SurfaceCommand, Command: firstNonEmpty(input.commandLine(), tc.Title)}
	case tc.Kind == ToolFetch:
		return Classification{Surface: SurfaceFetch, URL: input.URL}
	}
	return Classification{Surface: SurfaceOther}
}

// toolInput holds the raw-input fields real agents use for these surfaces.
type toolInput struct {
	Plan    string          `json:"plan"`
	Command json.RawMessage `json:"command"` // a string, or an argv array (codex)
	URL     string          `json:"url"`
}

func rawInputFields(raw json.RawMessage) toolInput {
	var in toolInput
	_ = json.Unmarshal(raw, &in)
	return in
}

// commandLine returns the command as one line, joining an argv array.
func (in toolInput) commandLine() string {
	var s string
	if json.Unmarshal(in.Command, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(in.Command, &argv) == nil {
		return strings.Join(argv, " ")
	}
	return ""
}

func diffsOf(tc ToolCall) []FileDiff {
	var out []FileDiff
	for _, c := range tc.Content {
		if c.Diff != nil {
			out = append(out, *c.Diff)
		}
	}
	return out
}

// contentText joins the text blocks of a tool call's content.
func contentText(tc ToolCall) string {
	var b strings.Builder
	for _, c := range tc.Content {
		if c.Content != nil && c.Content.Type == BlockText {
			b.WriteString(c.Content.Text)
		}
	}
	return b.String()
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
