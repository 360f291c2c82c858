package acphost_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPServersWire: typed servers go out as the ACP schema has them
// (stdio without a type, every list an array), Raw as written.
func TestMCPServersWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		servers := []acp.MCPServer{
			{Name: "fs", Command: "/bin/fs-mcp"},
			{Name: "api", Type: acp.MCPHTTP, URL: "http://127.0.0.1:1/mcp", Headers: []acp.NameValue{{Name: "Authorization", Value: "Bearer x"}}},
			{Name: "ev", Type: acp.MCPSSE, URL: "http://127.0.0.1:2/sse"},
			{Raw: acphost.Raw(`{"name":"odd","command":"x","args":[],"env":[],"future":1}`)},
		}
		_, fa := acphost.ConnectFake(t, fakeagent.Script{AgentCapabilities: acphost.Raw(`{"mcpCapabilities":{"http":true,"sse":true}}`)}, acphost.ACPOptions{MCPServers: servers})
		sn := acphost.Received(fa.Agent, "session/new")
		require.Len(t, sn, 1)
		var params struct {
			MCPServers json.RawMessage `json:"mcpServers"`
		}
		require.NoError(t, json.Unmarshal(sn[0], &params))
		assert.JSONEq(t, `[
			{"name":"fs","command":"/bin/fs-mcp","args":[],"env":[]},
			{"type":"http","name":"api","url":"http://127.0.0.1:1/mcp","headers":[{"name":"Authorization","value":"Bearer x"}]},
			{"type":"sse","name":"ev","url":"http://127.0.0.1:2/sse","headers":[]},
			{"name":"odd","command":"x","args":[],"env":[],"future":1}]`, string(params.MCPServers))
	})
}

// TestMCPServerRoundTrip: what UnmarshalJSON reads, MarshalJSON writes
// back; fields it does not model keep the whole object in Raw.
func TestMCPServerRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"name":"fs","command":"/bin/fs","args":["-v"],"env":[{"name":"K","value":"V"}]}`,
		`{"type":"http","name":"api","url":"https://x/mcp","headers":[]}`,
		`{"type":"acp","name":"a","serverId":"7"}`,
		`{"name":"fs","command":"/bin/fs","args":[],"env":[],"_meta":{"x":1}}`,
	} {
		var m acp.MCPServer
		require.NoError(t, json.Unmarshal([]byte(in), &m), in)
		out, err := json.Marshal(m)
		require.NoError(t, err)
		assert.JSONEq(t, in, string(out))
	}
	var m acp.MCPServer
	require.NoError(t, json.Unmarshal([]byte(`{"type":"acp","name":"a","serverId":"7"}`), &m))
	assert.Equal(t, "a", m.Name)
	assert.Equal(t, acp.MCPTransport("acp"), m.Type)
	assert.NotNil(t, m.Raw)
	assert.Error(t, json.Unmarshal([]byte(`[1]`), &m))
	assert.Error(t, json.Unmarshal([]byte(`{"type":3}`), &m))
}

// TestMCPServerTransportRefused: a server of a transport the agent did not
// advertise fails the open before session/new is sent, naming the
// transport and what the agent takes.
func TestMCPServerTransportRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			caps   string
			server acp.MCPServer
			want   string
		}{
			{`{}`, acp.MCPServer{Name: "api", Type: acp.MCPHTTP, URL: "http://x"}, `MCP server "api" is http, which the agent does not take (it takes stdio)`},
			{`{"mcpCapabilities":{"http":true}}`, acp.MCPServer{Name: "ev", Type: acp.MCPSSE, URL: "http://x"}, `MCP server "ev" is sse, which the agent does not take (it takes stdio, http)`},
			{`{"mcpCapabilities":{"http":true,"sse":true}}`, acp.MCPServer{Raw: acphost.Raw(`{"type":"acp","name":"a","serverId":"1"}`)}, `"a" is acp, which the agent does not take (it takes stdio, http, sse)`},
		} {
			rec := filepath.Join(t.TempDir(), "rec")
			script := fakeagent.Script{AgentCapabilities: acphost.Raw(tc.caps), RecordFile: rec}
			_, _, err := acphost.TryConnectFake(t, script, acphost.ACPOptions{MCPServers: []acp.MCPServer{tc.server}})
			require.ErrorIs(t, err, acphost.ErrUnsupported)
			var me *acphost.MCPServerError
			require.True(t, errors.As(err, &me), "%v", err)
			assert.Equal(t, "session/new", me.Method)
			assert.Contains(t, err.Error(), tc.want)
			assert.False(t, me.HostTools)
			assert.Equal(t, "agentCapabilities.mcpCapabilities."+string(me.Transport), me.Capability)
			assert.Contains(t, err.Error(), `fakeagent: set Script.AgentCapabilities to {"mcpCapabilities":{"`+string(me.Transport)+`":true}}`, "the fix is named")
			msgs, rerr := fakeagent.ReadRecord(rec)
			require.NoError(t, rerr)
			for _, m := range msgs {
				assert.NotEqual(t, "session/new", m.Method, "nothing is sent")
			}
		}
	})
}

// TestMCPServerErrorSaysWhatToDo: the refusal of a server the agent does
// not take ends with the capability the agent would have to advertise and
// what the caller can do instead — a stdio server, or for the host tools
// an agent that takes http.
func TestMCPServerErrorSaysWhatToDo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  acphost.MCPServerError
		want string
	}{
		{acphost.MCPServerError{Method: "session/new", Server: "docs", Transport: acp.MCPHTTP, AgentTransports: []string{"stdio"}, Capability: "agentCapabilities.mcpCapabilities.http"},
			`acphost: session/new: MCP server "docs" is http, which the agent does not take (it takes stdio); it takes one only if it advertises agentCapabilities.mcpCapabilities.http in its initialize answer: give it a stdio server instead, or leave this one out`},
		{acphost.MCPServerError{Method: "session/new", Server: "shop", Transport: acp.MCPHTTP, AgentTransports: []string{"stdio"}, HostTools: true, Capability: "agentCapabilities.mcpCapabilities.http"},
			`acphost: session/new: MCP server "shop" (the host tools of ACPOptions.HostTools) is http, which the agent does not take (it takes stdio); it takes one only if it advertises agentCapabilities.mcpCapabilities.http in its initialize answer: use an agent that does, or leave HostTools unset`},
		{acphost.MCPServerError{Method: "session/load", Server: "x", Transport: "ws", AgentTransports: []string{"stdio"}},
			`acphost: session/load: MCP server "x" is ws, which the agent does not take (it takes stdio)`},
	} {
		assert.Equal(t, tc.want, tc.err.Error())
	}
}

// TestMCPServerMalformedRefused: a server without a name, a duplicate name,
// a stdio server without a command, a remote one without a url, a Raw that
// is no object, an unknown type given typed: refused before anything is
// sent, also on NewSession.
func TestMCPServerMalformedRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := acphost.ConnectFake(t, fakeagent.Script{AgentCapabilities: acphost.Raw(`{"mcpCapabilities":{"http":true}}`)}, acphost.ACPOptions{})
		for _, tc := range []struct {
			servers []acp.MCPServer
			want    string
		}{
			{[]acp.MCPServer{{Command: "x"}}, "mcpServers[0]: no name"},
			{[]acp.MCPServer{{Name: "a", Command: "x"}, {Name: "a", Command: "y"}}, `mcpServers[1]: the name "a" is taken`},
			{[]acp.MCPServer{{Name: "a"}}, `stdio server "a" has no command`},
			{[]acp.MCPServer{{Name: "a", Type: acp.MCPHTTP}}, `http server "a" has no url`},
			{[]acp.MCPServer{{Raw: acphost.Raw(`[1]`)}}, "Raw is not a JSON object"},
			{[]acp.MCPServer{{Name: "a", Type: "ws", URL: "ws://x"}}, `type "ws" is not one this version knows`},
		} {
			_, err := c.NewSession(context.Background(), acphost.SessionOptions{MCPServers: tc.servers})
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), tc.want), "%v, want %q", err, tc.want)
		}
		assert.Len(t, acphost.Received(fa.Agent, "session/new"), 1, "only Start's")
	})
}
