package policy

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/ask"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// Who answered a permission request without asking the person: the
// decidedBy of a --json permission_decision line.
const (
	DecidedPolicy         = "policy"          // a --permission-policy rule
	DecidedPermission     = "permission"      // --permission allow or reject
	DecidedNonInteractive = "non_interactive" // nobody to ask: --non-interactive-permissions
	DecidedPlan           = "plan_mode"       // plan mode
	DecidedRemembered     = "remembered"      // an earlier "always" answer (--permission ask)
)

// decisionNote is who decided a request, and by which rule.
type decisionNote struct{ by, rule string }

// Permissions answers the agent's permission requests as the run's
// policy says (Hook), and keeps, by tool call id, what the output later
// says of an answer given without asking the person. Its hooks run on the
// library's goroutines; the output's lookups (AnswerNote, WasRemembered,
// Decision) on the sink's.
type Permissions struct {
	// The run's policy: --permission, --non-interactive-permissions, the
	// policy file, --json; NoOneToAsk is a reject that defaulted for want
	// of a terminal.
	Permission, NonInteractive string
	NoOneToAsk, JSON           bool
	Policy                     *Policy

	Approver *ask.Approver // the person at the terminal; nil: nobody is asked
	Wait     *ask.Wait     // where the time spent asking goes
	Notes    bool          // answer notes are kept (human output)
	// Note says a line to the person (that an "always" answer is
	// remembered).
	Note func(code, text string)
	// FailTurn notes what a request under --non-interactive-permissions
	// fail was about, and returns the running turn's cancel (nil: none).
	FailTurn func(what string) context.CancelFunc

	// remembered holds the tool call ids whose permission Remember
	// answered from an earlier "always" without asking.
	remembered sync.Map
	// answerNotes holds, by tool call id, why a permission was answered
	// without asking (the policy file's rule).
	answerNotes sync.Map
	// decisions holds, by tool call id, who answered a permission without
	// asking and by which rule, for the --json permission_decision line.
	decisions sync.Map
}

// Hook sets opts' permission hooks: OnPermission, RequireAsking and
// PlanMode. cwd is the session's directory (the policy file's rules name
// paths in it).
func (p *Permissions) Hook(opts *acphost.ACPOptions, cwd string) {
	// noOne answers what would be asked when nobody can be asked.
	noOne := p.deciding(acphost.RejectAll(), DecidedNonInteractive, "--non-interactive-permissions deny")
	if p.NonInteractive == ask.NonInteractiveFail {
		noOne = p.failPermission
	}
	askPerson := noOne
	if p.Approver != nil {
		askPerson = p.askPermission()
	}
	// Every policy but allow needs an agent that asks: one in a mode that
	// acts unasked is moved to its asking mode, and a change it reports
	// making unasked stops the turn.
	opts.RequireAsking = p.Permission != ask.PermAllow
	switch p.Permission {
	case ask.PermAsk:
		opts.OnPermission = askPerson
	case ask.PermAllow:
		opts.OnPermission = p.deciding(acphost.AllowAll(), DecidedPermission, "--permission allow")
	case ask.PermReject:
		opts.OnPermission = p.deciding(acphost.RejectAll(), DecidedPermission, "--permission reject")
		if p.NoOneToAsk {
			opts.OnPermission = noOne
		}
	case ask.PermReads:
		allow := p.deciding(acphost.AllowAll(), DecidedPermission, "--permission reads")
		opts.OnPermission = func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
			if !ask.IsRead(req) {
				return askPerson(ctx, req)
			}
			p.note(req, "--permission reads: the agent calls it a "+string(req.ToolCall.Kind))
			return allow(ctx, req)
		}
	case ask.PermPlan:
		// The client rejects whatever can change anything before asking
		// OnPermission, and refuses fs writes; reads get the default
		// (allow once).
		opts.PlanMode = true
	}
	if pol := p.Policy; pol != nil {
		fallback := opts.OnPermission
		if fallback == nil { // plan mode: what reaches OnPermission only reads
			fallback = p.deciding(func(_ context.Context, req *acp.PermissionRequest) (string, error) {
				return acphost.DefaultPermission(req), nil
			}, DecidedPlan, "plan mode allows reads")
		}
		opts.OnPermission = pol.Decider(cwd, askPerson, fallback, func(req *acp.PermissionRequest, rule, text string) {
			p.note(req, text)
			p.decided(req, DecidedPolicy, rule)
		})
	}
}

// askPermission is the "ask" policy under acphost.Remember: an "always"
// answer is remembered for the same tool kind and title in the session,
// and requests it answers are noted in remembered.
func (p *Permissions) askPermission() acphost.PermissionFunc {
	asked := sync.Map{} // *PermissionRequest → struct{}: the person was asked
	askTimed := ask.Timed(p.Wait, p.Approver.Decide)
	remember := acphost.Remember(func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		asked.Store(req, struct{}{})
		id, err := askTimed(ctx, req)
		if o := req.Option(id); err == nil && o != nil && (o.Kind == acp.AllowAlways || o.Kind == acp.RejectAlways) {
			verb := "allowed"
			if o.Kind == acp.RejectAlways {
				verb = "rejected"
			}
			p.Note(tty.StyleDim, fmt.Sprintf("  remembered: later %s requests in this session are %s without asking", describeTool(req), verb))
		}
		return id, err
	})
	return func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		id, err := remember(ctx, req)
		if _, ok := asked.LoadAndDelete(req); !ok && err == nil {
			p.remembered.Store(req.ToolCall.ID, struct{}{})
			p.decided(req, DecidedRemembered, "an earlier \"always\" answer for "+describeTool(req))
		}
		return id, err
	}
}

// describeTool names a request's tool as Remember matches it: kind and
// title.
func describeTool(req *acp.PermissionRequest) string {
	kind := acp.SafeText(string(req.ToolCall.Kind))
	if kind == "" {
		kind = "tool"
	}
	return fmt.Sprintf("%q (%s)", tty.OneLine(acp.SafeText(req.ToolCall.Title), 60), kind)
}

// failPermission is --non-interactive-permissions fail: the request is
// noted, the turn cancelled (turn reports it and stops), and the request
// rejected meanwhile.
func (p *Permissions) failPermission(ctx context.Context, req *acp.PermissionRequest) (string, error) {
	p.decided(req, DecidedNonInteractive, "--non-interactive-permissions fail")
	what := describeTool(req)
	if l := RequestPaths(req, acp.Classify(req)); len(l) > 0 {
		what += " on " + strings.Join(l, ", ")
	}
	if cancel := p.FailTurn(what); cancel != nil {
		cancel()
		// The cancelled turn answers this request "cancelled" itself; an
		// answer returned before that would let the agent act on it.
		<-ctx.Done()
	}
	return acphost.RejectOption(req), nil
}

// note keeps, for human output, why req was answered without asking.
func (p *Permissions) note(req *acp.PermissionRequest, text string) {
	if p.Notes {
		p.answerNotes.Store(req.ToolCall.ID, text)
	}
}

// AnswerNote returns (once) why a tool call's permission was answered
// without asking.
func (p *Permissions) AnswerNote(toolCallID string) string {
	v, ok := p.answerNotes.LoadAndDelete(toolCallID)
	if !ok {
		return ""
	}
	return v.(string)
}

// WasRemembered reports (once) whether an earlier "always" answered a
// tool call's permission.
func (p *Permissions) WasRemembered(toolCallID string) bool {
	_, ok := p.remembered.LoadAndDelete(toolCallID)
	return ok
}

// decided notes, for --json, that req was answered without asking.
func (p *Permissions) decided(req *acp.PermissionRequest, by, rule string) {
	if !p.JSON {
		return
	}
	p.decisions.Store(req.ToolCall.ID, decisionNote{by, rule})
}

// deciding wraps f, noting each answer it gives as decided by rule.
func (p *Permissions) deciding(f acphost.PermissionFunc, by, rule string) acphost.PermissionFunc {
	return func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		id, err := f(ctx, req)
		if err == nil {
			p.decided(req, by, rule)
		}
		return id, err
	}
}

// Decision returns (once) who decided a tool call's permission without
// asking: what decided noted, or plan mode, or the library's default.
func (p *Permissions) Decision(toolCallID string, ans *acphost.PermissionAnswer) (by, rule string, ok bool) {
	v, found := p.decisions.LoadAndDelete(toolCallID)
	switch {
	case ans != nil && ans.Reason == acphost.ReasonPlanMode:
		return DecidedPlan, "plan mode rejects what can change anything", true
	case ans != nil && ans.Reason == acphost.ReasonDefault:
		return DecidedPlan, "plan mode allows reads", true
	case found && ans != nil && (ans.Reason == acphost.ReasonHook || ans.Reason == acphost.ReasonCancelled):
		n := v.(decisionNote)
		return n.by, n.rule, true
	}
	return "", "", false
}
