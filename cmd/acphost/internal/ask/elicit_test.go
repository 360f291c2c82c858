package ask

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

func parseElicitation(t *testing.T, params string) *acp.ElicitationRequest {
	t.Helper()
	req, err := acp.ParseElicitationRequest([]byte(params))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

const formParams = `{"sessionId":"s1","mode":"form","message":"Who are you?","requestedSchema":{"type":"object",
	"properties":{"name":{"type":"string","title":"Name"},"count":{"type":"integer","minimum":1,"maximum":10,"default":3},
	"color":{"type":"string","enum":["red","blue"]}},"required":["name","color"]}}`

// An asked form reads one field at a time from stdin, asks again for an
// answer that does not fit, and takes Enter as the default.
func TestElicitorAsksAForm(t *testing.T) {
	var out bytes.Buffer
	scr := tty.NewScreen(&out, false, false)
	e := &Elicitor{Policy: ElicitAsk, In: tty.NewInbox(strings.NewReader("Ada\n\npurple\n2\n")), Scr: scr, Errs: scr,
		Echo: true, Asking: make(chan struct{}, 1)}
	ans, err := e.Answer(context.Background(), parseElicitation(t, formParams))
	if err != nil {
		t.Fatal(err)
	}
	if ans.Action != acp.ElicitAccept || ans.Content["name"] != "Ada" || ans.Content["count"] != float64(3) && ans.Content["count"] != int64(3) ||
		ans.Content["color"] != "blue" {
		t.Errorf("answer %+v", ans)
	}
	for _, want := range []string{"? Question: Who are you?", "count (integer, 1 to 10; Enter: 3):", `"purple" is not a choice (1-2)`, "2) blue"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the form lacks %q:\n%s", want, out.String())
		}
	}
}

// The end of input cancels a form; !decline declines it.
func TestElicitorEnds(t *testing.T) {
	for in, want := range map[string]acp.ElicitationAction{"": acp.ElicitCancel, "!decline\n": acp.ElicitDecline, "!cancel\n": acp.ElicitCancel} {
		scr := tty.NewScreen(&bytes.Buffer{}, false, false)
		e := &Elicitor{Policy: ElicitAsk, In: tty.NewInbox(strings.NewReader(in)), Scr: scr, Errs: scr, Asking: make(chan struct{}, 1)}
		ans, err := e.Answer(context.Background(), parseElicitation(t, formParams))
		if err != nil || ans.Action != want {
			t.Errorf("%q: %+v %v, want %s", in, ans, err, want)
		}
	}
}

// --elicit accept sends the defaults and the --elicit-value of the form's
// fields; a value that does not fit is an error.
func TestElicitorAccepts(t *testing.T) {
	e := &Elicitor{Policy: ElicitAccept, Values: map[string]string{"name": "Ada", "color": "2", "other": "x"}}
	ans, err := e.Answer(context.Background(), parseElicitation(t, formParams))
	if err != nil || ans.Action != acp.ElicitAccept || ans.Content["name"] != "Ada" || ans.Content["color"] != "blue" || ans.Content["other"] != nil {
		t.Errorf("accept: %+v %v", ans, err)
	}
	e.Values = map[string]string{"count": "many"}
	if _, err := e.Answer(context.Background(), parseElicitation(t, formParams)); err == nil || !strings.Contains(err.Error(), "--elicit-value count") {
		t.Errorf("a bad --elicit-value: %v", err)
	}
}

// The default decline says why when the policy was not chosen.
func TestElicitorDeclines(t *testing.T) {
	var errs bytes.Buffer
	e := &Elicitor{Policy: ElicitDecline, Auto: true, JSON: true, Errs: tty.NewScreen(&errs, false, false)}
	ans, err := e.Answer(context.Background(), parseElicitation(t, formParams))
	if err != nil || ans.Action != acp.ElicitDecline || !strings.Contains(errs.String(), "--json reads nothing: declined") {
		t.Errorf("decline: %+v %v %q", ans, err, errs.String())
	}
}

func TestFormatElicitationURL(t *testing.T) {
	s := tty.NewScreen(&bytes.Buffer{}, false, false)
	req := parseElicitation(t, `{"sessionId":"s1","mode":"url","message":"Log in\u001b[31m","elicitationId":"e1","url":"https://example.com/login"}`)
	got := FormatElicitation(s, req, true)
	for _, want := range []string{"? Question: Log in", "open: https://example.com/login", "host: example.com", "acphost does not open it"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("an escape reaches the terminal: %q", got)
	}
	if h := URLHost("https://example.com:8080/x"); h != "example.com:8080" {
		t.Errorf("URLHost = %q", h)
	}
}
