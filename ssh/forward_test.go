//go:build unix

package ssh_test

import (
	"context"
	jsonenc "encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/hosttools"
	"github.com/acphost/acphost/internal/sshtest"
)

// TestSSHHostToolsThroughAForwardedPort: over SSH the agent is given the
// host's tools at a port forwarded on the connection (not the host's own
// port), calls one through it, and the host's handler answers; Close ends
// the forward.
func TestSSHHostToolsThroughAForwardedPort(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	record := t.TempDir() + "/record.jsonl"
	tr, _ := remoteFake(t, srv, fakeagent.Script{
		RecordFile:        record,
		AgentCapabilities: jsonenc.RawMessage(`{"mcpCapabilities":{"http":true}}`),
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.CallMCP("shop", "echo", jsonenc.RawMessage(`{"text":"over ssh"}`)),
		}}},
	})
	tools := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "0"}, nil)
	ran := make(chan acphost.HostToolCall, 1)
	mcp.AddTool(tools, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		call, _ := acphost.HostToolCallFrom(ctx)
		ran <- call
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	ht := hosttools.New(tools, hosttools.Options{Name: "shop"})
	served := make(chan string, 1)
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: t.TempDir(), HostTools: spy{ht, served}})
	require.NoError(t, err)
	defer c.Close()

	resp, err := c.Generate(acphost.Request{Prompt: "go"})
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 1)
	tc := resp.ToolCalls[0]
	assert.Equal(t, acp.ToolStatus("completed"), tc.Status)
	require.NotEmpty(t, tc.Content)
	assert.Equal(t, "echo: over ssh", tc.Content[0].Content.Text)
	call := <-ran
	assert.Equal(t, c.Session().ID(), call.SessionID)

	msgs, err := fakeagent.ReadRecord(record)
	require.NoError(t, err)
	var given string
	for _, m := range msgs {
		if m.Method == "session/new" {
			var p struct {
				MCPServers []acp.MCPServer `json:"mcpServers"`
			}
			require.NoError(t, jsonenc.Unmarshal(m.Params, &p))
			given = p.MCPServers[0].URL
		}
	}
	local := <-served
	require.NotEmpty(t, given)
	gu, _ := url.Parse(given)
	lu, _ := url.Parse(local)
	assert.Equal(t, "127.0.0.1", gu.Hostname())
	assert.NotEqual(t, lu.Port(), gu.Port(), "the agent dials the forwarded port, not the host's")
	assert.True(t, strings.HasSuffix(given, "/mcp"))
}

// spy reports the URL the host tools serve on, before forwarding.
type spy struct {
	acphost.HostTools
	served chan string
}

func (s spy) ServeSession(sess *acphost.Session) ([]acp.MCPServer, func(), error) {
	servers, stop, err := s.HostTools.ServeSession(sess)
	if err == nil && len(servers) > 0 {
		s.served <- servers[0].URL
	}
	return servers, stop, err
}
