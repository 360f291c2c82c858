package acp

import (
	"encoding/json"
	"slices"
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
	// SurfaceQuestion: the agent asks the person questions (Claude's
	// AskUserQuestion); Questions holds them. With OnElicitation set,
	// current Claude adapters ask through elicitation/create instead (its
	// ToolCallID names this tool call).
	SurfaceQuestion Surface = "question"
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
	// Questions are the questions of a question surface, in order.
	Questions []Question
}

// Question is one question an agent asks the person, with the answers it
// suggests (the person may still answer in their own words).
type Question struct {
	Header   string // a short label, such as "Color"
	Question string
	Options  []QuestionOption
	// MultiSelect allows choosing several options.
	MultiSelect bool
}

// QuestionOption is one suggested answer.
type QuestionOption struct {
	Label       string
	Description string
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
	case toolName == "AskUserQuestion" || len(input.Questions) > 0 && tc.Kind == ToolOther:
		return Classification{Surface: SurfaceQuestion, Questions: input.questions()}
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
	Plan      string          `json:"plan"`
	Command   json.RawMessage `json:"command"` // a string, or an argv array (codex)
	URL       string          `json:"url"`
	Questions []struct {
		Header      string `json:"header"`
		Question    string `json:"question"`
		MultiSelect bool   `json:"multiSelect"`
		Options     []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	} `json:"questions"` // Claude's AskUserQuestion
}

// questions returns AskUserQuestion's questions.
func (in toolInput) questions() []Question {
	var out []Question
	for _, q := range in.Questions {
		qq := Question{Header: q.Header, Question: q.Question, MultiSelect: q.MultiSelect}
		for _, o := range q.Options {
			qq.Options = append(qq.Options, QuestionOption(o))
		}
		out = append(out, qq)
	}
	return out
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

// optionsWrite reports whether an option's structured changes write.
func (req *PermissionRequest) AnyOptionWrites() bool {
	return slices.ContainsFunc(req.Options, PermissionOption.Writes)
}
