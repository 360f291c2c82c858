package otelacphost

import "go.opentelemetry.io/otel/attribute"

// The instrumentation scope.
const scopeName = "github.com/acphost/acphost/otel"

// Attribute keys: the GenAI semantic conventions' where they fit, else
// acphost's own.
const (
	keyOperation     = attribute.Key("gen_ai.operation.name")
	keyAgentName     = attribute.Key("gen_ai.agent.name")
	keyAgentVersion  = attribute.Key("gen_ai.agent.version")
	keyConversation  = attribute.Key("gen_ai.conversation.id")
	keyFinishReasons = attribute.Key("gen_ai.response.finish_reasons")
	keyInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	keyTokenType     = attribute.Key("gen_ai.token.type")
	keyToolName      = attribute.Key("gen_ai.tool.name")
	keyToolCallID    = attribute.Key("gen_ai.tool.call.id")
	keyErrorType     = attribute.Key("error.type")

	keyToolKind     = attribute.Key("acphost.tool.kind")
	keyToolStatus   = attribute.Key("acphost.tool.status")
	keyAnsweredBy   = attribute.Key("acphost.answered_by")
	keyOutcome      = attribute.Key("acphost.outcome")
	keyOptionKind   = attribute.Key("acphost.permission.option_kind")
	keyRule         = attribute.Key("acphost.permission.rule")
	keyElicitMode   = attribute.Key("acphost.elicitation.mode")
	keyAskKind      = attribute.Key("acphost.ask.kind")
	keyUpdateKind   = attribute.Key("acphost.update.kind")
	keyRestartHow   = attribute.Key("acphost.restart.how")
	keyContextLost  = attribute.Key("acphost.restart.context_lost")
	keyContextUsed  = attribute.Key("acphost.context.used")
	keyContextSize  = attribute.Key("acphost.context.size")
	keyCostAmount   = attribute.Key("acphost.cost.amount")
	keyCostCurrency = attribute.Key("acphost.cost.currency")
	keyTruncated    = attribute.Key("acphost.response.truncated")
	keyToolCalls    = attribute.Key("acphost.turn.tool_calls")
	keyRestarted    = attribute.Key("acphost.turn.restarted")
	keyToolsDropped = attribute.Key("acphost.turn.tools_not_traced")
)

// Metric names.
const (
	metricOperationDuration = "gen_ai.client.operation.duration"
	metricTokenUsage        = "gen_ai.client.token.usage"
	metricUpdates           = "acphost.client.updates"
	metricPendingAsks       = "acphost.client.pending_asks"
	metricActiveTurns       = "acphost.client.active_turns"
	metricRestarts          = "acphost.client.restarts"
	metricActiveSessions    = "acphost.client.active_sessions"
	metricQueued            = "acphost.client.queued_messages"
)

// Span names that are not "{operation} {name}".
const (
	spanPermission  = "acphost.permission"
	spanElicitation = "acphost.elicitation"
	spanRestart     = "acphost.restart"
)

// maxName bounds a string the agent chose (a tool's name, an unknown
// kind) in a span name or attribute.
const maxName = 64

// maxOpenTools bounds the tool spans one turn keeps open: an agent that
// starts more tool calls than that without finishing them has the rest
// counted (acphost.turn.tools_not_traced), not traced.
const maxOpenTools = 256

// bounded cuts s to maxName bytes, at a rune boundary.
func bounded(s string) string {
	if len(s) <= maxName {
		return s
	}
	i := maxName
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}

// known returns s if it is one of set, else "other": for values an agent
// picks from a set the protocol defines, which a hostile one may not.
func known[S ~string](s S, set ...S) string {
	for _, v := range set {
		if s == v {
			return string(s)
		}
	}
	if s == "" {
		return ""
	}
	return "other"
}
