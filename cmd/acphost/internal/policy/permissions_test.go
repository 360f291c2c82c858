package policy

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/ask"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

func request(t *testing.T, kind, title string) *acp.PermissionRequest {
	t.Helper()
	req, err := acp.ParsePermissionRequest([]byte(`{"sessionId":"s1","toolCall":{"toolCallId":"t-` + title + `","kind":"` + kind + `","title":"` + title + `"},
		"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"always","name":"Always","kind":"allow_always"},
		{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func hooked(p *Permissions) acphost.ACPOptions {
	var opts acphost.ACPOptions
	p.Hook(&opts, "/p")
	return opts
}

// --permission allow and reject answer without asking, and say who
// decided for --json.
func TestPermissionsWithoutAsking(t *testing.T) {
	for _, c := range []struct {
		permission, want, rule string
	}{
		{ask.PermAllow, "allow", "--permission allow"},
		{ask.PermReject, "reject", "--permission reject"},
	} {
		p := &Permissions{Permission: c.permission, NonInteractive: ask.NonInteractiveDeny, JSON: true}
		opts := hooked(p)
		if opts.RequireAsking != (c.permission != ask.PermAllow) {
			t.Errorf("%s: RequireAsking %v", c.permission, opts.RequireAsking)
		}
		req := request(t, "execute", "ls")
		id, err := opts.OnPermission(context.Background(), req)
		if err != nil || id != c.want {
			t.Errorf("%s: %q %v", c.permission, id, err)
		}
		by, rule, ok := p.Decision(req.ToolCall.ID, &acphost.PermissionAnswer{OptionID: id, Reason: acphost.ReasonHook})
		if !ok || by != DecidedPermission || rule != c.rule {
			t.Errorf("%s: decision %q %q %v", c.permission, by, rule, ok)
		}
		if _, _, ok := p.Decision(req.ToolCall.ID, &acphost.PermissionAnswer{Reason: acphost.ReasonHook}); ok {
			t.Errorf("%s: a decision is given twice", c.permission)
		}
	}
	p := &Permissions{Permission: ask.PermPlan}
	if opts := hooked(p); !opts.PlanMode || opts.OnPermission != nil {
		t.Error("plan: no plan mode")
	}
	if by, _, ok := p.Decision("x", &acphost.PermissionAnswer{Reason: acphost.ReasonPlanMode}); !ok || by != DecidedPlan {
		t.Errorf("plan mode's answer: %q %v", by, ok)
	}
}

// --permission reads allows a read with a note and asks the rest; with
// nobody to ask under --non-interactive-permissions fail, the request
// stops the turn.
func TestPermissionsReadsAndFail(t *testing.T) {
	var failed string
	ctx, cancel := context.WithCancel(context.Background())
	p := &Permissions{Permission: ask.PermReads, NonInteractive: ask.NonInteractiveFail, Notes: true, JSON: true,
		FailTurn: func(what string) context.CancelFunc { failed = what; return cancel }}
	opts := hooked(p)
	read := request(t, "read", "cat")
	if id, err := opts.OnPermission(context.Background(), read); err != nil || id != "allow" {
		t.Errorf("read: %q %v", id, err)
	}
	if n := p.AnswerNote(read.ToolCall.ID); n != "--permission reads: the agent calls it a read" {
		t.Errorf("read's note: %q", n)
	}
	if id, err := opts.OnPermission(ctx, request(t, "edit", "write")); err != nil || id != "reject" || failed != `"write" (edit)` || ctx.Err() == nil {
		t.Errorf("edit with nobody to ask: %q %v, failed %q", id, err, failed)
	}
}

// An "always" answer is remembered in the session and said once; the next
// request of the same tool is answered without asking.
func TestPermissionsRemember(t *testing.T) {
	var out bytes.Buffer
	scr := tty.NewScreen(&out, false, false)
	var mu sync.Mutex
	var notes []string
	p := &Permissions{Permission: ask.PermAsk, NonInteractive: ask.NonInteractiveDeny, JSON: true, Wait: &ask.Wait{},
		Approver: ask.NewApprover(tty.NewInbox(strings.NewReader("2\n")), scr, false, false, make(chan struct{}, 1)),
		Note:     func(_, text string) { mu.Lock(); notes = append(notes, text); mu.Unlock() }}
	opts := hooked(p)
	first, second := request(t, "execute", "ls"), request(t, "execute", "ls")
	second.ToolCall.ID = "t-ls-2"
	if id, err := opts.OnPermission(context.Background(), first); err != nil || id != "always" {
		t.Fatalf("first: %q %v", id, err)
	}
	if p.WasRemembered(first.ToolCall.ID) {
		t.Error("the request the person answered is remembered")
	}
	if id, err := opts.OnPermission(context.Background(), second); err != nil || id != "always" {
		t.Fatalf("second: %q %v", id, err)
	}
	if !p.WasRemembered(second.ToolCall.ID) || p.WasRemembered(second.ToolCall.ID) {
		t.Error("WasRemembered is not true once")
	}
	by, _, ok := p.Decision(second.ToolCall.ID, &acphost.PermissionAnswer{Reason: acphost.ReasonHook})
	if !ok || by != DecidedRemembered {
		t.Errorf("second's decision: %q %v", by, ok)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `later "ls" (execute) requests in this session are allowed without asking`) {
		t.Errorf("notes %q", notes)
	}
}
