package fakeagent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// mcpStub is a hand-written Streamable HTTP MCP server: initialize answered
// as JSON with a session id, tools/call as SSE (a progress notification
// first), anything else as the test's handler says. It records requests.
type mcpStub struct {
	mu      sync.Mutex
	methods []string
	auth    []string
	deleted bool
	call    func(w http.ResponseWriter, id json.RawMessage)
}

func (s *mcpStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	if r.Method == http.MethodDelete {
		s.deleted = true
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &m)
	s.mu.Lock()
	s.methods = append(s.methods, m.Method)
	s.mu.Unlock()
	switch m.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "sess-1")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"stub","version":"0"}}}`, m.ID)
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/call":
		s.call(w, m.ID)
	}
}

func sseAnswer(w http.ResponseWriter, id json.RawMessage, result string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
	fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, result)
}

// openWith opens a session given mcpServers and plays the turn's MCPCall.
func openWith(t *testing.T, servers any, steps ...fakeagent.Step) []map[string]any {
	t.Helper()
	c, _ := inProcess(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: steps}}})
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	resp, _ := c.call("session/new", map[string]any{"cwd": "/tmp", "mcpServers": servers})
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		t.Fatal(err)
	}
	pid := c.prompt(r.SessionID, "go")
	_, msgs := c.until(func(m wire) bool { return m.isResponse(pid) })
	var updates []map[string]any
	for _, m := range msgs {
		if u := m.update(); u != nil {
			updates = append(updates, u)
		}
	}
	return updates
}

func httpServer(url string) []any {
	return []any{map[string]any{"type": "http", "name": "shop", "url": url, "headers": []any{map[string]any{"name": "Authorization", "value": "Bearer t0k"}}}}
}

// An MCPCall step calls the tool of the session's server (its headers
// sent), reads an SSE answer past a notification, reports a tool_call
// and its completion with the text, and ends the MCP session.
func TestMCPCall(t *testing.T) {
	stub := &mcpStub{call: func(w http.ResponseWriter, id json.RawMessage) {
		sseAnswer(w, id, `{"content":[{"type":"text","text":"order A-1: shipped"}]}`)
	}}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	updates := openWith(t, httpServer(srv.URL), fakeagent.CallMCP("shop", "lookup", json.RawMessage(`{"id":"A-1"}`)))
	if len(updates) != 2 {
		t.Fatalf("updates %v, want a tool_call and its update", updates)
	}
	if updates[0]["title"] != "mcp__shop__lookup" || updates[0]["status"] != "in_progress" || fmt.Sprint(updates[0]["rawInput"]) != "map[id:A-1]" {
		t.Errorf("tool_call %v", updates[0])
	}
	if updates[1]["status"] != "completed" || !strings.Contains(fmt.Sprint(updates[1]["content"]), "order A-1: shipped") || updates[1]["rawOutput"] == nil {
		t.Errorf("update %v, want completed with the text and the result", updates[1])
	}
	stub.mu.Lock()
	defer stub.mu.Unlock()
	if got := strings.Join(stub.methods, " "); got != "initialize notifications/initialized tools/call" {
		t.Errorf("methods %q", got)
	}
	for _, a := range stub.auth {
		if a != "Bearer t0k" {
			t.Errorf("Authorization %q, want the server's header", a)
		}
	}
	if !stub.deleted {
		t.Error("the MCP session was not ended")
	}
}

// What the server answers wrongly fails the tool call with why: an MCP
// error, isError, HTTP 401, a stream without the answer, a server not
// given, a server of another transport.
func TestMCPCallFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		call    func(w http.ResponseWriter, id json.RawMessage)
		servers func(url string) any
		want    string
	}{
		{"mcp error", func(w http.ResponseWriter, id json.RawMessage) {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"boom"}}`, id)
		}, nil, "MCP error -32603: boom"},
		{"isError", func(w http.ResponseWriter, id json.RawMessage) {
			sseAnswer(w, id, `{"content":[{"type":"text","text":"no such order"}],"isError":true}`)
		}, nil, "no such order"},
		{"401", func(w http.ResponseWriter, _ json.RawMessage) { http.Error(w, "unauthorized", http.StatusUnauthorized) }, nil, "HTTP 401"},
		{"no answer", func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n\n")
		}, nil, "the stream ended without an answer"},
		{"not given", nil, func(string) any { return []any{} }, `no MCP server "shop" was given`},
		{"stdio", nil, func(string) any {
			return []any{map[string]any{"name": "shop", "command": "x", "args": []any{}, "env": []any{}}}
		}, `MCPCall speaks http`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&mcpStub{call: tc.call})
			defer srv.Close()
			servers := any(httpServer(srv.URL))
			if tc.servers != nil {
				servers = tc.servers(srv.URL)
			}
			updates := openWith(t, servers, fakeagent.CallMCP("shop", "lookup", nil))
			if len(updates) != 2 || updates[1]["status"] != "failed" || !strings.Contains(fmt.Sprint(updates[1]["content"]), tc.want) {
				t.Errorf("updates %v, want a failed update saying %q", updates, tc.want)
			}
		})
	}
}

func TestMCPCallValidated(t *testing.T) {
	for _, st := range []fakeagent.Step{
		{MCPCall: &fakeagent.MCPCall{Tool: "x"}},
		{MCPCall: &fakeagent.MCPCall{Server: "s", Tool: "x", Arguments: json.RawMessage(`[1]`)}},
	} {
		a := fakeagent.New(fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{st}}}})
		r, w := io.Pipe()
		err := a.Serve(t.Context(), r, io.Discard)
		w.Close()
		if err == nil {
			t.Errorf("step %+v: Serve accepted it", st.MCPCall)
		}
	}
}
