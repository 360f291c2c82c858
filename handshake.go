// Handshake: initialize, the agent's capabilities and authenticate.

package acphost

import (
	"context"
	"encoding/json"
	"fmt"

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

// handshake runs initialize and, when configured, authenticate.
func (a *agent) handshake(ctx context.Context) error {
	if err := a.call(ctx, "initialize", a.initializeParams(), &a.init); err != nil {
		return wrapOp("initialize", err)
	}
	if a.init.ProtocolVersion != acp.ProtocolVersion {
		return &ProtocolError{Msg: fmt.Sprintf("agent speaks protocol version %d; acphost speaks %d", a.init.ProtocolVersion, acp.ProtocolVersion)}
	}
	_ = json.Unmarshal(a.init.AgentCapabilities, &a.caps)
	if m := a.opts.AuthMethod; m != "" {
		if err := a.authenticate(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (a *agent) authenticate(ctx context.Context, method string) error {
	if err := a.call(ctx, "authenticate", map[string]string{"methodId": method}, nil); err != nil {
		return wrapOp(authenticateOp(method), err)
	}
	return nil
}

func (a *agent) initializeParams() any {
	fs := a.opts.FS
	caps := map[string]any{
		"fs":       map[string]bool{"readTextFile": fs != nil && fs.Read, "writeTextFile": fs != nil && fs.Write},
		"terminal": a.opts.Terminal != nil,
	}
	if e := a.opts.elicitationCapability(); e != nil {
		caps["elicitation"] = e
	}
	session := map[string]any{
		// SetConfigOption sends booleans as they are (type "boolean").
		"configOptions": map[string]any{"boolean": map[string]any{}},
	}
	if a.opts.Advertise.Notices {
		session["notices"] = map[string]any{}
	}
	if a.opts.Advertise.Compaction {
		session["compaction"] = map[string]any{}
	}
	caps["session"] = session
	if a.opts.Advertise.TerminalAuth {
		caps["auth"] = map[string]any{"terminal": true}
	}
	if a.opts.Advertise.PermissionPresentation {
		caps["_meta"] = map[string]any{"jetbrains": map[string]any{"air": map[string]any{}}}
	}
	return map[string]any{
		"protocolVersion":    acp.ProtocolVersion,
		"clientCapabilities": caps,
		"clientInfo":         a.opts.Advertise.ClientInfo,
	}
}

func (a *agent) firstAuthMethod() string {
	for _, m := range a.init.AuthMethods {
		if m.Type == "" || m.Type == "agent" {
			return m.ID
		}
	}
	return ""
}
