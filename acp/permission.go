package acp

import (
	"encoding/json"
	"slices"
)

// PermissionKind is the kind of a permission option: a hint for icons and
// policies. The set is open; unknown kinds are kept as sent.
type PermissionKind string

// The permission option kinds of ACP v1.
const (
	AllowOnce    PermissionKind = "allow_once"
	AllowAlways  PermissionKind = "allow_always"
	RejectOnce   PermissionKind = "reject_once"
	RejectAlways PermissionKind = "reject_always"
)

// IsAllow reports whether k is allow_once or allow_always.
func (k PermissionKind) IsAllow() bool { return k == AllowOnce || k == AllowAlways }

// IsReject reports whether k is reject_once or reject_always.
func (k PermissionKind) IsReject() bool { return k == RejectOnce || k == RejectAlways }

// PermissionRequest is a session/request_permission from the agent, decoded.
type PermissionRequest struct {
	// SessionID is the session asking.
	SessionID string
	// ToolCall is the tool call the agent wants to run, merged with what
	// earlier tool_call and tool_call_update updates said about the same id.
	ToolCall ToolCall
	// Options are the answers the agent offers, in the agent's order.
	Options []PermissionOption
	// Presentation is the permission prompt text some agents attach.
	Presentation Presentation
	// Raw is the request's params, exactly as received.
	Raw json.RawMessage

	ToolCallSet ToolCallFields // which toolCall fields the agent sent
}

// PermissionOption is one answer the agent offers.
type PermissionOption struct {
	// ID is the optionId, byte-exact; answer with it.
	ID   string
	Name string
	Kind PermissionKind
	// Meta is the option's decoded metadata (structured changes, description).
	Meta OptionMeta
	// Raw is the option object as received.
	Raw json.RawMessage
}

// firstOf returns the first option of this kind.
func (req *PermissionRequest) FirstOption(kind PermissionKind) *PermissionOption {
	for i := range req.Options {
		if req.Options[i].Kind == kind {
			return &req.Options[i]
		}
	}
	return nil
}

// Option returns the offered option with this id, or nil.
func (req *PermissionRequest) Option(id string) *PermissionOption {
	for i := range req.Options {
		if req.Options[i].ID == id {
			return &req.Options[i]
		}
	}
	return nil
}

// Heading returns the text to show as the approval dialog's heading: the
// decoded presentation title (fromPresentation is true), else the tool
// call's title, else the tool call's name, skipping those with no printable
// text. It is empty only when the agent sent none of them (Codex sends requests with no title at all); show a
// generic heading of your own then. The text is as the agent sent it: pass
// it through [SafeText] before printing it on a terminal.
func (r *PermissionRequest) Heading() (text string, fromPresentation bool) {
	if r == nil {
		return "", false
	}
	if r.Presentation.Present() {
		return r.Presentation.Title, true
	}
	if !blank(r.ToolCall.Title) {
		return r.ToolCall.Title, false
	}
	if !blank(r.ToolCall.Name) {
		return r.ToolCall.Name, false
	}
	return "", false
}

// ReadOnly reports whether the request can change nothing, judged by what
// it does, not by the kind it names: its tool's kind is read-only
// (ReadOnlyKind), its tool call — merged, for a request the client
// delivers, with what the session's updates said of it — carries no diff,
// and no option's structured changes write (PermissionOption.Writes). A
// location is a path the tool touches, not a write: a read's locations
// leave it read-only; a path counts as written only where a diff or a
// writing change names it, and those make the request a change anyway.
// Plan mode, RejectChanges and AllowReads decide by it.
func (req *PermissionRequest) ReadOnly() bool {
	return ReadOnlyKind(req.ToolCall.Kind) && !req.ToolCall.HasDiff() && !req.AnyOptionWrites()
}

// Writes reports whether one of the option's structured changes writes
// (see PermissionChange.Writes).
func (o PermissionOption) Writes() bool {
	return slices.ContainsFunc(o.Meta.Changes, PermissionChange.Writes)
}
