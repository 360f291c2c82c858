package acphost

import (
	"encoding/json"

	"github.com/acphost/acphost/acp"
)

// EventType says what a [StreamEvent] reports and so which of its fields
// are set.
type EventType string

// The StreamEvent types. A tool call gives one EventToolCall (its first
// sighting: a tool_call, a tool_call_update or a permission request), then
// an EventToolUpdate for each later update, and once it reaches completed
// or failed one EventToolResult: the update that completes a call gives an
// EventToolUpdate (or EventToolCall, if it is the first sighting) and then
// an EventToolResult with the same fields. Act on a tool's outcome at
// EventToolResult, not at an update whose Status is finished, or it is
// handled twice.
const (
	EventText             EventType = "text"              // Delta: a piece of the agent's answer
	EventThought          EventType = "thought"           // Delta: a piece of the agent's reasoning
	EventToolCall         EventType = "tool_call"         // the agent started a tool call (once per id)
	EventToolUpdate       EventType = "tool_update"       // a tool call changed (status, content, input); also sent for the update that completes it
	EventToolResult       EventType = "tool_result"       // a tool call completed or failed (once per id, right after that update's event)
	EventPlan             EventType = "plan"              // Plan: the agent's whole current plan
	EventPermission       EventType = "permission"        // Permission: the agent asks
	EventPermissionAnswer EventType = "permission_answer" // Answer: what was answered and why
	EventUsage            EventType = "usage"             // Usage: context use and cost
	EventMode             EventType = "mode"              // Mode: the session's mode changed
	EventRestart          EventType = "restart"           // Err: the agent was restarted before this turn
	EventDone             EventType = "done"              // StopReason: the turn ended (a confirmed cancellation too, with Err set)
	EventError            EventType = "error"             // Err: the turn failed
	// EventHostTool reports a call of one of the host's own tools (see
	// HostTools) once it is over — answered, refused or failed: HostTool
	// is the call, Name its tool, Err why it was refused or failed. The
	// agent's own tool_call updates for it come as the events above.
	EventHostTool EventType = "host_tool"
)

// The events of updates a client opts into (ACPOptions.Advertise.Notices, Compaction).
const (
	EventNotice     EventType = "notice"     // Notice: information for the person, not history
	EventCompaction EventType = "compaction" // Update: a *CompactionUpdate or *CompactionSummaryChunk
)

// The elicitation events of a turn.
const (
	EventElicitation       EventType = "elicitation"        // Elicitation: the agent asks the user for input
	EventElicitationAnswer EventType = "elicitation_answer" // Elicitation, ElicitationAnswer: what was answered and why
)

// ViaACP marks tool events of tools the agent ran itself.
const ViaACP = "acp"

// StreamEvent is one event of a streamed turn. Type says which fields are
// set. Events arrive in wire order.
type StreamEvent struct {
	Type EventType
	// SessionID is the session the turn runs on, on every event (the id
	// the agent assigned; see Session.ID). A script that keeps nothing
	// else learns from it which session to continue.
	SessionID string
	Delta     string
	// Name is the tool call's title (ToolCall.Title, e.g. "Read main.go"
	// or a shell command), not the name of the tool; ID is its toolCallId.
	// The tool's own name, when the agent sends one, is ToolCall.Name.
	Name string
	ID   string
	// Via is "acp" for tool events: the agent ran the tool, not the host.
	Via string
	Err error

	// Tool events: the call's kind, status, raw input and output, and
	// ToolCall, the merged state of the call (every update for its id so
	// far, as ToolCallUpdate.State), not the patch the last update carried.
	Kind     acp.ToolKind
	Status   acp.ToolStatus
	Input    json.RawMessage
	Output   json.RawMessage
	ToolCall *acp.ToolCall

	Plan       []acp.PlanEntry
	Permission *acp.PermissionRequest
	Answer     *PermissionAnswer
	Usage      *acp.UsageUpdate
	Notice     *acp.NoticeUpdate
	Mode       string
	StopReason acp.StopReason
	// Update is the session/update behind the event, when there is one.
	Update acp.Update

	// Elicitation and ElicitationAnswer are set on elicitation events.
	Elicitation       *acp.ElicitationRequest
	ElicitationAnswer *ElicitationAnswer

	// HostTool is set on EventHostTool.
	HostTool *HostToolCall
}

// Title is the tool call's title, which the field Name holds (the name
// is historical: it is not the tool's name, ToolCall.Name).
func (e StreamEvent) Title() string { return e.Name }

// endError is the error a Stream pair carries: the turn's, on its end event.
func endError(ev StreamEvent) error {
	if ev.Type == EventDone || ev.Type == EventError {
		return ev.Err
	}
	return nil
}
