// Package ask is where acphost asks the person at the terminal: the
// --permission and --elicit policies, the Approver that shows a permission
// request and reads the choice, the Elicitor that answers elicitations
// (a form one field at a time, or consent to a URL), and how a question
// and its answer are shown (FormatRequest, FormatElicitation,
// FormatElicitationAnswer). Every agent string shown goes through
// acp.SafeText.
package ask

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// The --permission policies.
const (
	PermAsk    = "ask"
	PermAllow  = "allow"
	PermReject = "reject"
	PermPlan   = "plan"
	PermReads  = "reads"
)

// The --non-interactive-permissions policies: what a permission request
// gets when nobody can be asked.
const (
	NonInteractiveDeny = "deny"
	NonInteractiveFail = "fail"
)

// AllowingReads allows a request whose tool call the agent calls a read or
// a search, and hands any other to ask. The kind is the agent's word (plan
// mode is the host-enforced way to allow reads only).
func AllowingReads(ask acphost.PermissionFunc) acphost.PermissionFunc {
	return func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		if IsRead(req) {
			return acphost.AllowAll()(ctx, req)
		}
		return ask(ctx, req)
	}
}

// IsRead reports whether --permission reads allows req: a read or a
// search that, by what it carries, changes nothing (no diff, no option
// whose structured changes write; see acphost.PermissionRequest.ReadOnly).
func IsRead(req *acp.PermissionRequest) bool {
	k := req.ToolCall.Kind
	return (k == acp.ToolRead || k == acp.ToolSearch) && req.ReadOnly()
}

// Approver is the "ask" policy: it shows a permission request and reads
// the user's choice, by number, from standard input.
type Approver struct {
	in  *tty.Inbox
	scr *tty.Screen // where the question goes: stdout, or stderr with --json
	// showRequest prints the whole request first (with --json; the human
	// renderer has already shown it).
	showRequest bool
	// echo writes the answer after the question, for input that is not a
	// terminal and so is not echoed.
	echo bool
	// turn lets one question at a time read stdin (an agent may leave
	// several requests open at once).
	turn chan struct{}
}

// NewApprover returns the "ask" policy; seat is the one place at stdin,
// shared with the elicitation prompt.
func NewApprover(in *tty.Inbox, scr *tty.Screen, showRequest, echo bool, seat chan struct{}) *Approver {
	return &Approver{in: in, scr: scr, showRequest: showRequest, echo: echo, turn: seat}
}

// Decide is the ACPOptions.OnPermission of the "ask" policy.
func (ap *Approver) Decide(ctx context.Context, req *acp.PermissionRequest) (string, error) {
	if len(req.Options) == 0 {
		return "", errors.New("the request offers no option")
	}
	waited, err := acquire(ctx, ap.turn)
	if err != nil {
		return "", err
	}
	defer func() { <-ap.turn }()
	if ap.showRequest || waited { // shown by the renderer, but other questions came since
		ap.scr.Block(FormatRequest(ap.scr, req))
	}
	ap.scr.SetPaused(true)
	defer ap.scr.SetPaused(false)
	heading, _ := req.Heading()
	if heading = tty.OneLine(acp.SafeText(heading), 40); heading == "" {
		heading = "permission"
	}
	question := ap.scr.Style(tty.StyleAsk, fmt.Sprintf("%s: choose 1-%d (y: allow once, n: reject):", heading, len(req.Options)))
	for {
		ap.scr.Prompt(question)
		line, ok, err := ap.in.Ask(ctx)
		switch {
		case err != nil:
			// Cancelled, withdrawn or closed: the client has answered already.
			ap.scr.Unprompt()
			return "", err
		case !ok:
			ap.scr.BreakLine()
			ap.scr.Line(tty.StyleYellow, "no more input: rejecting")
			return acphost.RejectOption(req), nil
		}
		ap.scr.Answered(acp.SafeText(line), ap.echo)
		if id, ok := parseChoice(line, req); ok {
			return id, nil
		}
		ap.scr.Line(tty.StyleYellow, fmt.Sprintf("%q is not a choice", tty.OneLine(acp.SafeText(line), 40)))
	}
}

// parseChoice maps an answer to an option id: a number (1-based, in the
// agent's order), "y"/"yes" for the first allow option, "n"/"no" for the
// first reject option.
func parseChoice(line string, req *acp.PermissionRequest) (string, bool) {
	s := strings.ToLower(strings.TrimSpace(line))
	if n, err := strconv.Atoi(s); err == nil {
		if n >= 1 && n <= len(req.Options) && req.Options[n-1].ID != "" {
			return req.Options[n-1].ID, true
		}
		return "", false
	}
	var id string
	switch s {
	case "y", "yes":
		id = acphost.AllowOption(req)
	case "n", "no":
		id = acphost.RejectOption(req)
	}
	return id, id != ""
}

// Limits of what a permission request shows.
const (
	maxHeadingLines = 20
	maxInputRunes   = 600
	maxDiffLines    = 40
	maxContentLines = 10
)

// FormatRequest renders a permission request for the terminal: heading,
// description, tool kind and title, input, locations, content (diffs) and
// the numbered options with their kinds and structured changes. Every
// agent string goes through acphost.SafeText (Describe does it itself).
func FormatRequest(s *tty.Screen, req *acp.PermissionRequest) string {
	var b strings.Builder
	heading, fromPresentation := req.Heading()
	writeHeading(&b, s, "? Permission: ", heading, "The agent asks for permission")
	if p := req.Presentation; p.Present() && p.HasDescription {
		if d := strings.TrimSpace(p.SafeDescription()); d != "" {
			for _, l := range capLines(strings.Split(d, "\n"), maxHeadingLines) {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	tc := req.ToolCall
	kind := acp.SafeText(string(tc.Kind))
	if kind == "" {
		kind = "tool"
	}
	tool := s.Style(tty.StyleCyan, kind)
	if title := tty.OneLine(acp.SafeText(tc.Title), 120); title != "" && (fromPresentation || title != tty.OneLine(heading, 120)) {
		tool += " " + title
	}
	b.WriteString("  tool: " + tool + "\n")
	// A diff shows a write better than the raw input, which carries the
	// same text escaped (opencode sends both).
	hasDiff := slices.ContainsFunc(tc.Content, func(c acp.ToolCallContent) bool { return c.Diff != nil })
	if label, in := inputLine(tc.RawInput); in != "" && !hasDiff {
		b.WriteString("  " + label + ": " + in + "\n")
	}
	for _, loc := range tc.Locations {
		l := acp.SafeText(s.ShownPath(loc.Path))
		if loc.Line != nil {
			l += ":" + strconv.Itoa(*loc.Line)
		}
		b.WriteString("  file: " + l + "\n")
	}
	writeToolContent(&b, s, tc.Content)
	for i, o := range req.Options {
		name := tty.OneLine(acp.SafeText(o.Name), 80)
		if name == "" {
			name = tty.OneLine(acp.SafeText(o.ID), 80)
		}
		fmt.Fprintf(&b, "  %s %s %s\n", s.Style(tty.StyleBold, strconv.Itoa(i+1)+")"), name,
			s.Style(tty.StyleDim, "["+acp.SafeText(string(o.Kind))+"]"))
		if o.Meta.HasDescription {
			if d := tty.OneLine(acp.SafeText(o.Meta.Description), 200); d != "" {
				b.WriteString("       " + d + "\n")
			}
		}
		for _, c := range o.Meta.Changes {
			mark := "-"
			if !c.Known() {
				mark = "?"
			}
			b.WriteString("       " + mark + " " + c.Describe() + "\n")
		}
	}
	return b.String()
}

// writeToolContent shows a tool call's content: diffs (capped), text
// (first lines) and terminals.
func writeToolContent(b *strings.Builder, s *tty.Screen, content []acp.ToolCallContent) {
	for _, c := range content {
		switch {
		case c.Diff != nil:
			d := *c.Diff
			d.Path = s.ShownPath(d.Path)
			text, st := d.Unified(acp.DiffOptions{MaxLines: maxDiffLines})
			fmt.Fprintf(b, "  diff %s %s\n", acp.SafeText(d.Path), s.Style(tty.StyleDim, fmt.Sprintf("(+%d -%d)", st.Added, st.Removed)))
			for _, l := range strings.Split(strings.TrimRight(acp.SafeText(text), "\n"), "\n") {
				code := ""
				switch {
				case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
					code = tty.StyleBold
				case strings.HasPrefix(l, "+"):
					code = tty.StyleGreen
				case strings.HasPrefix(l, "-"):
					code = tty.StyleRed
				case strings.HasPrefix(l, "@@"):
					code = tty.StyleCyan
				}
				b.WriteString("    " + s.Style(code, l) + "\n")
			}
		case c.Content != nil && c.Content.Type == acp.BlockText:
			text := strings.TrimSpace(acp.SafeText(c.Content.Text))
			if reason, ok := AdapterPrompt(text); ok {
				text = reason // the decisions are the options below
			}
			if text == "" {
				continue
			}
			for _, l := range capLines(strings.Split(text, "\n"), maxContentLines) {
				b.WriteString("    " + s.Style(tty.StyleDim, l) + "\n")
			}
		case c.TerminalID != "":
			b.WriteString("  terminal " + acp.SafeText(c.TerminalID) + "\n")
		}
	}
}

// AdapterPrompt reports whether text is an adapter's own approval prompt
// put in the tool call's content — Codex's Rust adapter (codex-acp) sends
// "REASON\nProposed Amendment: …\nAvailable Decisions: Approved\n…", its
// decisions being the request's options — and returns the reason alone
// (may be empty). Such text is the question, not the tool's output: the
// dialog shows the reason and the options, the tool's output leaves it out.
func AdapterPrompt(text string) (reason string, ok bool) {
	lines := strings.Split(text, "\n")
	cut := -1
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if cut < 0 && (strings.HasPrefix(l, "Proposed ") || strings.HasPrefix(l, "Available Decisions:")) {
			cut = i
		}
		if strings.HasPrefix(l, "Available Decisions:") {
			return strings.TrimSpace(strings.Join(lines[:cut], "\n")), true
		}
	}
	return "", false
}

// capLines keeps the first max lines and notes how many were left out.
func capLines(lines []string, max int) []string {
	if len(lines) <= max {
		return lines
	}
	out := append([]string(nil), lines[:max]...)
	return append(out, fmt.Sprintf("… %d more lines", len(lines)-max))
}

// writeHeading writes a prompt's heading: the agent's text made safe (or
// fallback when it is empty) after label, at most maxHeadingLines lines.
func writeHeading(b *strings.Builder, s *tty.Screen, label, text, fallback string) {
	text = strings.TrimSpace(acp.SafeText(text))
	if text == "" {
		text = fallback
	}
	lines := capLines(strings.Split(text, "\n"), maxHeadingLines)
	b.WriteString(s.Style(tty.StyleAsk, label) + s.Style(tty.StyleBold, lines[0]) + "\n")
	for _, l := range lines[1:] {
		b.WriteString("    " + s.Style(tty.StyleBold, l) + "\n")
	}
}

// ReasonNote says why an answer was given where the person did not give
// it ("" for a hook's own answer).
func ReasonNote(r acphost.AnswerReason, err error) string {
	switch r {
	case acphost.ReasonTimeout:
		return " · timed out"
	case acphost.ReasonInvalid:
		return " · " + tty.OneLine(tty.ErrMsg(err), 120)
	case acphost.ReasonWithdrawn:
		return " · withdrawn by the agent"
	case acphost.ReasonCancelled:
		return " · turn cancelled"
	case acphost.ReasonClosed:
		return " · closing"
	}
	return ""
}
