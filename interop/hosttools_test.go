//go:build interop

package interop

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/hosttools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostToolSecret is in the host tool's answer: the model's next call must
// carry it (the agent gave the model the Go handler's result).
const hostToolSecret = "shipped-via-host-7f3a"

type orderQuery struct {
	ID string `json:"id"`
}

// host-tools: the host gives the agent an MCP server of its own (the MCP Go
// SDK, served by hosttools on loopback with a bearer token). The mock's
// model calls its tool by the agent's naming (Claude mcp__shop__lookup_order,
// opencode shop_lookup_order, …); the Go handler runs with the session and
// turn in its ctx; its result reaches the model in the next request; the
// host's stream has the call; the turn ends.
func testHostTools(t *testing.T, a Agent) {
	var mu sync.Mutex
	var calls []acphost.HostToolCall
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup_order", Description: "Look up an order by its id.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, q orderQuery) (*mcp.CallToolResult, any, error) {
			call, _ := acphost.HostToolCallFrom(ctx)
			mu.Lock()
			calls = append(calls, call)
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order " + q.ID + ": " + hostToolSecret}}}, nil, nil
		})
	var methods []string
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			t.Logf("host MCP server: %s (err %v)", method, err)
			mu.Lock()
			methods = append(methods, method)
			mu.Unlock()
			return res, err
		}
	})
	s := start(t, a, func(s *session, o *acphost.ACPOptions) {
		if a.hostToolsPrep != nil {
			if err := a.hostToolsPrep(s.home); err != nil {
				t.Fatal(err)
			}
		}
		o.HostTools = hosttools.New(srv, hosttools.Options{Name: "shop"})
		o.Process.Env = append(o.Process.Env, a.HostToolsEnv...)
	})
	s.setPolicy(allowOnce) // an agent that asks before an MCP tool is allowed
	r := s.turn(turnCtx(t), prompt("mcp:shop/lookup_order"))
	if r.err != nil {
		s.dump()
		t.Fatalf("turn failed: %v", r.err)
	}
	mu.Lock()
	got := append([]acphost.HostToolCall(nil), calls...)
	seen := strings.Join(methods, " ")
	mu.Unlock()
	if a.HostToolsUnoffered {
		// The gap, exactly: connected and listed, never offered to the model.
		if len(got) != 0 || !strings.Contains(seen, "initialize") || !strings.Contains(seen, "tools/list") || !strings.Contains(r.resp.Text, "mock: no tool for step mcp") {
			t.Fatalf("%s: handler ran %d times, server saw %q, text %q; want the known gap (listed, not offered): has it been fixed?", a.Name, len(got), seen, r.resp.Text)
		}
		t.Logf("%s connects to the host's server (%s) but offers its model none of its tools (known gap)", a.Name, seen)
		return
	}
	if len(got) != 1 {
		s.dump()
		t.Fatalf("the host's handler ran %d times; want once (model calls: %v)", len(got), actions(s.mock.Calls()))
	}
	if got[0].SessionID != s.client.Session().ID() || got[0].Turn == 0 || got[0].Tool != "lookup_order" {
		t.Errorf("the handler's call %+v; want session %s, a turn, tool lookup_order", got[0], s.client.Session().ID())
	}
	var host []*acphost.HostToolCall
	for _, ev := range r.events {
		if ev.Type == acphost.EventHostTool {
			host = append(host, ev.HostTool)
		}
	}
	if len(host) != 1 || host[0].Err != nil || !strings.Contains(string(host[0].Args), HostToolArg) || !strings.Contains(string(host[0].Result), hostToolSecret) {
		t.Errorf("host tool events %+v; want one with the arguments and the result", host)
	}
	var after []MockCall
	seenTool := false
	for _, c := range s.mock.Calls() {
		if strings.HasPrefix(c.Action, "tool:") {
			seenTool = true
			t.Logf("the model called %s", c.Action)
			continue
		}
		if seenTool && c.Body != nil {
			after = append(after, c)
		}
	}
	if len(after) == 0 || !strings.Contains(string(after[0].Body), hostToolSecret) {
		s.dump()
		t.Fatalf("the model's call after the tool does not carry the handler's result %q", hostToolSecret)
	}
	if r.resp.StopReason != acp.StopEndTurn || !strings.Contains(r.resp.Text, FinalText) {
		t.Errorf("stop %q, text %q; want end_turn with the mock's final text", r.resp.StopReason, r.resp.Text)
	}
}

func actions(calls []MockCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Action)
	}
	return out
}
