// The MCPCall step: a minimal MCP client over Streamable HTTP, enough to
// call one tool as an agent does (initialize, initialized, tools/call).

package fakeagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// mcpServer is one entry of a session's mcpServers, as far as MCPCall
// reads it.
type mcpServer struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	URL     string `json:"url"`
	Headers []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"headers"`
}

// noteMCPServers keeps the mcpServers a session was opened with.
func (a *Agent) noteMCPServers(sid string, params json.RawMessage) {
	var p struct {
		MCPServers []mcpServer `json:"mcpServers"`
	}
	_ = json.Unmarshal(params, &p)
	a.mu.Lock()
	a.mcpServers[sid] = p.MCPServers
	a.mu.Unlock()
}

// mcpServerOf returns the session's server of that name.
func (a *Agent) mcpServerOf(sid, name string) (mcpServer, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.mcpServers[sid] {
		if s.Name == name {
			return s, true
		}
	}
	return mcpServer{}, false
}

// callMCP plays an MCPCall step.
func (t *turn) callMCP(c MCPCall, cancellable bool) result {
	id := fmt.Sprintf("mcp-%d", t.a.nextRun.Add(1))
	args := c.Arguments
	if !isSet(args) {
		args = json.RawMessage(`{}`)
	}
	t.sendUpdate(mustJSON(toolCall{SessionUpdate: "tool_call", ToolCallID: id, Title: "mcp__" + c.Server + "__" + c.Tool, Kind: "other", Status: "in_progress", RawInput: args}))
	ctx, cancel := context.WithCancel(t.a.ctx)
	defer cancel()
	if cancellable {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-t.cancelCh:
				cancel()
			case <-stop:
			}
		}()
	}
	status, text, out := "completed", "", json.RawMessage(nil)
	srv, ok := t.a.mcpServerOf(t.sid, c.Server)
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("no MCP server %q was given to the session", c.Server)
	case srv.Type != "http":
		err = fmt.Errorf("MCP server %q is %q; MCPCall speaks http", c.Server, srv.Type)
	default:
		out, err = (&mcpClient{srv: srv}).callTool(ctx, c.Tool, args)
	}
	if err != nil {
		status, text = "failed", err.Error()
	} else {
		var res struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		}
		_ = json.Unmarshal(out, &res)
		var b strings.Builder
		for _, blk := range res.Content {
			if blk.Type == "text" {
				b.WriteString(blk.Text)
			}
		}
		text = b.String()
		if res.IsError {
			status = "failed"
		}
	}
	t.sendUpdate(mustJSON(toolCall{SessionUpdate: "tool_call_update", ToolCallID: id, Status: status,
		Content: []toolContent{{"content", textBlock{"text", text}}}, RawOutput: out}))
	switch {
	case t.a.ctx.Err() != nil:
		return halted
	case cancellable && t.isCancelled():
		return cancelled
	}
	return finished
}

// mcpClient is one MCP session with an http server.
type mcpClient struct {
	srv     mcpServer
	session string // Mcp-Session-Id, if the server gave one
	version string // the protocol version negotiated
	nextID  int
	hc      *http.Client
}

// maxMCPResponse bounds what the client reads of one response.
const maxMCPResponse = 16 << 20

// callTool runs initialize, notifications/initialized and tools/call, and
// returns the call's result; a JSON-RPC error is an error.
func (c *mcpClient) callTool(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true} // no proxy for loopback; nothing left open after
	defer tr.CloseIdleConnections()
	c.hc = &http.Client{Transport: tr}
	initRes, err := c.request(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": "fakeagent", "version": "0.0.0"},
	})
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(initRes, &ir)
	c.version = ir.ProtocolVersion
	defer c.end()
	if err := c.notify(ctx, "notifications/initialized"); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	res, err := c.request(ctx, "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return nil, fmt.Errorf("tools/call %s: %w", tool, err)
	}
	return res, nil
}

func (c *mcpClient) post(ctx context.Context, msg any) (*http.Response, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.srv.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	c.headers(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return c.hc.Do(req)
}

func (c *mcpClient) headers(req *http.Request) {
	for _, h := range c.srv.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
}

// request sends one request and reads its answer, from a JSON body or
// from the SSE stream the server answers with.
func (c *mcpClient) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.nextID++
	id := c.nextID
	resp, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && c.session == "" {
		c.session = s
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("HTTP %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	body := io.LimitReader(resp.Body, maxMCPResponse)
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct != "text/event-stream" {
		b, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		return answerOfMCP(b, id)
	}
	return readSSEAnswer(body, id)
}

// readSSEAnswer reads events until the one answering id.
func readSSEAnswer(r io.Reader, id int) (json.RawMessage, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxMCPResponse)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			data.WriteString(strings.TrimPrefix(d, " "))
			data.WriteByte('\n')
			continue
		}
		if line != "" || data.Len() == 0 {
			continue
		}
		res, err := answerOfMCP(data.Bytes(), id)
		if !errors.Is(err, errNotTheAnswer) {
			return res, err
		}
		data.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("the stream ended without an answer")
}

var errNotTheAnswer = errors.New("not the answer")

// answerOfMCP is the result of the JSON-RPC response to id in b.
func answerOfMCP(b []byte, id int) (json.RawMessage, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("a malformed answer: %w", err)
	}
	if string(m.ID) != fmt.Sprint(id) {
		return nil, errNotTheAnswer
	}
	if m.Error != nil {
		return nil, fmt.Errorf("MCP error %d: %s", m.Error.Code, m.Error.Message)
	}
	return m.Result, nil
}

func (c *mcpClient) notify(ctx context.Context, method string) error {
	resp, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "method": method})
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	return nil
}

// end closes the MCP session, if the server keeps one.
func (c *mcpClient) end() {
	if c.session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.srv.URL, nil)
	if err != nil {
		return
	}
	c.headers(req)
	if resp, err := c.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}
