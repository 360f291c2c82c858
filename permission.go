package acphost

import (
	"github.com/acphost/acphost/acp"
)

// AnswerReason says why a permission request got its answer.
type AnswerReason string

// The reasons of a PermissionAnswer.
const (
	ReasonHook      AnswerReason = "hook"      // OnPermission (the caller's own function, or a policy) chose an offered option: a UI that asked a person shows it as theirs
	ReasonDefault   AnswerReason = "default"   // no OnPermission: the default choice
	ReasonPlanMode  AnswerReason = "plan_mode" // plan mode rejected a tool that can change things
	ReasonInvalid   AnswerReason = "invalid"   // OnPermission returned an error, a panic, "" or an id not offered
	ReasonTimeout   AnswerReason = "timeout"   // PermissionTimeout fired
	ReasonCancelled AnswerReason = "cancelled" // the turn was cancelled
	ReasonWithdrawn AnswerReason = "withdrawn" // the agent sent $/cancel_request
	// ReasonRequestEnded: the client's request a request-scoped elicitation
	// belongs to ended (answered, failed or abandoned) before the hook
	// answered; elicitations only.
	ReasonRequestEnded AnswerReason = "request_ended"
	ReasonClosed       AnswerReason = "closed" // the client closed
)

// PermissionAnswer is what the client answered to a permission request.
type PermissionAnswer struct {
	// OptionID is the selected option; empty when Cancelled.
	OptionID string
	// Option is the selected option, nil when Cancelled.
	Option *acp.PermissionOption
	// Cancelled is true for the {"outcome":"cancelled"} answer.
	Cancelled bool
	Reason    AnswerReason
	// Err is the hook's error or panic, for ReasonInvalid.
	Err error
}

func answerCancelled(r AnswerReason) PermissionAnswer {
	return PermissionAnswer{Cancelled: true, Reason: r}
}
