package fakeagent

import "encoding/json"

// FormElicitation returns the params of a form-mode elicitation/create:
// message and requestedSchema (a JSON object, sent verbatim). "sessionId"
// (or, for [ElicitForRequest], "requestId") is added when the step runs.
func FormElicitation(message string, schema json.RawMessage) json.RawMessage {
	return mustJSON(map[string]any{"mode": "form", "message": message, "requestedSchema": schema})
}

// URLElicitation returns the params of a URL-mode elicitation/create.
func URLElicitation(elicitationID, url, message string) json.RawMessage {
	return mustJSON(map[string]any{"mode": "url", "elicitationId": elicitationID, "url": url, "message": message})
}

// Elicit is a step that sends elicitation/create with these params and
// waits for the answer; the answer is recorded like every message the
// client sends (see [Agent.Received]). Set NoWait on the step to leave it
// open, e.g. for a turn that waits for the cancel.
func Elicit(params json.RawMessage) Step {
	return Step{Request: &Call{Method: "elicitation/create", Params: params}}
}

// ElicitForRequest is a step that sends a request-scoped elicitation/create with these
// params: its "requestId" is the id of the client's request being handled (see
// [Step.ForRequest]), for BeforeAuthenticate and BeforeSessionNew. It waits for the answer,
// recorded like every message from the client, unless NoWait is set on the step.
func ElicitForRequest(params json.RawMessage) Step {
	return Step{Request: &Call{Method: "elicitation/create", Params: params}, ForRequest: true}
}

// ElicitationComplete is a step that sends the elicitation/complete
// notification for a URL-mode elicitation.
func ElicitationComplete(elicitationID string) Step {
	return Step{Notify: &Call{Method: "elicitation/complete", Params: mustJSON(map[string]string{"elicitationId": elicitationID})}}
}
