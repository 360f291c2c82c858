// Package codex names the permission option ids the Codex ACP adapter
// (codex-acp) sends; which ones appear depends on the adapter version and
// on the decisions Codex offers.
//
// They are for convenience only, for example to pick an icon: acphost
// never derives behaviour from an option id, and a UI must answer a
// permission request with the id the agent sent, whatever it is.
package codex

// Option ids of the Codex adapter's command, file-change and network
// approvals.
const (
	AllowOnce                         = "allow_once"                      // accept this once
	AllowAlways                       = "allow_always"                    // ≤ 1.6: accept for the session; MCP approvals: accept and always persist
	RejectOnce                        = "reject_once"                     // ≤ 1.6: decline
	AllowForSession                   = "allow_for_session"               // ≥ 1.7: accept for the session
	Decline                           = "decline"                         // ≥ 1.7: decline, the turn continues
	Cancel                            = "cancel"                          // ≥ 1.7: decline and interrupt the turn
	AcceptExecpolicyAmendment         = "accept_execpolicy_amendment"     // accept and allow the proposed command prefix
	ApplyNetworkPolicyAmendmentPrefix = "apply_network_policy_amendment:" // followed by the amendment's index
)

// Option ids of the Codex adapter's permission-profile and MCP approvals.
const (
	AllowPermissionsTurn                 = "allow_permissions_turn"                    // grant for this turn
	AllowPermissionsTurnStrictAutoReview = "allow_permissions_turn_strict_auto_review" // grant for this turn, strict auto review
	AllowPermissionsSession              = "allow_permissions_session"                 // grant for the session
	RejectPermissions                    = "reject_permissions"                        // grant nothing
	AllowSession                         = "allow_session"                             // MCP approvals: accept and persist for the session
)

// Session modes of the Codex adapters: the TypeScript line (codex-acp 2.x)
// starts in ModeAgent, where a guardian model reviews commands instead of
// the user; the Rust line (0.x) starts in ModeReadOnly.
const (
	ModeReadOnly        = "read-only"         // commands run in a read-only sandbox; anything else is asked
	ModeWorkspaceWrite  = "workspace-write"   // writes the workspace without asking
	ModeAgent           = "agent"             // "Auto review": a guardian model decides
	ModeAgentFullAccess = "agent-full-access" // no sandbox, nothing asked
	ModeAuto            = "auto"              // Rust line: workspace writes without asking
	ModeFullAccess      = "full-access"       // Rust line: nothing asked
)

// StateDirs are where Codex keeps its own state, for confinement (see
// claude.StateDirs for the notation).
var StateDirs = []string{"$CODEX_HOME", "~/.codex"}
