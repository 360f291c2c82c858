package main

import (
	"context"

	"github.com/acphost/acphost"
)

// Who answered a permission request without asking the person: the
// decidedBy of a --json permission_decision line.
const (
	decidedPolicy         = "policy"          // a --permission-policy rule
	decidedPermission     = "permission"      // --permission allow or reject
	decidedNonInteractive = "non_interactive" // nobody to ask: --non-interactive-permissions
	decidedPlan           = "plan_mode"       // plan mode
	decidedRemembered     = "remembered"      // an earlier "always" answer (--permission ask)
)

// decisionNote is who decided a request, and by which rule.
type decisionNote struct{ by, rule string }

// decided notes, for --json, that req was answered without asking.
func (a *app) decided(req *acphost.PermissionRequest, by, rule string) {
	if !a.cfg.json {
		return
	}
	a.decisions.Store(req.ToolCall.ID, decisionNote{by, rule})
}

// deciding wraps f, noting each answer it gives as decided by rule.
func (a *app) deciding(f acphost.PermissionFunc, by, rule string) acphost.PermissionFunc {
	return func(ctx context.Context, req *acphost.PermissionRequest) (string, error) {
		id, err := f(ctx, req)
		if err == nil {
			a.decided(req, by, rule)
		}
		return id, err
	}
}

// decision returns (once) who decided a tool call's permission without
// asking: what decided noted, or plan mode, or the library's default.
func (a *app) decision(toolCallID string, ans *acphost.PermissionAnswer) (by, rule string, ok bool) {
	v, found := a.decisions.LoadAndDelete(toolCallID)
	switch {
	case ans != nil && ans.Reason == acphost.ReasonPlanMode:
		return decidedPlan, "plan mode rejects what can change anything", true
	case ans != nil && ans.Reason == acphost.ReasonDefault:
		return decidedPlan, "plan mode allows reads", true
	case found && ans != nil && (ans.Reason == acphost.ReasonHook || ans.Reason == acphost.ReasonCancelled):
		n := v.(decisionNote)
		return n.by, n.rule, true
	}
	return "", "", false
}
