// Elicitation: the agent asks the user for structured input
// (elicitation/create, form and URL modes) and reports the end of a URL
// flow (elicitation/complete). A request belongs to a session (sessionId)
// or to one of the client's own requests awaiting its answer outside a
// session (requestId: authenticate, session/new, …). Requests are served
// off the read loop by OnElicitation, within the request budget; a
// cancelled turn settles the session's open ones with "cancel", the end of
// its request a request-scoped one.

package acphost

import (
	"context"
	"fmt"

	"github.com/acphost/acphost/acp"
)

// ElicitationAnswer is what the hook answers, and what the client sent.
type ElicitationAnswer struct {
	Action acp.ElicitationAction
	// Content is an accepted form's values by field name: string, a Go
	// number type (integers for integer fields), bool or []string. It is
	// validated against the requested schema before it is sent; ignored
	// for decline and cancel and in URL mode.
	Content map[string]any
	// Reason and Err say why the client sent this answer (in the answer
	// event, not read from the hook): ReasonHook, ReasonInvalid (Err is the
	// hook's error, panic or a *FormContentError), ReasonTimeout,
	// ReasonCancelled, ReasonWithdrawn, ReasonRequestEnded (Err matches
	// ErrRequestEnded) or ReasonClosed.
	Reason AnswerReason
	Err    error
}

// ElicitationFunc answers an elicitation. It runs on a goroutine of its own
// (never the read loop or the dispatcher), so it may wait for a person;
// ctx ends when the turn is cancelled, when the agent withdraws the request
// ($/cancel_request), when Elicitation.Timeout fires, when the client's
// request a request-scoped elicitation belongs to ends (it is answered,
// fails or is abandoned: context.Cause(ctx) then matches ErrRequestEnded)
// or when the client closes — the request has then already been answered
// "cancel" (-32800 for a withdrawal) and the return value is ignored.
type ElicitationFunc func(ctx context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error)

// check validates a hook's answer and returns it as it will be sent.
func checkElicitationAnswer(req *acp.ElicitationRequest, ans ElicitationAnswer) (ElicitationAnswer, error) {
	switch ans.Action {
	case acp.ElicitDecline, acp.ElicitCancel:
		return ElicitationAnswer{Action: ans.Action}, nil
	case acp.ElicitAccept:
	default:
		return ans, fmt.Errorf("%w: action %q", acp.ErrElicitationContent, ans.Action)
	}
	if req.Form == nil {
		return ElicitationAnswer{Action: acp.ElicitAccept}, nil
	}
	content, err := req.Form.Validate(ans.Content)
	if err != nil {
		return ans, err
	}
	return ElicitationAnswer{Action: acp.ElicitAccept, Content: content}, nil
}
