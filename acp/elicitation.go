package acp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ElicitationMode is how an elicitation asks: a form or a URL to open. The
// set is open; a request in a mode the client did not advertise is refused.
type ElicitationMode string

// The elicitation modes of ACP v1.
const (
	ModeForm ElicitationMode = "form"
	ModeURL  ElicitationMode = "url"
)

// ElicitationAction is the answer's kind.
type ElicitationAction string

// The answers of ACP v1: the user submitted (or, in URL mode, consented
// to open the URL), explicitly declined, or dismissed without choosing.
const (
	ElicitAccept  ElicitationAction = "accept"
	ElicitDecline ElicitationAction = "decline"
	ElicitCancel  ElicitationAction = "cancel"
)

// ElicitationScope says what an elicitation belongs to.
type ElicitationScope string

// The scopes of ACP v1: a session (and maybe a tool call of it), or one of
// the client's JSON-RPC requests outside a session (during authentication
// or configuration, before a session is started).
const (
	ScopeSession ElicitationScope = "session"
	ScopeRequest ElicitationScope = "request"
)

// ElicitationRequest is an elicitation/create from the agent, decoded.
// Everything in it is the agent's: show text through SafeText, and in URL
// mode show the whole URL and ask before opening it.
type ElicitationRequest struct {
	// Scope is ScopeSession (SessionID set) or ScopeRequest (RequestID
	// set, SessionID empty): exactly one of sessionId and requestId is sent.
	Scope     ElicitationScope
	SessionID string
	// ToolCallID is the tool call the request belongs to, if the agent
	// said (an MCP server's elicitation during a tool call, Claude's
	// AskUserQuestion).
	ToolCallID string
	// RequestID is, in request scope, the id of the client's request the
	// elicitation belongs to, exactly as the agent sent it. The client
	// serves only an id of one of its own requests that awaits its answer
	// (its ids are numbers), and says which in Method.
	RequestID json.RawMessage
	// Method is, in request scope, the method of the client's request the
	// elicitation belongs to: "initialize", "authenticate", "session/new",
	// "session/load", …. Set by the client as it routes the request (not
	// by ParseElicitationRequest).
	Method  string
	Mode    ElicitationMode
	Message string
	// Form is the requested schema, in form mode; nil otherwise.
	Form *FormSchema
	// URL and ElicitationID are set in URL mode. The URL is not opened,
	// fetched or checked by the client beyond parsing as absolute: show it
	// whole, check its scheme and host, and open it only with consent.
	URL, ElicitationID string
	// Raw is the request's params, exactly as received.
	Raw json.RawMessage
}

// ElicitationComplete is the agent's elicitation/complete: the out-of-band
// interaction of a URL elicitation this client accepted has finished.
type ElicitationComplete struct {
	ElicitationID string
	// SessionID is the session of the URL elicitation it completes;
	// empty for a request-scoped one.
	SessionID string
	// Method is, for a request-scoped URL elicitation, the method of the
	// client's request it belonged to (that request may have ended since).
	Method string
}

// ParseElicitationRequest decodes elicitation/create params. Exactly one
// scope is needed: a sessionId (a string) or a requestId (any JSON value,
// null included, kept raw: which request it names is the client's to
// check). Form mode needs a requestedSchema (see ParseFormSchema), URL mode
// an elicitationId and an absolute URL; other modes are kept with neither.
func ParseElicitationRequest(params json.RawMessage) (*ElicitationRequest, error) {
	var w struct {
		SessionID       *string         `json:"sessionId"`
		RequestID       json.RawMessage `json:"requestId"`
		ToolCallID      string          `json:"toolCallId"`
		Mode            ElicitationMode `json:"mode"`
		Message         *string         `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
		ElicitationID   string          `json:"elicitationId"`
		URL             string          `json:"url"`
	}
	if err := json.Unmarshal(params, &w); err != nil {
		return nil, fmt.Errorf("elicitation/create: %w", err)
	}
	if w.Message == nil {
		return nil, errors.New("elicitation/create: no message")
	}
	req := &ElicitationRequest{ToolCallID: w.ToolCallID, Mode: w.Mode, Message: *w.Message, Raw: params}
	switch hasRequest := len(w.RequestID) > 0; {
	case w.SessionID != nil && hasRequest:
		return nil, errors.New("elicitation/create: both a sessionId and a requestId")
	case w.SessionID != nil:
		req.Scope, req.SessionID = ScopeSession, *w.SessionID
	case hasRequest:
		req.Scope, req.RequestID = ScopeRequest, w.RequestID
	default:
		return nil, errors.New("elicitation/create: neither a sessionId nor a requestId")
	}
	switch w.Mode {
	case ModeForm:
		f, err := ParseFormSchema(w.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("elicitation/create: %w", err)
		}
		req.Form = f
	case ModeURL:
		if w.ElicitationID == "" {
			return nil, errors.New("elicitation/create: url mode without an elicitationId")
		}
		if err := checkFormat("uri", w.URL); err != nil {
			return nil, fmt.Errorf("elicitation/create: url %q: %w", SafeText(w.URL), err)
		}
		req.URL, req.ElicitationID = w.URL, w.ElicitationID
	case "":
		return nil, errors.New("elicitation/create: no mode")
	}
	return req, nil
}
