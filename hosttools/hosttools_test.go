package hosttools_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/hosttools"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	if code, ran := clientMain(); ran {
		os.Exit(code)
	}
	os.Exit(testutil.RunCheckingGoroutines(m))
}

var httpCaps = json.RawMessage(`{"mcpCapabilities":{"http":true}}`)

type echoIn struct {
	Text string `json:"text"`
}

type noIn struct{}

// newServer is an MCP server with a read-only tool "echo" (its answer
// "echo: <text>"), a writing tool "write", and whatever more adds.
func newServer(more func(*mcp.Server)) (*mcp.Server, *callLog) {
	log := &callLog{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			log.add(ctx, "echo")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "write"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			log.add(ctx, "write")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + in.Text}}}, nil, nil
		})
	if more != nil {
		more(srv)
	}
	return srv, log
}

// callLog records the handlers that ran and who called them.
type callLog struct {
	mu    sync.Mutex
	calls []acphost.HostToolCall
	names []string
}

func (l *callLog) add(ctx context.Context, name string) {
	call, _ := acphost.HostToolCallFrom(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
	l.names = append(l.names, name)
}

func (l *callLog) ran() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.names...)
}

// agent is an in-process fake agent the client reaches over pipes.
type agent struct {
	*fakeagent.Agent
	c *acphost.ACPClient
}

func connect(t *testing.T, script fakeagent.Script, opts acphost.ACPOptions) *agent {
	t.Helper()
	if script.AgentCapabilities == nil {
		script.AgentCapabilities = httpCaps
	}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	fa := fakeagent.New(script)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = fa.Serve(ctx, toAgentR, toClientW)
		toClientW.Close()
		toAgentR.Close()
	}()
	closer := closeFunc(func() error { toAgentW.Close(); toClientR.Close(); return nil })
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	opts.Transport = &acphost.StreamTransport{Reader: toClientR, Writer: toAgentW, Closer: closer}
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		closer()
		stop()
		<-served
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		stop()
		<-served
	})
	return &agent{Agent: fa, c: c}
}

type closeFunc func() error

func (f closeFunc) Close() error { return f() }

func oneTurn(steps ...fakeagent.Step) fakeagent.Script {
	return fakeagent.Script{Turns: []fakeagent.Turn{{Steps: steps}}}
}

// run runs one turn and returns its events.
func run(t *testing.T, s *acphost.Session) ([]acphost.StreamEvent, acphost.Response, error) {
	t.Helper()
	var events []acphost.StreamEvent
	resp, err := s.GenerateStream(context.Background(), acphost.Request{Prompt: "go"}, func(ev acphost.StreamEvent) { events = append(events, ev) })
	return events, resp, err
}

func hostEvents(events []acphost.StreamEvent) []*acphost.HostToolCall {
	var out []*acphost.HostToolCall
	for _, ev := range events {
		if ev.Type == acphost.EventHostTool {
			out = append(out, ev.HostTool)
		}
	}
	return out
}

// agentResult is what the agent reported of its MCP call: the final
// tool_call_update's status and text.
func agentResult(t *testing.T, resp acphost.Response) (status, text string) {
	t.Helper()
	require.NotEmpty(t, resp.ToolCalls)
	tc := resp.ToolCalls[len(resp.ToolCalls)-1]
	for _, c := range tc.Content {
		if c.Content != nil {
			text += c.Content.Text
		}
	}
	return string(tc.Status), text
}

// sentServers is the mcpServers of the agent's first session/new.
func sentServers(t *testing.T, fa *fakeagent.Agent) []acp.MCPServer {
	t.Helper()
	for _, m := range fa.Received() {
		if m.Method == "session/new" {
			var p struct {
				MCPServers []acp.MCPServer `json:"mcpServers"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			return p.MCPServers
		}
	}
	t.Fatal("no session/new")
	return nil
}

// TestHostToolCall: the agent calls the host's tool in a turn; the
// handler runs with the session and turn in its ctx, its result reaches
// the agent, and the stream has the host's event with name, arguments
// and result, after the agent's own tool_call.
func TestHostToolCall(t *testing.T) {
	srv, log := newServer(nil)
	a := connect(t, oneTurn(fakeagent.CallMCP("shop", "echo", json.RawMessage(`{"text":"hi"}`))),
		acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{Name: "shop"})})
	servers := sentServers(t, a.Agent)
	require.Len(t, servers, 1)
	assert.Equal(t, "shop", servers[0].Name)
	assert.Equal(t, acp.MCPHTTP, servers[0].Type)
	assert.True(t, strings.HasPrefix(servers[0].URL, "http://127.0.0.1:"), servers[0].URL)
	require.Len(t, servers[0].Headers, 1)
	assert.Equal(t, "Authorization", servers[0].Headers[0].Name)
	assert.Regexp(t, `^Bearer [0-9a-f]{64}$`, servers[0].Headers[0].Value)

	events, resp, err := run(t, a.c.Session())
	require.NoError(t, err)
	status, text := agentResult(t, resp)
	assert.Equal(t, "completed", status)
	assert.Equal(t, "echo: hi", text)
	assert.Equal(t, []string{"echo"}, log.ran())
	log.mu.Lock()
	who := log.calls[0]
	log.mu.Unlock()
	assert.Equal(t, a.c.Session().ID(), who.SessionID)
	assert.NotZero(t, who.Turn)
	assert.Equal(t, "echo", who.Tool)
	assert.True(t, who.ReadOnly)

	host := hostEvents(events)
	require.Len(t, host, 1)
	assert.Equal(t, "shop", host[0].Server)
	assert.Equal(t, "echo", host[0].Tool)
	assert.JSONEq(t, `{"text":"hi"}`, string(host[0].Args))
	assert.Contains(t, string(host[0].Result), `"echo: hi"`)
	assert.NoError(t, host[0].Err)
	assert.Equal(t, who.Turn, host[0].Turn)
	var order []acphost.EventType
	for _, ev := range events {
		order = append(order, ev.Type)
	}
	assert.Equal(t, []acphost.EventType{acphost.EventToolCall, acphost.EventHostTool, acphost.EventToolUpdate, acphost.EventToolResult, acphost.EventDone}, order)

	// A second turn is another number.
	_, _, err = run(t, a.c.Session())
	require.NoError(t, err)
	log.mu.Lock()
	assert.Greater(t, log.calls[1].Turn, who.Turn)
	log.mu.Unlock()
}

// TestHostToolsTokenRequired: without the session's bearer token (none, a
// wrong one, another session's) the endpoint answers 401 and no handler
// runs; with it the SDK's own client lists the tools.
func TestHostToolsTokenRequired(t *testing.T) {
	srv, log := newServer(nil)
	a := connect(t, fakeagent.Script{}, acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{})})
	other, err := a.c.NewSession(context.Background(), acphost.SessionOptions{})
	require.NoError(t, err)
	defer other.Close(context.Background())
	var urls, tokens []string
	for _, m := range a.Received() {
		if m.Method == "session/new" {
			var p struct {
				MCPServers []acp.MCPServer `json:"mcpServers"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			urls, tokens = append(urls, p.MCPServers[0].URL), append(tokens, p.MCPServers[0].Headers[0].Value)
		}
	}
	require.Len(t, urls, 2)
	assert.NotEqual(t, urls[0], urls[1], "a port per session")
	assert.NotEqual(t, tokens[0], tokens[1], "a token per session")
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"}}}`
	for _, auth := range []string{"", "Bearer ", "Bearer 00", tokens[1], strings.ToUpper(tokens[0]), tokens[0] + "0"} {
		req, _ := http.NewRequest(http.MethodPost, urls[0], strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "Authorization %q", auth)
	}
	assert.Empty(t, log.ran())

	cs := sdkClient(t, urls[0], tokens[0])
	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, list.Tools, 2)
	// Outside a turn a call is refused, as the tool's error.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "no turn of session")
	assert.Empty(t, log.ran())
}

// sdkClient is the MCP Go SDK's client on a session's endpoint.
func sdkClient(t *testing.T, url, auth string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: headerRT{tr, auth}}
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

type headerRT struct {
	rt   http.RoundTripper
	auth string
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", h.auth)
	return h.rt.RoundTrip(r)
}

// TestHostToolPlanMode: in plan mode a tool annotated read-only runs, one
// that is not is refused before its handler, and the event says why.
func TestHostToolPlanMode(t *testing.T) {
	srv, log := newServer(nil)
	a := connect(t, oneTurn(
		fakeagent.CallMCP("host", "echo", json.RawMessage(`{"text":"a"}`)),
		fakeagent.CallMCP("host", "write", json.RawMessage(`{"text":"b"}`)),
	), acphost.ACPOptions{PlanMode: true, HostTools: hosttools.New(srv, hosttools.Options{})})
	events, resp, err := run(t, a.c.Session())
	require.NoError(t, err)
	assert.Equal(t, []string{"echo"}, log.ran())
	status, text := agentResult(t, resp)
	assert.Equal(t, "failed", status)
	assert.Contains(t, text, "plan mode")
	host := hostEvents(events)
	require.Len(t, host, 2)
	assert.NoError(t, host[0].Err)
	assert.ErrorIs(t, host[1].Err, acphost.ErrRefused)
	assert.Equal(t, "write", host[1].Tool)

	a.c.SetPlanMode(false)
	_, _, err = run(t, a.c.Session())
	require.NoError(t, err)
	assert.Equal(t, []string{"echo", "echo", "write"}, log.ran())
}

// TestHostToolPolicy: Options.Allow sees each call (with its session and
// turn) before the handler; its refusal reaches the agent as the tool's
// error and the stream as the event's Err, and no handler runs.
func TestHostToolPolicy(t *testing.T) {
	srv, log := newServer(nil)
	var asked []acphost.HostToolCall
	var mu sync.Mutex
	noWrites := errors.New("no writes today")
	allow := func(ctx context.Context, call acphost.HostToolCall) error {
		mu.Lock()
		asked = append(asked, call)
		mu.Unlock()
		if call.Tool == "write" {
			return noWrites
		}
		return nil
	}
	a := connect(t, oneTurn(
		fakeagent.CallMCP("host", "write", json.RawMessage(`{"text":"b"}`)),
		fakeagent.CallMCP("host", "echo", json.RawMessage(`{"text":"a"}`)),
	), acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{Allow: allow})})
	events, resp, err := run(t, a.c.Session())
	require.NoError(t, err)
	assert.Equal(t, []string{"echo"}, log.ran())
	mu.Lock()
	require.Len(t, asked, 2)
	assert.Equal(t, a.c.Session().ID(), asked[0].SessionID)
	assert.NotZero(t, asked[0].Turn)
	mu.Unlock()
	host := hostEvents(events)
	require.Len(t, host, 2)
	assert.ErrorIs(t, host[0].Err, acphost.ErrRefused)
	assert.ErrorIs(t, host[0].Err, noWrites)
	require.Len(t, resp.ToolCalls, 2)
	assert.Equal(t, acp.ToolStatus("failed"), resp.ToolCalls[0].Status)
	assert.Equal(t, acp.ToolStatus("completed"), resp.ToolCalls[1].Status)
}

// TestHostToolPanicIsAnMCPError: a handler that panics answers the agent
// an MCP error; the host lives on and the next call works.
func TestHostToolPanicIsAnMCPError(t *testing.T) {
	srv, _ := newServer(func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "boom"}, func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			panic("kaboom")
		})
	})
	a := connect(t, oneTurn(
		fakeagent.CallMCP("host", "boom", nil),
		fakeagent.CallMCP("host", "echo", json.RawMessage(`{"text":"after"}`)),
	), acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{})})
	events, resp, err := run(t, a.c.Session())
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 2)
	assert.Equal(t, acp.ToolStatus("failed"), resp.ToolCalls[0].Status)
	assert.Contains(t, resp.ToolCalls[0].Content[0].Content.Text, "MCP error")
	assert.Contains(t, resp.ToolCalls[0].Content[0].Content.Text, "kaboom")
	status, text := agentResult(t, resp)
	assert.Equal(t, "completed", status)
	assert.Equal(t, "echo: after", text)
	host := hostEvents(events)
	require.Len(t, host, 2)
	assert.ErrorContains(t, host[0].Err, "panicked")
}

// TestHostToolResultCap: a result over MaxResultBytes reaches the agent cut,
// with a note, and the event says Truncated; one under it is whole.
func TestHostToolResultCap(t *testing.T) {
	big := strings.Repeat("é", 50_000) // 100 kB of two-byte runes
	srv, _ := newServer(func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}, &mcp.TextContent{Text: "tail"}}}, map[string]any{"n": 1}, nil
		})
	})
	const limit = 10_000
	a := connect(t, oneTurn(fakeagent.CallMCP("host", "big", nil), fakeagent.CallMCP("host", "echo", json.RawMessage(`{"text":"s"}`))),
		acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{MaxResultBytes: limit})})
	events, resp, err := run(t, a.c.Session())
	require.NoError(t, err)
	host := hostEvents(events)
	require.Len(t, host, 2)
	assert.True(t, host[0].Truncated)
	assert.LessOrEqual(t, len(host[0].Result), limit)
	assert.False(t, host[1].Truncated)
	tc := resp.ToolCalls[0]
	assert.LessOrEqual(t, len(tc.RawOutput), limit, "what the agent got")
	text := tc.Content[0].Content.Text
	assert.True(t, strings.HasPrefix(text, "éé"))
	assert.NotContains(t, text, "tail")
	assert.Contains(t, text, "over the host's cap of 10000")
	assert.True(t, strings.ToValidUTF8(text, "?") == text, "cut at a rune boundary")
}

// TestHostToolCancelEndsHandlerCtx: cancelling the turn ends the running
// handler's ctx (the cause is the turn's), and the turn ends.
func TestHostToolCancelEndsHandlerCtx(t *testing.T) {
	started := make(chan struct{})
	var cause atomic.Value
	srv, _ := newServer(func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
			close(started)
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return nil, nil, ctx.Err()
		})
	})
	a := connect(t, oneTurn(fakeagent.CallMCP("host", "slow", nil)), acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{})})
	go func() {
		<-started
		a.c.Cancel()
	}()
	_, resp, err := run(t, a.c.Session())
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, acp.StopCancelled, resp.StopReason)
	testutil.Eventually(t, "the handler's end", func() bool { return cause.Load() != nil })
	assert.ErrorIs(t, cause.Load().(error), context.Canceled)
}

// TestHostToolsClosedWithSessionAndClient: a session's endpoint stops when
// the session closes (its port refuses), every one when the client does,
// with no goroutine left (TestMain checks).
func TestHostToolsClosedWithSessionAndClient(t *testing.T) {
	srv, _ := newServer(nil)
	a := connect(t, fakeagent.Script{}, acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{})})
	s2, err := a.c.NewSession(context.Background(), acphost.SessionOptions{})
	require.NoError(t, err)
	var urls []string
	for _, m := range a.Received() {
		if m.Method == "session/new" {
			var p struct {
				MCPServers []acp.MCPServer `json:"mcpServers"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			urls = append(urls, p.MCPServers[0].URL)
		}
	}
	require.Len(t, urls, 2)
	reachable := func(url string) bool {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}
	require.True(t, reachable(urls[1]))
	require.NoError(t, s2.Close(context.Background()))
	assert.False(t, reachable(urls[1]), "closed with its session")
	assert.True(t, reachable(urls[0]))
	require.NoError(t, a.c.Close())
	assert.False(t, reachable(urls[0]), "closed with the client")
}

// TestHostToolsNeedALocalAgent: host tools are on the host's loopback; an
// open with a link that does not share it fails, saying so.
func TestHostToolsNotAdvertised(t *testing.T) {
	srv, _ := newServer(nil)
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	fa := fakeagent.New(fakeagent.Script{AgentCapabilities: json.RawMessage(`{}`)})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = fa.Serve(ctx, toAgentR, toClientW)
		toClientW.Close()
	}()
	_, err := acphost.Start(context.Background(), acphost.ACPOptions{Dir: t.TempDir(), HostTools: hosttools.New(srv, hosttools.Options{}),
		Transport: &acphost.StreamTransport{Reader: toClientR, Writer: toAgentW, Closer: closeFunc(func() error { toAgentW.Close(); toClientR.Close(); return nil })}})
	var me *acphost.MCPServerError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, acp.MCPHTTP, me.Transport)
	assert.True(t, me.HostTools, "the refused server is the host tools")
	assert.Contains(t, err.Error(), `(the host tools of ACPOptions.HostTools) is http, which the agent does not take (it takes stdio)`)
	assert.Contains(t, err.Error(), `fakeagent: set Script.AgentCapabilities to {"mcpCapabilities":{"http":true}}`, "the message says what to set")
	toAgentW.Close()
	toClientR.Close()
	stop()
	<-served
}

// TestAttackConcurrentRequestsAreBounded: an agent that opens more requests
// at once than MaxConcurrentRequests gets 429 for the rest at once; the
// ones held are served when their handlers return.
func TestAttackConcurrentRequestsAreBounded(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	srv, _ := newServer(func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "hold", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
			started.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil, nil
		})
	})
	a := connect(t, oneTurn(fakeagent.Step{WaitCancel: true}), acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{})})
	servers := sentServers(t, a.Agent)
	url, auth := servers[0].URL, servers[0].Headers[0].Value
	turn := make(chan error, 1)
	go func() {
		_, err := a.c.GenerateCtx(context.Background(), acphost.Request{Prompt: "go"})
		turn <- err
	}()
	testutil.Eventually(t, "the turn running", func() bool {
		for _, m := range a.Received() {
			if m.Method == "session/prompt" {
				return true
			}
		}
		return false
	})
	clients := make([]*mcp.ClientSession, hosttools.MaxConcurrentRequests)
	for i := range clients {
		clients[i] = sdkClient(t, url, auth)
	}
	var wg sync.WaitGroup
	for _, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hold"})
			if err != nil || res.IsError {
				t.Errorf("a held call: %v %+v", err, res)
			}
		}()
	}
	testutil.Eventually(t, "every slot held", func() bool { return started.Load() == hosttools.MaxConcurrentRequests })
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", auth)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	close(release)
	wg.Wait()
	a.c.Cancel()
	<-turn
}
