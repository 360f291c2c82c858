//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// The choice the host picks in the elicitation scenario: the second option,
// so that a default or a first-option fallback cannot pass for it.
var askPick = AskOptions[1][0]

// elicitation: the mock's model calls AskUserQuestion. With OnElicitation
// set (so clientCapabilities.elicitation.form is advertised), the adapter
// asks the host with a form elicitation/create; the host accepts one of the
// choices, and the tool result the adapter returns to its model carries
// that choice. No permission is asked for the tool.
func testElicitation(t *testing.T, a Agent) {
	var mu sync.Mutex
	var asked []*acp.ElicitationRequest
	s := start(t, a, func(_ *session, o *acphost.ACPOptions) {
		o.Elicitation.OnRequest = func(_ context.Context, req *acp.ElicitationRequest) (acphost.ElicitationAnswer, error) {
			mu.Lock()
			asked = append(asked, req)
			mu.Unlock()
			return acphost.ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"question_0": askPick}}, nil
		}
	})
	r := s.turn(turnCtx(t), prompt("ask:color"))
	if r.err != nil {
		t.Fatalf("turn failed: %v", r.err)
	}
	if r.resp.StopReason != acp.StopEndTurn {
		t.Errorf("stop reason %q; want end_turn", r.resp.StopReason)
	}
	mu.Lock()
	reqs := append([]*acp.ElicitationRequest(nil), asked...)
	mu.Unlock()
	if len(reqs) != 1 {
		t.Fatalf("OnElicitation was called %d times; want once", len(reqs))
	}
	req := reqs[0]
	t.Logf("elicitation/create params: %s", req.Raw)
	checkAskForm(t, req)
	if n := len(s.permissions()); n > 0 {
		t.Errorf("%d permission request(s) for AskUserQuestion; the elicitation is the only question", n)
	}
	if n, m := r.count(acphost.EventElicitation), r.count(acphost.EventElicitationAnswer); n != 1 || m != 1 {
		t.Errorf("%d elicitation and %d elicitation_answer events; want one each", n, m)
	}
	for _, ev := range r.events {
		if ev.Type == acphost.EventElicitationAnswer {
			if an := ev.ElicitationAnswer; an.Action != acp.ElicitAccept || an.Reason != acphost.ReasonHook || an.Err != nil || an.Content["question_0"] != askPick {
				t.Errorf("elicitation answer %+v; want accept %q by the hook", an, askPick)
			}
		}
	}

	// The model's next call carries the tool result with the choice.
	var asks, finals []MockCall
	for _, c := range s.mock.Calls() {
		switch c.Action {
		case "tool:AskUserQuestion":
			asks = append(asks, c)
		case "final":
			finals = append(finals, c)
		}
	}
	if len(asks) != 1 || len(finals) == 0 {
		s.dump()
		t.Fatalf("model calls: %d AskUserQuestion, %d final; want 1 and at least 1", len(asks), len(finals))
	}
	res, ok := anthropicToolResult(t, finals[0].Body, req.ToolCallID)
	if !ok {
		t.Fatalf("the model's call after the question has no tool_result for %s", req.ToolCallID)
	}
	t.Logf("tool_result sent to the model: %s", res.raw)
	if res.isError {
		t.Errorf("the tool result is an error: %q", res.text)
	}
	// The tool's own answer format: "question"="label".
	if want := fmt.Sprintf("%q=%q", AskQuestion, askPick); !strings.Contains(res.text, want) {
		t.Errorf("tool result %q does not carry the answer %s", res.text, want)
	}
	if !strings.Contains(r.resp.Text, FinalText) {
		t.Errorf("response text %q lacks the mock's final text", r.resp.Text)
	}
	found := false
	for _, tc := range r.resp.ToolCalls {
		if tc.ID == req.ToolCallID {
			found = true
			if tc.Status != acp.StatusCompleted {
				t.Errorf("the AskUserQuestion tool call ended %q; want completed", tc.Status)
			}
		}
	}
	if !found {
		t.Errorf("the elicitation's tool call %q is not among the response's tool calls %v", req.ToolCallID, toolIDs(r.resp.ToolCalls))
	}
}

// checkAskForm checks the decoded form of the mock's one question: its
// options as choices of an enum field, then the adapter's free-text field.
func checkAskForm(t *testing.T, req *acp.ElicitationRequest) {
	t.Helper()
	if req.Mode != acp.ModeForm || req.Form == nil {
		t.Fatalf("mode %q, form %v; want a form", req.Mode, req.Form)
	}
	if req.Message != AskQuestion {
		t.Errorf("message %q; want the question %q", req.Message, AskQuestion)
	}
	if !strings.HasPrefix(req.ToolCallID, "toolu_mock_") {
		t.Errorf("toolCallId %q; want the mock's tool_use id", req.ToolCallID)
	}
	f := req.Form.Field("question_0")
	if f == nil {
		t.Fatalf("no field question_0 in %s", req.Form.Raw)
	}
	if f.Kind != acp.FormEnum || f.Title != AskHeader || f.Required {
		t.Errorf("question_0: kind %q title %q required %v; want an optional enum titled %q", f.Kind, f.Title, f.Required, AskHeader)
	}
	var got, want []string
	for _, c := range f.Choices {
		got = append(got, fmt.Sprintf("%s=%s (%s)", c.Value, c.Title, c.Description))
	}
	for _, o := range AskOptions {
		want = append(want, fmt.Sprintf("%s=%s (%s)", o[0], o[0], o[1]))
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("choices %q; want %q", got, want)
	}
	if c := req.Form.Field("question_0_custom"); c == nil || c.Kind != acp.FormString || c.Required {
		t.Errorf("question_0_custom %+v; want an optional free-text field", c)
	}
	if len(req.Form.Fields) != 2 {
		t.Errorf("%d fields; want question_0 and question_0_custom", len(req.Form.Fields))
	}
}

// no-elicitation: without OnElicitation the client does not advertise
// elicitation, and the adapter leaves AskUserQuestion out of the tools it
// offers its model; the scripted question then has no tool to go to.
func testNoElicitation(t *testing.T, a Agent) {
	s := start(t, a, nil)
	s.setPolicy(allowOnce)
	r := s.turn(turnCtx(t), prompt("ask:color"))
	if r.err != nil {
		t.Fatalf("turn failed: %v", r.err)
	}
	if !strings.Contains(r.resp.Text, "mock: no tool for step ask") {
		t.Errorf("response text %q; want the mock's note that no tool could ask", r.resp.Text)
	}
	if n := r.count(acphost.EventElicitation); n > 0 {
		t.Errorf("%d elicitation events without OnElicitation", n)
	}
	var first *MockCall
	for _, c := range s.mock.Calls() {
		if c.Body != nil && c.API == "anthropic" {
			first = &c
			break
		}
	}
	if first == nil {
		t.Fatalf("the agent made no model call with tools")
	}
	tools := anthropicTools(t, first.Body)
	if has(tools, "AskUserQuestion") {
		t.Errorf("AskUserQuestion is offered to the model without the elicitation capability")
	}
	if !has(tools, "Bash") {
		t.Errorf("the first model call offers no Bash among %d tools: the tool list was not read", len(tools))
	}
	t.Logf("first model call offers %d tools; the mock's action: %s", len(tools), first.Action)
}

func anthropicTools(t *testing.T, body []byte) map[string]toolInfo {
	t.Helper()
	var req struct {
		Tools []toolDecl `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("model request: %v", err)
	}
	return toolSet(req.Tools)
}

// toolResult is a tool_result block of an Anthropic request.
type toolResult struct {
	text    string
	isError bool
	raw     json.RawMessage
}

// anthropicToolResult finds the tool_result block for the tool call id in a
// Messages request body.
func anthropicToolResult(t *testing.T, body []byte, id string) (toolResult, bool) {
	t.Helper()
	var req struct {
		Messages []anthMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("model request: %v", err)
	}
	for _, msg := range req.Messages {
		var blocks []json.RawMessage
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, raw := range blocks {
			var b struct {
				Type      string          `json:"type"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   bool            `json:"is_error"`
			}
			if json.Unmarshal(raw, &b) != nil || b.Type != "tool_result" || b.ToolUseID != id {
				continue
			}
			var text strings.Builder
			for _, tb := range anthBlocks(b.Content) {
				text.WriteString(tb.Text)
			}
			return toolResult{text: text.String(), isError: b.IsError, raw: raw}, true
		}
	}
	return toolResult{}, false
}
