package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// MCPTransport is how the agent reaches an MCP server: the McpServer
// variant of the ACP schema.
type MCPTransport string

// The MCP transports of the ACP schema. Stdio is baseline; the agent takes
// the others only when its mcpCapabilities say so.
const (
	MCPStdio MCPTransport = "stdio" // the agent starts Command; also the zero value ""
	MCPHTTP  MCPTransport = "http"  // Streamable HTTP at URL (mcpCapabilities.http)
	MCPSSE   MCPTransport = "sse"   // the older HTTP+SSE transport at URL (mcpCapabilities.sse)
)

// MCPServer is one MCP server the agent is to use in a session
// (ACPOptions.MCPServers, SessionOptions.MCPServers). Type says which
// fields apply: Command, Args and Env for stdio; URL and Headers for http
// and sse. It is sent as the ACP schema has it (stdio without a "type",
// every list an array, never null).
type MCPServer struct {
	// Name names the server to the agent; agents prefix its tools with it
	// (Claude: mcp__<name>__<tool>). Required, and unique in a session.
	Name string
	// Type is the transport. "" means stdio.
	Type MCPTransport
	// Command, Args and Env start a stdio server on the agent's machine.
	Command string
	Args    []string
	Env     []NameValue
	// URL and Headers reach an http or sse server.
	URL     string
	Headers []NameValue
	// Raw, if set, is sent instead of the fields above, as written: a
	// server of a kind, or with fields, this version does not know. It
	// must be a JSON object; its "name" and "type" (absent: stdio) are
	// read, and take the place of Name and Type, for the checks.
	Raw json.RawMessage
}

// NameValue is an environment variable of a stdio MCP server or an HTTP
// header of a remote one.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// transport is the server's transport, "stdio" for the zero value.
func (m MCPServer) transport() MCPTransport {
	if m.Type == "" {
		return MCPStdio
	}
	return m.Type
}

// MarshalJSON writes the server as an ACP McpServer (Raw as it is).
func (m MCPServer) MarshalJSON() ([]byte, error) {
	if m.Raw != nil {
		if !isJSONObject(m.Raw) {
			return nil, fmt.Errorf("acp: MCPServer.Raw is not a JSON object")
		}
		return bytes.TrimSpace(m.Raw), nil
	}
	orEmpty := func(v []NameValue) []NameValue {
		if v == nil {
			return []NameValue{}
		}
		return v
	}
	switch m.transport() {
	case MCPStdio:
		args := m.Args
		if args == nil {
			args = []string{}
		}
		return json.Marshal(struct {
			Name    string      `json:"name"`
			Command string      `json:"command"`
			Args    []string    `json:"args"`
			Env     []NameValue `json:"env"`
		}{m.Name, m.Command, args, orEmpty(m.Env)})
	default:
		return json.Marshal(struct {
			Type    MCPTransport `json:"type"`
			Name    string       `json:"name"`
			URL     string       `json:"url"`
			Headers []NameValue  `json:"headers"`
		}{m.Type, m.Name, m.URL, orEmpty(m.Headers)})
	}
}

// mcpKnownFields are the fields of each transport this version models;
// a server with others (or of another type) decodes into Raw.
var mcpKnownFields = map[MCPTransport][]string{
	MCPStdio: {"name", "command", "args", "env"},
	MCPHTTP:  {"type", "name", "url", "headers"},
	MCPSSE:   {"type", "name", "url", "headers"},
}

// UnmarshalJSON reads an ACP McpServer. One of an unknown type, or with
// fields this version does not model, keeps its JSON in Raw (and its name
// and type in Name and Type), so that it is sent on as written.
func (m *MCPServer) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return fmt.Errorf("acp: an MCP server must be a JSON object")
	}
	var typ string
	if raw, ok := fields["type"]; ok {
		if err := json.Unmarshal(raw, &typ); err != nil {
			return fmt.Errorf("acp: an MCP server's type must be a string")
		}
	}
	*m = MCPServer{Type: MCPTransport(typ)}
	known, ok := mcpKnownFields[m.transport()]
	for k := range fields {
		if !ok || !slices.Contains(known, k) {
			m.Raw = append(json.RawMessage(nil), bytes.TrimSpace(b)...)
			break
		}
	}
	var wire struct {
		Name    string      `json:"name"`
		Command string      `json:"command"`
		Args    []string    `json:"args"`
		Env     []NameValue `json:"env"`
		URL     string      `json:"url"`
		Headers []NameValue `json:"headers"`
	}
	if err := json.Unmarshal(b, &wire); err != nil && m.Raw == nil {
		return fmt.Errorf("acp: MCP server: %w", err)
	}
	m.Name, m.Command, m.Args, m.Env, m.URL, m.Headers = wire.Name, wire.Command, wire.Args, wire.Env, wire.URL, wire.Headers
	return nil
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// resolved is the server's name and transport as the checks see them:
// Raw's own when Raw is set.
func (m MCPServer) resolved() (name string, t MCPTransport, err error) {
	if m.Raw == nil {
		return m.Name, m.transport(), nil
	}
	if !isJSONObject(m.Raw) {
		return "", "", errors.New("Raw is not a JSON object")
	}
	var head struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(m.Raw, &head); err != nil {
		return "", "", fmt.Errorf("Raw: %w", err)
	}
	return head.Name, MCPServer{Type: MCPTransport(head.Type)}.transport(), nil
}

// Check is the server's name and transport as the agent will see them
// (Raw's own when Raw is set), or what the server lacks: a name, what its
// transport needs, a transport this version knows (give others as Raw).
func (m MCPServer) Check() (name string, t MCPTransport, err error) {
	name, t, err = m.resolved()
	if err == nil {
		err = m.missing(name, t)
	}
	return name, t, err
}

// missing says what a server of transport t lacks, if anything.
func (m MCPServer) missing(name string, t MCPTransport) error {
	switch {
	case name == "":
		return errors.New("no name")
	case m.Raw != nil:
		return nil // the agent's to judge
	case t == MCPStdio && m.Command == "":
		return fmt.Errorf("stdio server %q has no command", name)
	case (t == MCPHTTP || t == MCPSSE) && m.URL == "":
		return fmt.Errorf("%s server %q has no url", t, name)
	case t != MCPStdio && t != MCPHTTP && t != MCPSSE:
		return fmt.Errorf("server %q: type %q is not one this version knows; give it as Raw", name, t)
	}
	return nil
}
