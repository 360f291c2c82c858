// Package render shows a turn: the Sink a turn's start, stream events and
// outcome go to, and its three kinds: Human (text as it streams, a line per
// tool call with the last lines of its output, the plan, permission
// requests and their answers, elapsed time and usage), JSONSink (--json,
// one object per line) and QuietSink (--quiet, the final answer only).
package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/ask"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// Sink receives a turn: its start, the library's stream events (on the
// client's dispatcher goroutine) and its outcome.
type Sink interface {
	BeginTurn(prompt string, echo bool)
	Event(ev acphost.StreamEvent)
	EndTurn(r TurnResult)
	// ElicitationComplete is ACPOptions.Elicitation.OnComplete: the agent
	// says the page of a URL elicitation the user accepted is finished.
	ElicitationComplete(c acp.ElicitationComplete)
}

// TurnResult is how a turn ended.
type TurnResult struct {
	Resp    acphost.Response
	Err     error
	Elapsed time.Duration
	// stop is the stop reason to report: the response's, or "cancelled"
	// for a turn cancelled before the agent saw it.
	Stop acp.StopReason
	// userCancel reports a turn the user cancelled with Ctrl-C and the
	// agent confirmed; it is not an error.
	UserCancel bool
}

// Human renders a turn for people: text streamed as it arrives, thoughts
// dimmed, one line per tool call with a mark when it finishes, the plan as
// a checklist, permission requests and their answers, elapsed time.
type Human struct {
	s      *tty.Screen
	policy string // the --permission policy, named in answers it made
	elicit string // the --elicit policy, likewise

	// Remembered reports (once) whether the permission of a tool call
	// was answered from an earlier "always" without asking.
	Remembered func(toolCallID string) bool
	// AnswerNote says (once) why a tool call's permission was answered
	// without asking: the policy file's rule.
	AnswerNote func(toolCallID string) string
	// HumanWait is the time the turn spent waiting for the person.
	HumanWait func() time.Duration
	// ToolOutput is how many of a finished tool's last output lines are
	// shown (--tool-output; 0 none, negative all).
	ToolOutput int

	mu        sync.Mutex        // guards the fields below (ticker vs. events)
	block     acphost.EventType // EventText or EventThought while a stream of chunks runs
	msgID     string            // the messageId of the running chunks, if the agent sends them
	mode      string            // the session mode last shown
	tools     map[string]string
	refused   map[string]string // tool call id → why its permission was refused
	urlHosts  map[string]string // URL elicitations by id: their host, for the completion line
	usage     *acp.UsageUpdate
	start     time.Time
	stopTick  chan struct{}
	tickerEnd sync.WaitGroup
}

func NewHuman(s *tty.Screen, policy, elicit string) *Human {
	return &Human{s: s, policy: policy, elicit: elicit, urlHosts: map[string]string{}, ToolOutput: DefaultToolOutput}
}

// maxURLHosts bounds the URL elicitations remembered for their completion.
const maxURLHosts = 256

func (h *Human) BeginTurn(prompt string, echo bool) {
	if echo {
		h.s.Block(h.s.Style(tty.StyleBold, "› "+acp.SafeText(prompt)))
	}
	h.mu.Lock()
	h.block, h.msgID, h.tools, h.refused, h.usage, h.start = "", "", map[string]string{}, map[string]string{}, nil, time.Now()
	h.mu.Unlock()
	if h.s.IsLive() {
		h.stopTick = make(chan struct{})
		h.tickerEnd.Add(1)
		go h.tick(h.start, h.stopTick)
	}
}

// tick shows the elapsed time while the turn waits for the agent.
func (h *Human) tick(start time.Time, stop <-chan struct{}) {
	defer h.tickerEnd.Done()
	frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			h.s.ClearStatus()
			return
		case now := <-t.C:
			h.s.ShowStatus(fmt.Sprintf("%c waiting for the agent · %s", frames[i%len(frames)], tty.FormatDuration(now.Sub(start))))
		}
	}
}

func (h *Human) Event(ev acphost.StreamEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.s
	switch ev.Type {
	case acphost.EventText, acphost.EventThought:
		if mc, ok := ev.Update.(*acp.MessageChunk); ok && mc.MessageID != "" {
			if h.block == ev.Type && h.msgID != "" && mc.MessageID != h.msgID {
				// Another message: a paragraph of its own.
				s.BreakLine()
				s.Print("", "\n")
			}
			h.msgID = mc.MessageID
		}
		h.chunk(ev.Type, acp.SafeText(ev.Delta))
		return
	case acphost.EventToolCall:
		h.tools[ev.ID] = h.toolText(ev)
		styled, plain := h.toolLine(ev)
		s.ToolLine(ev.ID, styled, plain, false)
	case acphost.EventToolUpdate:
		// A title or kind that changed while the line is still the last
		// one is updated in place; otherwise the result line will tell.
		if text := h.toolText(ev); text != h.tools[ev.ID] {
			h.tools[ev.ID] = text
			styled, plain := h.toolLine(ev)
			s.ToolLine(ev.ID, styled, plain, true)
		}
	case acphost.EventToolResult:
		styled, plain := h.toolLine(ev)
		if !s.ToolLine(ev.ID, styled, plain, true) {
			s.ToolLine(ev.ID, styled, plain, false)
		}
		if out := h.formatOutput(ev); out != "" {
			s.Block(out)
		}
	case acphost.EventPlan:
		s.Block(h.formatPlan(ev.Plan))
	case acphost.EventPermission:
		s.Block(ask.FormatRequest(s, ev.Permission))
	case acphost.EventPermissionAnswer:
		if a := ev.Answer; a != nil {
			if why := Refusal(a); why != "" {
				h.refused[ev.ID] = why
			} else {
				delete(h.refused, ev.ID)
			}
		}
		s.Block(h.formatAnswer(ev.ID, ev.Answer))
	case acphost.EventNotice:
		if n := ev.Notice; n != nil {
			text := "notice: " + tty.OneLine(acp.SafeText(n.Title), 200)
			if d := tty.OneLine(acp.SafeText(n.Description), 300); d != "" {
				text += " — " + d
			}
			s.Line(tty.StyleYellow, text)
		}
	case acphost.EventElicitation:
		if req := ev.Elicitation; req != nil && req.Mode == acp.ModeURL {
			if len(h.urlHosts) >= maxURLHosts {
				clear(h.urlHosts)
			}
			h.urlHosts[req.ElicitationID] = ask.URLHost(req.URL)
		}
		if h.elicit != ask.ElicitAsk { // else the form prompt shows it
			s.Block(ask.FormatElicitation(s, ev.Elicitation, false))
		}
	case acphost.EventElicitationAnswer:
		s.Block(ask.FormatElicitationAnswer(s, h.elicit, ev))
	case acphost.EventUsage:
		h.usage = ev.Usage
		return
	case acphost.EventMode:
		if ev.Mode != h.mode {
			h.mode = ev.Mode
			s.Line(tty.StyleYellow, "the agent's mode is now "+acp.SafeText(ev.Mode))
		}
	case acphost.EventRestart:
		var rs *acphost.RestartError
		switch {
		case errors.As(ev.Err, &rs) && !rs.ContextLost && rs.How == "new":
			s.Line(tty.StyleYellow, "the agent was restarted; session "+acp.SafeText(rs.OldSessionID)+" had no conversation yet: continuing in session "+acp.SafeText(rs.NewSessionID))
		case errors.As(ev.Err, &rs) && !rs.ContextLost:
			s.Line(tty.StyleYellow, "the agent was restarted; session "+acp.SafeText(rs.OldSessionID)+" re-attached by "+acp.SafeText(rs.How)+", with its conversation")
		default:
			s.Line(tty.StyleYellow, "the agent was restarted; the conversation so far is lost: "+tty.ErrMsg(ev.Err))
		}
	default: // done and error: endTurn reports them
		return
	}
	h.block = ""
}

// chunk streams a piece of text or thought, starting a new line when the
// stream switches from one to the other.
func (h *Human) chunk(kind acphost.EventType, text string) {
	if text == "" {
		return
	}
	s := h.s
	if h.block != kind {
		s.BreakLine()
		if kind == acphost.EventThought && !s.HasColor() {
			s.Print("", "[thinking] ")
		}
		h.block = kind
	}
	code := ""
	if kind == acphost.EventThought {
		code = tty.StyleThink
	}
	s.Print(code, text)
}

func (h *Human) toolText(ev acphost.StreamEvent) string {
	return string(ev.Kind) + "\x00" + ev.Name
}

// toolLine is "  ⋯ execute ls", with ✓ or ✗ once finished.
func (h *Human) toolLine(ev acphost.StreamEvent) (styled, plain string) {
	mark, code := "⋯", tty.StyleDim
	switch ev.Status {
	case acp.StatusCompleted:
		mark, code = "✓", tty.StyleGreen
	case acp.StatusFailed:
		mark, code = "✗", tty.StyleRed
	}
	kind := tty.OneLine(acp.SafeText(string(ev.Kind)), 20)
	if kind == "" {
		kind = "tool"
	}
	title := tty.OneLine(acp.SafeText(ev.Name), 100)
	if title == "" {
		title = tty.OneLine(acp.SafeText(ev.ID), 40)
	}
	s := h.s
	why := ""
	if ev.Status == acp.StatusFailed {
		why = " (failed)"
		if lines := toolOutputLines(ev); len(lines) > 0 {
			why = " (failed: " + tty.OneLine(lines[len(lines)-1], 100) + ")"
		}
	}
	if r, ok := h.refused[ev.ID]; ok && ev.Status.Finished() {
		// The agent may report the call completed all the same (the
		// demo does): it did not run with permission.
		mark, code, why = "✗", tty.StyleYellow, " ("+r+")"
		if ev.Status == acp.StatusCompleted {
			why = " (" + r + "; the agent reports it completed)"
		}
	}
	plain = "  " + mark + " " + kind + " " + title + why
	styled = "  " + s.Style(code, mark) + " " + s.Style(tty.StyleCyan, kind) + " " + title + s.Style(code, why)
	return styled, plain
}

func (h *Human) formatPlan(entries []acp.PlanEntry) string {
	s := h.s
	var b strings.Builder
	b.WriteString(s.Style(tty.StyleBold, "Plan") + "\n")
	for _, e := range entries {
		box, code := "[ ]", ""
		switch e.Status {
		case "completed":
			box, code = "[x]", tty.StyleDim
		case "in_progress":
			box, code = "[~]", tty.StyleBold
		}
		b.WriteString("  " + s.Style(code, box+" "+tty.OneLine(acp.SafeText(e.Content), 200)) + "\n")
	}
	return b.String()
}

func (h *Human) formatAnswer(id string, a *acphost.PermissionAnswer) string {
	s := h.s
	if a == nil {
		return ""
	}
	var text, code string
	if a.Cancelled || a.Option == nil {
		text, code = "→ cancelled", tty.StyleYellow
	} else {
		name := tty.OneLine(acp.SafeText(a.Option.Name), 80)
		if name == "" {
			name = tty.OneLine(acp.SafeText(a.OptionID), 80)
		}
		text = "→ " + name + " [" + acp.SafeText(string(a.Option.Kind)) + "]"
		code = tty.StyleGreen
		if !a.Option.Kind.IsAllow() {
			code = tty.StyleRed
		}
	}
	switch a.Reason {
	case acphost.ReasonHook:
		if note := h.note(id); note != "" {
			text += " · " + acp.SafeText(note)
		} else if h.policy != ask.PermAsk && h.policy != ask.PermReads {
			text += " · --permission " + h.policy
		} else if h.Remembered != nil && h.Remembered(id) {
			text += " · remembered: you chose \"always\" for this tool earlier"
		}
	case acphost.ReasonPlanMode:
		text += " · plan mode"
	default:
		text += ask.ReasonNote(a.Reason, a.Err)
	}
	return "  " + s.Style(code, text)
}

// SetMode records the mode shown (in the header, after /mode), so that
// the agent's confirmation of it is not shown as a change.
func (h *Human) SetMode(id string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.mode = id
	h.mu.Unlock()
}

func (h *Human) ElicitationComplete(c acp.ElicitationComplete) {
	h.mu.Lock()
	host, ok := h.urlHosts[c.ElicitationID]
	delete(h.urlHosts, c.ElicitationID)
	h.block = ""
	h.mu.Unlock()
	what := "the page at " + host
	if !ok || host == "" {
		what = "the page of question " + tty.OneLine(acp.SafeText(c.ElicitationID), 40)
	}
	h.s.Line(tty.StyleDim, "  done: the agent says "+what+" is finished")
}

// note is answerNote's note for the tool call, if any.
func (h *Human) note(id string) string {
	if h.AnswerNote == nil {
		return ""
	}
	return h.AnswerNote(id)
}

func (h *Human) EndTurn(r TurnResult) {
	if h.stopTick != nil {
		close(h.stopTick)
		h.tickerEnd.Wait()
		h.stopTick = nil
	}
	h.mu.Lock()
	usage := h.usage
	h.block = ""
	h.mu.Unlock()
	s := h.s
	mark, code := "✓", tty.StyleGreen
	what := acp.SafeText(string(r.Stop))
	switch {
	case r.Err != nil && !r.UserCancel:
		mark, code = "✗", tty.StyleRed
		if what == "" {
			what = "failed"
		}
	case r.Stop == acp.StopCancelled:
		mark, code = "⨯", tty.StyleYellow
	}
	parts := []string{what, tty.FormatDuration(r.Elapsed)}
	if h.HumanWait != nil {
		if w := h.HumanWait(); w > 0 && w < r.Elapsed {
			parts[1] = tty.FormatDuration(r.Elapsed-w) + " working + " + tty.FormatDuration(w) + " waiting for you"
		}
	}
	if u := r.Resp.Usage; u != nil {
		parts = append(parts, turnTokens(u))
	}
	if usage != nil && usage.Size > 0 {
		parts = append(parts, fmt.Sprintf("%s/%s context", fmtCount(usage.Used), fmtCount(usage.Size)))
	}
	if c := turnCost(r.Resp, usage); c != nil {
		parts = append(parts, fmt.Sprintf("%.4f %s", c.Amount, acp.SafeText(c.Currency)))
	}
	s.Block(s.Style(code, mark) + " " + s.Style(tty.StyleDim, strings.Join(parts, " · ")) + "\n\n")
}

// turnTokens is the turn's token use as the closing line shows it: "200 in
// + 40 out tokens", then the reasoning and cache counts the agent reported.
func turnTokens(u *acp.Usage) string {
	s := fmt.Sprintf("%s in + %s out tokens", fmtCount(u.InputTokens), fmtCount(u.OutputTokens))
	var more []string
	for _, c := range []struct {
		n    *uint64
		what string
	}{{u.ThoughtTokens, "thought"}, {u.CachedReadTokens, "cache read"}, {u.CachedWriteTokens, "cache write"}} {
		if c.n != nil && *c.n > 0 {
			more = append(more, fmtCount(*c.n)+" "+c.what)
		}
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	return s
}

// turnCost is the session's cost as of the turn's end: the response's (the
// last usage_update of the turn), else the last usage event's.
func turnCost(r acphost.Response, usage *acp.UsageUpdate) *acp.Cost {
	if r.Cost != nil {
		return r.Cost
	}
	if usage != nil {
		return usage.Cost
	}
	return nil
}

// fmtCount formats a token count: 950, 12.3k, 1.2M.
func fmtCount(n uint64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1000000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// DefaultToolOutput is how many last lines of a tool's output are shown.
const DefaultToolOutput = 3

// maxOutputRunes cuts a long output line.
const maxOutputRunes = 200

// formatOutput is a finished tool's output, collapsed to its last lines:
// "    │ line", after a count of the lines left out.
func (h *Human) formatOutput(ev acphost.StreamEvent) string {
	if h.ToolOutput == 0 {
		return ""
	}
	lines := toolOutputLines(ev)
	if len(lines) == 0 || len(lines) == 1 && ev.Status == acp.StatusFailed {
		return "" // none, or the one line the failed mark shows
	}
	s := h.s
	var b strings.Builder
	if h.ToolOutput > 0 && len(lines) > h.ToolOutput {
		fmt.Fprintf(&b, "    %s\n", s.Style(tty.StyleDim, fmt.Sprintf("┆ %d more lines above (--tool-output all shows them)", len(lines)-h.ToolOutput)))
		lines = lines[len(lines)-h.ToolOutput:]
	}
	for _, l := range lines {
		if r := []rune(l); len(r) > maxOutputRunes {
			l = string(r[:maxOutputRunes-1]) + "…"
		}
		b.WriteString("    " + s.Style(tty.StyleDim, "│ "+l) + "\n")
	}
	return b.String()
}

// toolOutputLines is a tool call's output, safe to print, as lines
// without the blank ones at either end: the text of its content, or else
// its raw output (a string, the usual output fields of an object, or the
// JSON). Markdown code fences around it go.
func toolOutputLines(ev acphost.StreamEvent) []string {
	var parts []string
	if tc := ev.ToolCall; tc != nil {
		for _, c := range tc.Content {
			if c.Type == "content" && c.Content != nil && c.Content.Type == acp.BlockText && c.Content.Text != "" {
				if _, prompt := ask.AdapterPrompt(c.Content.Text); prompt {
					continue // the approval's question, shown with it; its answer is the → line
				}
				parts = append(parts, c.Content.Text)
			}
		}
	}
	raw := ev.Output
	if len(raw) == 0 && ev.ToolCall != nil {
		raw = ev.ToolCall.RawOutput
	}
	if len(parts) == 0 && len(raw) > 0 && string(raw) != "null" {
		var str string
		var obj map[string]json.RawMessage
		switch {
		case json.Unmarshal(raw, &str) == nil:
			parts = append(parts, str)
		case json.Unmarshal(raw, &obj) == nil:
			for _, k := range []string{"output", "stdout", "stderr", "error", "message", "content"} {
				if json.Unmarshal(obj[k], &str) == nil && str != "" {
					parts = append(parts, str)
				}
			}
			if len(parts) == 0 && len(obj) > 0 {
				parts = append(parts, tty.CompactJSON(raw))
			}
		default:
			parts = append(parts, tty.CompactJSON(raw))
		}
	}
	var lines []string
	for _, l := range strings.Split(acp.SafeText(strings.Join(parts, "\n")), "\n") {
		l = strings.TrimRight(l, " \t\r")
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			continue
		}
		lines = append(lines, strings.ReplaceAll(l, "\t", "    "))
	}
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// Refusal is why answer refused a permission ("rejected", "rejected by
// plan mode", "cancelled"), "" for an allow.
func Refusal(a *acphost.PermissionAnswer) string {
	switch {
	case a.Cancelled || a.Option == nil:
		return "cancelled"
	case !a.Option.Kind.IsAllow():
		if a.Reason == acphost.ReasonPlanMode {
			return "rejected by plan mode"
		}
		return "rejected"
	}
	return ""
}
