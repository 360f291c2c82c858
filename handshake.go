// Handshake: initialize, the agent's capabilities and authenticate.

package acphost

import (
	"encoding/json"

	"github.com/acphost/acphost/acp"
)

// presence is a capability advertised by an object's presence.
type presence json.RawMessage

func (p presence) present() bool { return len(p) > 0 && string(p) != "null" }

func (p *presence) UnmarshalJSON(b []byte) error {
	*p = append((*p)[:0], b...)
	return nil
}

// agentCaps is what this client reads of agentCapabilities.
type agentCaps struct {
	LoadSession         bool    `json:"loadSession"`
	MCPCapabilities     mcpCaps `json:"mcpCapabilities"`
	SessionCapabilities struct {
		List                  presence `json:"list"`
		Resume                presence `json:"resume"`
		Close                 presence `json:"close"`
		Delete                presence `json:"delete"`
		AdditionalDirectories presence `json:"additionalDirectories"`
		Fork                  presence `json:"fork"`  // unstable
		Title                 presence `json:"title"` // unstable
	} `json:"sessionCapabilities"`
	Auth struct {
		Logout presence `json:"logout"`
	} `json:"auth"`
}

type initResult struct {
	ProtocolVersion   int                `json:"protocolVersion"`
	AgentCapabilities json.RawMessage    `json:"agentCapabilities"`
	AuthMethods       []acp.AuthMethod   `json:"authMethods"`
	AgentInfo         acp.Implementation `json:"agentInfo"`
}
