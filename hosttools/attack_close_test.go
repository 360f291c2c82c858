package hosttools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// handlerRuns records the runs of a racing test's tool handler: how many,
// how many outside a call the host checked (no HostToolCallFrom), the
// arguments of each, and whether each one's ctx ended (not the safety
// timer) before the handler returned.
type handlerRuns struct {
	mu        sync.Mutex
	ran       int
	unchecked int
	args      []string
	running   int
	unended   int // returned by the safety timer: the ctx outlived the close
}

// tool is the handler of a non-read-only tool "write" that waits for its
// ctx to end (at most hold) and records its run.
func (r *handlerRuns) tool(hold time.Duration) mcp.ToolHandlerFor[echoIn, any] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		_, checked := acphost.HostToolCallFrom(ctx)
		r.mu.Lock()
		r.ran++
		r.running++
		r.args = append(r.args, in.Text)
		if !checked {
			r.unchecked++
		}
		r.mu.Unlock()
		timer := time.NewTimer(hold)
		defer timer.Stop()
		ended := true
		select {
		case <-ctx.Done():
		case <-timer.C:
			ended = false
		}
		r.mu.Lock()
		r.running--
		if !ended {
			r.unended++
		}
		r.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote"}}}, nil, nil
	}
}

func (r *handlerRuns) snapshot() (ran, unchecked, running, unended int, args []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ran, r.unchecked, r.running, r.unended, append([]string(nil), r.args...)
}

// endpoint is a session's host tools as its agent was given them.
type endpoint struct{ url, auth string }

// lastEndpoint is the host tools' server of the agent's latest
// session/new.
func lastEndpoint(t *testing.T, fa *fakeagent.Agent) endpoint {
	t.Helper()
	var ep endpoint
	for _, m := range fa.Received() {
		if m.Method == "session/new" {
			var p struct {
				MCPServers []acp.MCPServer `json:"mcpServers"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			require.Len(t, p.MCPServers, 1)
			ep = endpoint{p.MCPServers[0].URL, p.MCPServers[0].Headers[0].Value}
		}
	}
	require.NotEmpty(t, ep.url)
	return ep
}

// callTool sends one tools/call as an agent would (a stateless POST with
// the bearer token) and reports whether an HTTP answer came back.
func callTool(hc *http.Client, ep endpoint, tool, text string) bool {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"text":%q}}}`, tool, text)
	req, _ := http.NewRequest(http.MethodPost, ep.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", ep.auth)
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return true
}

// hammer calls tool on ep from n goroutines until the endpoint stops
// answering; answered is closed at the first answer. It returns a wait
// for the callers.
func hammer(ep endpoint, tool string, n int, seq *atomic.Int64, answered chan struct{}) func() {
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var once sync.Once
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for callTool(hc, ep, tool, fmt.Sprint(seq.Add(1))) {
				once.Do(func() { close(answered) })
			}
			once.Do(func() { close(answered) })
		}()
	}
	return func() {
		wg.Wait()
		tr.CloseIdleConnections()
	}
}

// TestAttackHostToolsRaceSessionClose: an agent keeps calling a tool that
// is not read-only while its sessions close, with plan mode on, no turn
// running and a policy that refuses everything. Every call must be
// refused: the handler never runs, in particular not for a request that
// arrives while the endpoint is being torn down.
func TestAttackHostToolsRaceSessionClose(t *testing.T) {
	runs := &handlerRuns{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "write"}, runs.tool(2*time.Second))
	var asked atomic.Int64
	allow := func(context.Context, acphost.HostToolCall) error {
		asked.Add(1)
		return errors.New("nothing today")
	}
	a := connect(t, fakeagent.Script{}, acphost.ACPOptions{PlanMode: true, HostTools: hosttools.New(srv, hosttools.Options{Allow: allow})})
	const closes = 300
	var seq atomic.Int64
	for i := range closes {
		s, err := a.c.NewSession(context.Background(), acphost.SessionOptions{})
		require.NoError(t, err)
		answered := make(chan struct{})
		wait := hammer(lastEndpoint(t, a.Agent), "write", 4, &seq, answered)
		<-answered
		require.NoError(t, s.Close(context.Background()))
		wait()
		if ran, unchecked, _, _, _ := runs.snapshot(); ran > 0 {
			t.Fatalf("after %d closes and %d calls: the handler ran %d times (%d outside a checked call); the policy refused all, was asked %d times", i+1, seq.Load(), ran, unchecked, asked.Load())
		}
	}
	t.Logf("%d closes, %d calls, none ran", closes, seq.Load())
}

// TestAttackHostToolsCloseEndsRunningCalls: calls that may run (a turn
// running, no plan mode, a policy that lets all through) race their
// session's close. Every handler that runs was asked of the policy and
// carries its call, its ctx has ended by the time Close returns (none
// left running), and each call the policy saw is an EventHostTool of the
// turn.
func TestAttackHostToolsCloseEndsRunningCalls(t *testing.T) {
	runs := &handlerRuns{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "write"}, runs.tool(2*time.Second))
	var mu sync.Mutex
	seen := map[string]bool{}
	allow := func(_ context.Context, call acphost.HostToolCall) error {
		var in echoIn
		_ = json.Unmarshal(call.Args, &in)
		mu.Lock()
		seen[in.Text] = true
		mu.Unlock()
		return nil
	}
	a := connect(t, oneTurn(fakeagent.Step{WaitCancel: true}), acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{Allow: allow})})
	const closes = 100
	var seq atomic.Int64
	for i := range closes {
		s, err := a.c.NewSession(context.Background(), acphost.SessionOptions{})
		require.NoError(t, err)
		ep := lastEndpoint(t, a.Agent)
		var events atomic.Int64
		turn := make(chan error, 1)
		go func() {
			_, err := s.GenerateStream(context.Background(), acphost.Request{Prompt: "go"}, func(ev acphost.StreamEvent) {
				if ev.Type == acphost.EventHostTool {
					events.Add(1)
				}
			})
			turn <- err
		}()
		mu.Lock()
		askedBefore := len(seen)
		mu.Unlock()
		answered := make(chan struct{})
		wait := hammer(ep, "write", 4, &seq, answered)
		// A call held in its handler is in flight when the session closes.
		testutil.Until(t, 10*time.Second, func() (bool, string) {
			_, _, running, _, _ := runs.snapshot()
			return running > 0, fmt.Sprintf("close %d: no call reached its handler", i)
		})
		require.NoError(t, s.Close(context.Background()))
		_, _, running, unended, _ := runs.snapshot()
		require.Zero(t, running, "close %d: handlers still running after Close returned", i)
		require.Zero(t, unended, "close %d: a handler's ctx did not end with the close", i)
		wait()
		s.Cancel()
		<-turn
		ran, unchecked, _, _, args := runs.snapshot()
		require.Zero(t, unchecked, "close %d: %d of %d runs outside a checked call", i, unchecked, ran)
		mu.Lock()
		for _, arg := range args {
			require.True(t, seen[arg], "close %d: call %s ran unseen by the policy", i, arg)
		}
		calls := len(seen) - askedBefore
		mu.Unlock()
		assert.Equal(t, int64(calls), events.Load(), "close %d: each call the policy saw is an EventHostTool", i)
	}
	ran, _, _, _, _ := runs.snapshot()
	t.Logf("%d closes, %d calls, %d ran", closes, seq.Load(), ran)
}
