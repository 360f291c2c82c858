package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/ask"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

func allowOnce() *acp.PermissionOption {
	return &acp.PermissionOption{ID: "allow", Name: "Allow", Kind: acp.AllowOnce}
}

// A turn for people: text, a tool line with its mark, the last lines of
// its output, the plan, an answer and how the turn ended.
func TestHumanTurn(t *testing.T) {
	var out bytes.Buffer
	h := NewHuman(tty.NewScreen(&out, false, false), ask.PermAllow, ask.ElicitDecline)
	h.ToolOutput = 2
	h.BeginTurn("hi", true)
	h.Event(acphost.StreamEvent{Type: acphost.EventThought, Delta: "pondering"})
	h.Event(acphost.StreamEvent{Type: acphost.EventText, Delta: "Hello\x1b[31m"})
	h.Event(acphost.StreamEvent{Type: acphost.EventToolCall, ID: "t1", Name: "ls", Kind: acp.ToolExecute, Status: acp.StatusPending})
	h.Event(acphost.StreamEvent{Type: acphost.EventPermissionAnswer, ID: "t1", Answer: &acphost.PermissionAnswer{OptionID: "allow", Option: allowOnce(), Reason: acphost.ReasonHook}})
	h.Event(acphost.StreamEvent{Type: acphost.EventToolResult, ID: "t1", Name: "ls", Kind: acp.ToolExecute, Status: acp.StatusCompleted,
		Output: json.RawMessage(`{"stdout":"a\nb\nc\n"}`)})
	h.Event(acphost.StreamEvent{Type: acphost.EventPlan, Plan: []acp.PlanEntry{{Content: "look", Status: "completed"}, {Content: "fix", Status: "pending"}}})
	h.Event(acphost.StreamEvent{Type: acphost.EventUsage, Usage: &acp.UsageUpdate{Used: 1200, Size: 200000}})
	h.EndTurn(TurnResult{Stop: acp.StopEndTurn, Elapsed: 1500 * time.Millisecond})
	got := out.String()
	for _, want := range []string{"› hi\n", "[thinking] pondering", "Hello", "  ✓ execute ls\n", "→ Allow [allow_once] · --permission allow",
		"    ┆ 1 more lines above (--tool-output all shows them)\n    │ b\n    │ c\n", "  [x] look\n  [ ] fix\n", "✓ end_turn · 1.5s · 1.2k/200.0k context"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("an escape reaches the terminal: %q", got)
	}
}

// A refused tool call the agent reports completed is marked refused.
func TestHumanRefusedTool(t *testing.T) {
	var out bytes.Buffer
	h := NewHuman(tty.NewScreen(&out, false, false), ask.PermReject, ask.ElicitDecline)
	h.BeginTurn("go", false)
	h.Event(acphost.StreamEvent{Type: acphost.EventToolCall, ID: "t1", Name: "rm", Kind: acp.ToolDelete})
	h.Event(acphost.StreamEvent{Type: acphost.EventPermissionAnswer, ID: "t1",
		Answer: &acphost.PermissionAnswer{OptionID: "no", Option: &acp.PermissionOption{ID: "no", Name: "No", Kind: acp.RejectOnce}, Reason: acphost.ReasonHook}})
	h.Event(acphost.StreamEvent{Type: acphost.EventToolResult, ID: "t1", Name: "rm", Kind: acp.ToolDelete, Status: acp.StatusCompleted})
	h.EndTurn(TurnResult{Stop: acp.StopEndTurn, Err: errors.New("x"), UserCancel: true})
	if got := out.String(); !strings.Contains(got, "✗ delete rm (rejected; the agent reports it completed)") || !strings.Contains(got, "→ No [reject_once] · --permission reject") {
		t.Errorf("refused tool:\n%s", got)
	}
}

func TestRefusal(t *testing.T) {
	for want, a := range map[string]*acphost.PermissionAnswer{
		"":                      {Option: allowOnce()},
		"cancelled":             {Cancelled: true},
		"rejected":              {Option: &acp.PermissionOption{Kind: acp.RejectAlways}},
		"rejected by plan mode": {Option: &acp.PermissionOption{Kind: acp.RejectOnce}, Reason: acphost.ReasonPlanMode},
	} {
		if got := Refusal(a); got != want {
			t.Errorf("Refusal(%+v) = %q, want %q", a, got, want)
		}
	}
}

func TestToolOutputLines(t *testing.T) {
	for raw, want := range map[string]string{
		`"one\n\ttwo\n\n"`:                     "one|    two",
		`{"stdout":"x","stderr":"y","code":1}`: "x|y",
		`{"code":1}`:                           `{"code":1}`,
		"```\ncode\n```":                       "code",
		`"` + "```sh\\nls\\n```" + `"`:         "ls",
	} {
		got := strings.Join(toolOutputLines(acphost.StreamEvent{Output: json.RawMessage(raw)}), "|")
		if got != want {
			t.Errorf("toolOutputLines(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestFmtCount(t *testing.T) {
	for n, want := range map[uint64]string{950: "950", 12345: "12.3k", 1234567: "1.2M"} {
		if got := fmtCount(n); got != want {
			t.Errorf("fmtCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// --json: one object per line; a permission answer decided without asking
// is followed by its permission_decision line; the turn ends in a result.
func TestJSONSink(t *testing.T) {
	var out bytes.Buffer
	j := NewJSONSink(&out)
	j.Decision = func(id string, _ *acphost.PermissionAnswer) (string, string, bool) {
		return "policy", "rules.json:3", id == "t1"
	}
	j.BeginTurn("go", false)
	j.Event(acphost.StreamEvent{Type: acphost.EventText, Delta: "<b>"})
	j.Event(acphost.StreamEvent{Type: acphost.EventPermissionAnswer, ID: "t1", Answer: &acphost.PermissionAnswer{OptionID: "allow", Option: allowOnce(), Reason: acphost.ReasonHook}})
	j.ElicitationComplete(acp.ElicitationComplete{ElicitationID: "e1"})
	j.EndTurn(TurnResult{Resp: acphost.Response{Text: "done"}, Stop: acp.StopEndTurn, Elapsed: 20 * time.Millisecond})
	var lines []JSONLine
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var jl JSONLine
		if err := json.Unmarshal([]byte(l), &jl); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		lines = append(lines, jl)
	}
	if len(lines) != 5 || lines[0].Delta != "<b>" || lines[1].OptionKind != "allow_once" ||
		lines[2].Type != "permission_decision" || lines[2].DecidedBy != "policy" || lines[2].Rule != "rules.json:3" ||
		lines[3].Type != "elicitation_complete" || lines[4].Type != "result" || *lines[4].Text != "done" || *lines[4].DurationMS != 20 {
		t.Errorf("lines:\n%s", out.String())
	}
	if !strings.Contains(out.String(), `"delta":"<b>"`) {
		t.Errorf("HTML is escaped: %s", out.String())
	}
}

// --quiet: the agent's last message only, after the last tool call.
func TestQuietSink(t *testing.T) {
	var out bytes.Buffer
	q := NewQuietSink(&out)
	q.BeginTurn("go", false)
	q.Event(acphost.StreamEvent{Type: acphost.EventText, Delta: "Let me look."})
	q.Event(acphost.StreamEvent{Type: acphost.EventToolCall, ID: "t1"})
	q.Event(acphost.StreamEvent{Type: acphost.EventText, Delta: " The answer"})
	q.Event(acphost.StreamEvent{Type: acphost.EventText, Delta: " is 4.\n"})
	q.EndTurn(TurnResult{})
	if out.String() != "The answer is 4.\n" {
		t.Errorf("quiet: %q", out.String())
	}
}

// The closing line shows the turn's tokens and the session's cost where
// the agent reported them; --json's result line carries them.
func TestClosingLineShowsTokensAndCost(t *testing.T) {
	n := func(v uint64) *uint64 { return &v }
	resp := acphost.Response{
		Usage: &acp.Usage{TotalTokens: 1540, InputTokens: 1500, OutputTokens: 40, ThoughtTokens: n(12), CachedReadTokens: n(1200), CachedWriteTokens: n(0)},
		Cost:  &acp.Cost{Amount: 0.0123, Currency: "USD\x1b[2J"},
	}
	var out bytes.Buffer
	h := NewHuman(tty.NewScreen(&out, false, false), ask.PermAllow, ask.ElicitDecline)
	h.BeginTurn("hi", false)
	h.Event(acphost.StreamEvent{Type: acphost.EventUsage, Usage: &acp.UsageUpdate{Used: 7900, Size: 200000, Cost: &acp.Cost{Amount: 0.01, Currency: "USD"}}})
	h.EndTurn(TurnResult{Resp: resp, Stop: acp.StopEndTurn, Elapsed: 1500 * time.Millisecond})
	want := "✓ end_turn · 1.5s · 1.5k in + 40 out tokens (12 thought, 1.2k cache read) · 7.9k/200.0k context · 0.0123 USD\n"
	if got := out.String(); !strings.HasSuffix(strings.TrimRight(got, "\n")+"\n", want) {
		t.Errorf("closing line:\n%q\nwant it to end with\n%q", got, want)
	}

	out.Reset()
	h.BeginTurn("hi", false)
	h.EndTurn(TurnResult{Stop: acp.StopEndTurn, Elapsed: 1500 * time.Millisecond})
	if got := strings.TrimSpace(out.String()); got != "✓ end_turn · 1.5s" {
		t.Errorf("nothing reported: %q", got)
	}

	out.Reset()
	j := NewJSONSink(&out)
	j.EndTurn(TurnResult{Resp: resp, Stop: acp.StopEndTurn, Elapsed: 1500 * time.Millisecond})
	var line map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if got := string(line["usage"]); got != `{"totalTokens":1540,"inputTokens":1500,"outputTokens":40,"thoughtTokens":12,"cachedReadTokens":1200,"cachedWriteTokens":0}` {
		t.Errorf("usage: %s", got)
	}
	if got := string(line["cost"]); got != `{"amount":0.0123,"currency":"USD\u001b[2J"}` {
		t.Errorf("cost: %s", got)
	}
	out.Reset()
	j.EndTurn(TurnResult{Stop: acp.StopEndTurn})
	if strings.Contains(out.String(), "usage") || strings.Contains(out.String(), "cost") {
		t.Errorf("nothing reported, yet: %s", out.String())
	}
}

// codexRustApproval is a permission request of Codex's Rust adapter
// (codex-acp 0.16.0, as recorded): its own approval prompt, "Available
// Decisions" included, is the tool call's text content.
const codexRustApproval = `{"sessionId":"01a228f6","toolCall":{"toolCallId":"call_mock_0048","kind":"execute","status":"pending","title":"echo hi > out.txt",
 "content":[{"type":"content","content":{"type":"text",
  "text":"Allow writing out.txt?\nProposed Amendment: /bin/bash\n-lc\necho hi > out.txt\nAvailable Decisions: Approved\nApprovedExecpolicyAmendment\nAbort"}}],
 "rawInput":{"call_id":"call_mock_0048","command":["/bin/bash","-lc","echo hi > out.txt"],"cwd":"/repo/codex-allow","reason":"Allow writing out.txt?",
  "proposed_execpolicy_amendment":["/bin/bash","-lc","echo hi > out.txt"],
  "available_decisions":["approved",{"approved_execpolicy_amendment":{"proposed_execpolicy_amendment":["/bin/bash","-lc","echo hi > out.txt"]}},"abort"]}},
 "options":[{"optionId":"approved","name":"Yes, proceed","kind":"allow_once"},
  {"optionId":"approved-execpolicy-amendment","name":"Yes, and don't ask again for commands that start with ` + "`/bin/bash -lc echo hi > out.txt`" + `","kind":"allow_always"},
  {"optionId":"abort","name":"No, and tell Codex what to do differently","kind":"reject_once"}]}`

// A Codex (Rust) approval shows its reason and the options, not the
// adapter's "Available Decisions" listing; once the tool ran, the prompt
// is not shown again as its output — the answer line says what was
// decided.
func TestHumanCodexApprovalShowsTheDecision(t *testing.T) {
	req, err := acp.ParsePermissionRequest(json.RawMessage(codexRustApproval))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	h := NewHuman(tty.NewScreen(&out, false, false), ask.PermAllow, ask.ElicitDecline)
	h.BeginTurn("write it", false)
	tc := req.ToolCall
	h.Event(acphost.StreamEvent{Type: acphost.EventPermission, ID: tc.ID, Name: tc.Title, Permission: req, ToolCall: &tc})
	h.Event(acphost.StreamEvent{Type: acphost.EventPermissionAnswer, ID: tc.ID, Answer: &acphost.PermissionAnswer{OptionID: "approved", Option: &req.Options[0], Reason: acphost.ReasonHook}})
	done := tc
	done.Status = acp.StatusCompleted
	h.Event(acphost.StreamEvent{Type: acphost.EventToolResult, ID: tc.ID, Name: tc.Title, Kind: acp.ToolExecute, Status: acp.StatusCompleted, ToolCall: &done})
	h.EndTurn(TurnResult{Stop: acp.StopEndTurn})
	got := out.String()
	for _, bad := range []string{"Available Decisions", "ApprovedExecpolicyAmendment", "Proposed Amendment", "│ Allow writing"} {
		if strings.Contains(got, bad) {
			t.Errorf("shows the adapter's prompt (%q):\n%s", bad, got)
		}
	}
	for _, want := range []string{"Allow writing out.txt?", "1) Yes, proceed [allow_once]", "→ Yes, proceed [allow_once]", "✓ execute echo hi > out.txt"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
}

// --json never says "hook" (the library's word for acphost's own hooks):
// an answer acphost gave without asking carries who decided, one the
// person gave "person", an --elicit policy's answer "elicit"; the
// library's other reasons stay.
func TestJSONSinkSaysWhoAnswered(t *testing.T) {
	var out bytes.Buffer
	j := NewJSONSink(&out)
	j.Decision = func(id string, _ *acphost.PermissionAnswer) (string, string, bool) {
		return "permission", "--permission allow", id == "t1"
	}
	j.Elicit = "decline"
	hook := func(id string) acphost.StreamEvent {
		return acphost.StreamEvent{Type: acphost.EventPermissionAnswer, ID: id, Answer: &acphost.PermissionAnswer{OptionID: "allow", Option: allowOnce(), Reason: acphost.ReasonHook}}
	}
	j.Event(hook("t1"))
	j.Event(hook("t2"))
	j.Event(acphost.StreamEvent{Type: acphost.EventPermissionAnswer, ID: "t3", Answer: &acphost.PermissionAnswer{Cancelled: true, Reason: acphost.ReasonTimeout}})
	j.Event(acphost.StreamEvent{Type: acphost.EventElicitationAnswer, ID: "e1", ElicitationAnswer: &acphost.ElicitationAnswer{Action: acp.ElicitDecline, Reason: acphost.ReasonHook}})
	j.Elicit = "ask"
	j.Event(acphost.StreamEvent{Type: acphost.EventElicitationAnswer, ID: "e2", ElicitationAnswer: &acphost.ElicitationAnswer{Action: acp.ElicitDecline, Reason: acphost.ReasonHook}})
	var reasons []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var jl JSONLine
		if err := json.Unmarshal([]byte(l), &jl); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if jl.Type != "permission_decision" {
			reasons = append(reasons, jl.Reason)
		}
	}
	if want := []string{"permission", "person", "timeout", "elicit", "person"}; strings.Join(reasons, " ") != strings.Join(want, " ") {
		t.Errorf("reasons %q, want %q:\n%s", reasons, want, out.String())
	}
}
