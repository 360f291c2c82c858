// Package acp holds the words of the Agent Client Protocol as a host reads
// and writes them: content blocks, session updates, tool calls, permission
// requests with their presentation and structured changes, elicitations
// and their forms, MCP server configurations, modes and config options,
// and the decoders that turn an agent's JSON into them.
//
// It is data and its JSON coding only: it starts no goroutine, holds no
// connection and knows nothing of the host. The host — starting agents,
// running turns, the hooks that receive these values — is the parent
// package, github.com/acphost/acphost, whose OnPermission hook receives a
// *[PermissionRequest] and whose OnUpdate hook receives an [Update].
//
// Every decoder takes the agent's bytes as hostile: a message that breaks
// the protocol yields an error matching [ErrMalformed] (or, for a
// session/update, an *[UnknownUpdate] keeping the raw JSON), never a panic;
// text shown to a person goes through [SafeText].
//
// The words follow ACP protocol version [ProtocolVersion]; unions are
// sealed with an unknown case that keeps the agent's JSON, so a newer agent
// never breaks an older host.
package acp
