package main

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
