package ask

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

func TestParseChoice(t *testing.T) {
	req := &acp.PermissionRequest{Options: []acp.PermissionOption{
		{ID: "r", Kind: acp.RejectOnce}, {ID: "a", Kind: acp.AllowOnce}, {ID: "aa", Kind: acp.AllowAlways},
	}}
	for in, want := range map[string]string{"1": "r", " 2 ": "a", "3": "aa", "y": "a", "YES": "a", "n": "r", "0": "", "4": "", "": "", "maybe": ""} {
		got, ok := parseChoice(in, req)
		if got != want || ok != (want != "") {
			t.Errorf("parseChoice(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestApproverDecides(t *testing.T) {
	req, err := acp.ParsePermissionRequest([]byte(`{"sessionId":"s1","toolCall":{"toolCallId":"t1","kind":"execute","title":"ls",
		"rawInput":{"command":["bash","-lc","ls -la"],"cwd":"/p"}},
		"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	scr := tty.NewScreen(&out, false, false)
	ap := NewApprover(tty.NewInbox(strings.NewReader("maybe\n2\n")), scr, true, true, make(chan struct{}, 1))
	id, err := ap.Decide(context.Background(), req)
	if err != nil || id != "reject" {
		t.Errorf("Decide = %q, %v", id, err)
	}
	for _, want := range []string{"? Permission: ls", "  command: $ ls -la (in /p)", "1) Allow [allow_once]", `"maybe" is not a choice`, "choose 1-2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lacks %q:\n%s", want, out.String())
		}
	}
	// No more input rejects.
	ap = NewApprover(tty.NewInbox(strings.NewReader("")), scr, false, false, make(chan struct{}, 1))
	if id, err := ap.Decide(context.Background(), req); err != nil || id != "reject" {
		t.Errorf("Decide at the end of input = %q, %v", id, err)
	}
}
