package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// formSchema asks for a required name (at least two characters), a color
// (titled choices, default green), a count (1-10, default 3) and a yes/no.
const formSchema = `{"type":"object","title":"Setup","properties":{
 "name":{"type":"string","title":"Your name","minLength":2},
 "color":{"type":"string","title":"Color","oneOf":[{"const":"red","title":"Red"},{"const":"green","title":"Green"},{"const":"blue","title":"Blue"}],"default":"green"},
 "count":{"type":"integer","title":"How many","minimum":1,"maximum":10,"default":3},
 "subscribe":{"type":"boolean","title":"Subscribe"}},
 "required":["name"]}`

// elicitScript sends one elicitation (params) and then says "after".
func elicitScript(record string, params json.RawMessage, more ...fakeagent.Step) *fakeagent.Script {
	steps := append([]fakeagent.Step{fakeagent.Elicit(params)}, more...)
	steps = append(steps, fakeagent.Say(fakeagent.Text("after")))
	return &fakeagent.Script{RecordFile: record, Turns: []fakeagent.Turn{{Steps: steps}}}
}

func formScript(record, message string) *fakeagent.Script {
	return elicitScript(record, fakeagent.FormElicitation(message, json.RawMessage(formSchema)))
}

// elicitAnswer is the client's answer to the agent's elicitation/create.
type elicitAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
}

// answerSent reads the answer the agent recorded for its (only)
// elicitation/create.
func answerSent(t *testing.T, record string) elicitAnswer {
	t.Helper()
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	var answers []elicitAnswer
	for _, m := range msgs {
		if m.Method == "" && len(m.Result) > 0 && strings.Contains(string(m.Result), `"action"`) {
			var a elicitAnswer
			if err := json.Unmarshal(m.Result, &a); err != nil {
				t.Fatal(err)
			}
			answers = append(answers, a)
		}
		if m.Method == "" && len(m.Error) > 0 {
			t.Fatalf("the client answered an error: %s", m.Raw)
		}
	}
	if len(answers) != 1 {
		t.Fatalf("answers %+v in %d messages, want one", answers, len(msgs))
	}
	return answers[0]
}

func TestElicitFormInTerminal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stdin    string
		want     elicitAnswer
		wantOut  []string
		wantNone []string
	}{
		{"typed, defaults, retries", "\nx\nAda\n\n12\nfour\n4\nmaybe\ny\n",
			elicitAnswer{"accept", map[string]any{"name": "Ada", "color": "green", "count": float64(4), "subscribe": true}},
			[]string{
				"? Question: Tell me about you",
				"Setup",
				"!decline declines, !cancel dismisses",
				"Your name (required, at least 2 characters):",
				"required: type an answer",
				"length 1 is out of range",
				"Color (Enter: Green):",
				"  1) Red\n", "  2) Green (default)\n", "  3) Blue\n",
				"How many (integer, 1 to 10; Enter: 3):",
				"12 is out of range",
				`"four" is not an integer`,
				"Subscribe (y/n; Enter: skip):",
				`"maybe" is not y or n`,
				"→ accepted: name=Ada, color=green, count=4, subscribe=true",
				"after",
			}, nil},
		{"a choice by number, optional left out", "Bob\n3\n\n\n",
			elicitAnswer{"accept", map[string]any{"name": "Bob", "color": "blue", "count": float64(3)}},
			[]string{"→ accepted: name=Bob, color=blue, count=3"}, nil},
		{"decline", "Ada\n!decline\n", elicitAnswer{Action: "decline"}, []string{"→ declined"}, []string{"accepted"}},
		{"cancel", "!cancel\n", elicitAnswer{Action: "cancel"}, []string{"→ cancelled"}, []string{"accepted"}},
		{"end of input cancels", "Ada\n", elicitAnswer{Action: "cancel"}, []string{"no more input: cancelling", "→ cancelled"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "record.jsonl")
			r := runWith(t, formScript(record, "Tell me about you"), tc.stdin, "--elicit", "ask", "-p", "x")
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			if got := answerSent(t, record); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("the agent got %+v, want %+v", got, tc.want)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(r.stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestElicitNonInteractiveDeclines(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	r := runWith(t, formScript(record, "Tell me about you"), "Ada\n", "-p", "x")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if got := answerSent(t, record); got.Action != "decline" || got.Content != nil {
		t.Errorf("the agent got %+v, want decline", got)
	}
	if !strings.Contains(r.stderr, "standard input is not a terminal: declined (--elicit ask answers from it)") {
		t.Errorf("stderr lacks the note:\n%s", r.stderr)
	}
	for _, w := range []string{"? Question: Tell me about you", "Your name", "→ declined · --elicit decline"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
		}
	}
}

func TestElicitJSON(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		want   elicitAnswer
		reason string
		note   bool
	}{
		{"declines by default", nil, elicitAnswer{Action: "decline"}, "elicit", true},
		{"--elicit cancel", []string{"--elicit", "cancel"}, elicitAnswer{Action: "cancel"}, "elicit", false},
		{"--elicit accept with values", []string{"--elicit", "accept", "--elicit-value", "name=Ada", "--elicit-value", "subscribe=yes"},
			elicitAnswer{"accept", map[string]any{"name": "Ada", "color": "green", "count": float64(3), "subscribe": true}}, "elicit", false},
		// A required field without a default or value cannot be accepted:
		// the library refuses the content and answers cancel.
		{"--elicit accept without a required value", []string{"--elicit", "accept"}, elicitAnswer{Action: "cancel"}, "invalid", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "record.jsonl")
			args := append([]string{"--json", "-p", "x"}, tc.args...)
			r := runWith(t, formScript(record, "Tell me about you"), "Ada\n", args...)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			if got := answerSent(t, record); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("the agent got %+v, want %+v", got, tc.want)
			}
			evs := events(t, r.stdout)
			if got := types(evs); !reflect.DeepEqual(got, []string{"elicitation", "elicitation_answer", "text", "done", "result"}) {
				t.Fatalf("events %v", got)
			}
			req := evs[0]
			var schema, want any
			_ = json.Unmarshal(req.Schema, &schema)
			_ = json.Unmarshal([]byte(formSchema), &want)
			if req.Mode != "form" || req.Message != "Tell me about you" || req.Title != "Setup" || !reflect.DeepEqual(schema, want) {
				t.Errorf("elicitation event %+v", req)
			}
			ans := evs[1]
			if ans.Action != tc.want.Action || ans.Reason != tc.reason || !reflect.DeepEqual(ans.Values, tc.want.Content) {
				t.Errorf("elicitation_answer %+v", ans)
			}
			if tc.reason == "invalid" && !strings.Contains(ans.Error, `"name": required`) {
				t.Errorf("elicitation_answer error %q", ans.Error)
			}
			if got := strings.Contains(r.stderr, "declined"); got != tc.note {
				t.Errorf("note on stderr %v, want %v:\n%s", got, tc.note, r.stderr)
			}
		})
	}
}

func TestElicitURL(t *testing.T) {
	const url = "https://login.example.com/device?code=AB\u202eCD"
	params := fakeagent.URLElicitation("e1", url, "Log in\x1b[2J to continue")
	complete := fakeagent.ElicitationComplete("e1")
	t.Run("accept in the terminal", func(t *testing.T) {
		record := filepath.Join(t.TempDir(), "record.jsonl")
		r := runWith(t, elicitScript(record, params, complete), "maybe\ny\n", "--elicit", "ask", "-p", "x")
		if r.code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		if got := answerSent(t, record); got.Action != "accept" || got.Content != nil {
			t.Errorf("the agent got %+v", got)
		}
		for _, w := range []string{
			"? Question: Log in to continue",
			"  open: https://login.example.com/device?code=ABCD\n",
			"  host: login.example.com\n",
			"acphost does not open it",
			"y: accept (open it yourself), n: decline, c: cancel",
			`"maybe" is not y, n or c`,
			"→ accepted",
			"done: the agent says the page at login.example.com is finished",
			"after",
		} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
			}
		}
		if strings.ContainsAny(r.stdout, "\x1b\u202e") {
			t.Errorf("agent control characters reached the terminal:\n%q", r.stdout)
		}
	})
	t.Run("decline in the terminal", func(t *testing.T) {
		record := filepath.Join(t.TempDir(), "record.jsonl")
		r := runWith(t, elicitScript(record, params), "n\n", "--elicit", "ask", "-p", "x")
		if r.code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		if got := answerSent(t, record); got.Action != "decline" {
			t.Errorf("the agent got %+v", got)
		}
	})
	t.Run("json", func(t *testing.T) {
		record := filepath.Join(t.TempDir(), "record.jsonl")
		r := runWith(t, elicitScript(record, params, complete), "", "--json", "--elicit", "accept", "-p", "x")
		if r.code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		if got := answerSent(t, record); got.Action != "accept" {
			t.Errorf("the agent got %+v", got)
		}
		evs := events(t, r.stdout)
		if got := types(evs); !reflect.DeepEqual(got, []string{"elicitation", "elicitation_answer", "elicitation_complete", "text", "done", "result"}) {
			t.Fatalf("events %v", got)
		}
		if e := evs[0]; e.Mode != "url" || e.URL != url || e.ElicitationID != "e1" || e.Message != "Log in\x1b[2J to continue" {
			t.Errorf("elicitation event %+v", e)
		}
		if e := evs[2]; e.ElicitationID != "e1" {
			t.Errorf("elicitation_complete %+v", e)
		}
	})
}

func TestElicitFormIsSafe(t *testing.T) {
	schema := `{"type":"object","title":"T\u001b]0;x\u0007itle","properties":{"c":{"type":"string","title":"Pick\u001b[31m","enum":["a\u001b[2Jb","c"]}}}`
	record := filepath.Join(t.TempDir(), "record.jsonl")
	r := runWith(t, elicitScript(record, fakeagent.FormElicitation("Q\u202e?", json.RawMessage(schema))), "1\n", "--elicit", "ask", "-p", "x")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if got := answerSent(t, record); got.Action != "accept" || got.Content["c"] != "a\x1b[2Jb" {
		t.Errorf("the agent got %+v, want the raw choice value", got)
	}
	if strings.ContainsAny(r.stdout, "\x1b\x07\u202e") {
		t.Errorf("agent control characters reached the terminal:\n%q", r.stdout)
	}
}

func TestParseArgsElicit(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		terminal bool
		policy   string
		auto     bool
	}{
		{nil, true, "ask", false},
		{nil, false, "decline", true},
		{[]string{"--json"}, true, "decline", true},
		{[]string{"--json", "--elicit", "ask"}, false, "ask", false},
		{[]string{"--elicit", "cancel"}, true, "cancel", false},
	} {
		cfg, err := parseArgs(tc.args, nilWriter{}, tc.terminal)
		if err != nil || cfg.elicit != tc.policy || cfg.elicitAuto != tc.auto {
			t.Errorf("%q (terminal %v): %q auto %v, %v; want %q auto %v", tc.args, tc.terminal, cfg.elicit, cfg.elicitAuto, err, tc.policy, tc.auto)
		}
	}
	for _, args := range [][]string{{"--elicit", "maybe"}, {"--elicit-value", "novalue"}, {"--elicit-value", "=x"}} {
		if r := runWith(t, nil, "", append(args, "-p", "x")...); r.code != 2 || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, want 2 and nothing", args, r.code, r.stdout)
		}
	}
}

type nilWriter struct{}

func (nilWriter) Write(p []byte) (int, error) { return len(p), nil }

// With --json and --elicit ask the form goes to stderr, stdout stays JSON.
func TestElicitJSONAsk(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	r := runWith(t, formScript(record, "Tell me about you"), "Ada\n1\n\nn\n", "--json", "--elicit", "ask", "-p", "x")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	want := elicitAnswer{"accept", map[string]any{"name": "Ada", "color": "red", "count": float64(3), "subscribe": false}}
	if got := answerSent(t, record); !reflect.DeepEqual(got, want) {
		t.Errorf("the agent got %+v, want %+v", got, want)
	}
	if !strings.Contains(r.stderr, "Your name (required, at least 2 characters): Ada\n") || !strings.Contains(r.stderr, "  1) Red\n") {
		t.Errorf("stderr lacks the form:\n%s", r.stderr)
	}
	if got := types(events(t, r.stdout)); !reflect.DeepEqual(got, []string{"elicitation", "elicitation_answer", "text", "done", "result"}) {
		t.Errorf("events %v", got)
	}
}

// TestElicitQuitIsNotAnAnswer: /quit typed at a question quits acphost;
// it is never sent to the agent as the answer.
func TestElicitQuitIsNotAnAnswer(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	r := runWith(t, formScript(record, "Tell me about you"), "/quit\n", "--elicit", "ask", "-p", "x")
	if r.code != 0 {
		t.Errorf("exit %d, want 0 (/quit); stderr:\n%s", r.code, r.stderr)
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if strings.Contains(string(m.Result), "/quit") {
			t.Errorf("the agent got /quit as an answer: %s", m.Result)
		}
	}
}
