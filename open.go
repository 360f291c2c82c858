// Opening sessions on an agent (new, load, resume) and the records of the
// sessions a connection opened.

package acphost

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/acphost/acphost/acp"
)

type openResult struct {
	SessionID     string            `json:"sessionId"`
	Modes         *acp.SessionModes `json:"modes"`
	ConfigOptions json.RawMessage   `json:"configOptions"`
}

// openKind is how a session is opened on an agent.
type openKind int

const (
	openNew openKind = iota
	openLoad
	openResume
	openFork // unstable: a new session from an existing one
)

var openMethods = [...]string{openNew: "session/new", openLoad: "session/load", openResume: "session/resume", openFork: "session/fork"}

// opensNew reports whether the agent answers how with a new session id.
func opensNew(how openKind) bool { return how == openNew || how == openFork }

// withModes adds the session's modes to the agent's refusal of a mode, so
// that a person who asked for one that does not exist learns which do.
func withModes(err error, m acp.SessionModes) error {
	var rpc *RPCError
	if !errors.As(err, &rpc) || len(m.AvailableModes) == 0 {
		return err
	}
	ids := make([]string, len(m.AvailableModes))
	for i, mode := range m.AvailableModes {
		ids[i] = mode.ID
	}
	return fmt.Errorf("%w (the agent's modes: %s)", err, strings.Join(ids, ", "))
}

// mcpCaps is the agent's mcpCapabilities.
type mcpCaps struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
	ACP  bool `json:"acp"` // unstable: MCP over the ACP connection
}

// transports lists what the agent takes, stdio first (it is baseline).
func (c mcpCaps) transports() []string {
	out := []string{string(acp.MCPStdio)}
	for _, t := range []struct {
		on   bool
		name string
	}{{c.HTTP, "http"}, {c.SSE, "sse"}, {c.ACP, "acp"}} {
		if t.on {
			out = append(out, t.name)
		}
	}
	return out
}

// takes reports whether the agent advertised transport t.
func (c mcpCaps) takes(t acp.MCPTransport) bool {
	return slices.Contains(c.transports(), string(t))
}

// checkMCPServers refuses, before anything is sent, a list the agent
// cannot take: a server without a name (or with one already used), one
// missing what its transport needs, or one of a transport the agent did
// not advertise (an *MCPServerError matching ErrUnsupported).
// Servers from index hostFrom on are the host tools'; fake is whether the
// agent calls itself fakeagent (the error then names the Script field).
func checkMCPServers(method string, servers []acp.MCPServer, hostFrom int, caps mcpCaps, fake bool) error {
	seen := make(map[string]bool, len(servers))
	for i, m := range servers {
		name, t, err := m.Check()
		if err == nil && seen[name] {
			err = fmt.Errorf("the name %q is taken by an earlier server", name)
		}
		if err != nil {
			return fmt.Errorf("acphost: %s: mcpServers[%d]: %w", method, i, err)
		}
		seen[name] = true
		if !caps.takes(t) {
			me := &MCPServerError{Method: method, Server: name, Transport: t, AgentTransports: caps.transports(), HostTools: i >= hostFrom, fakeAgent: fake}
			switch t {
			case acp.MCPHTTP, acp.MCPSSE, "acp":
				me.Capability = "agentCapabilities.mcpCapabilities." + string(t)
			}
			return me
		}
	}
	return nil
}

// noSystemPrompt reports a zero system prompt: SessionOptions' way to send
// none when ACPOptions.SystemPrompt is set.
func noSystemPrompt(p *acp.SystemPrompt) bool { return p.Mode == "" && len(p.Content) == 0 }

// systemPromptMode is p's mode as sent: append when unset.
func systemPromptMode(p *acp.SystemPrompt) acp.SystemPromptMode {
	if p.Mode == "" {
		return acp.SystemPromptAppend
	}
	return p.Mode
}
