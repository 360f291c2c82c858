package acp

import (
	"errors"
	"fmt"
)

// ErrMalformed matches the errors of the decoders: a message whose params
// break the protocol (ParsePermissionRequest's error, an UnknownUpdate's
// Err for a known kind whose body does not decode).
var ErrMalformed = errors.New("acp: malformed message")

// malformed is ErrMalformed saying what was wrong.
func malformed(what string) error { return fmt.Errorf("%w: %s", ErrMalformed, what) }

// ErrElicitationContent matches a *FormContentError: an accepted
// elicitation's content did not fit the requested schema (or its action
// was unknown), so it was not sent.
var ErrElicitationContent = errors.New("acp: elicitation content does not fit the schema")

// FormContentError is why accepted content does not fit the requested
// schema; it matches ErrElicitationContent.
type FormContentError struct {
	Field string // "" for the content as a whole
	Msg   string
}

func (e *FormContentError) Error() string {
	if e.Field == "" {
		return "acp: elicitation content: " + e.Msg
	}
	return fmt.Sprintf("acp: elicitation field %q: %s", e.Field, e.Msg)
}

// Is makes errors.Is(err, ErrElicitationContent) hold.
func (e *FormContentError) Is(target error) bool { return target == ErrElicitationContent }

// Standard JSON-RPC and ACP error codes.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeRequestCancelled = -32800
	CodeAuthRequired     = -32000
	CodeResourceNotFound = -32002
)
