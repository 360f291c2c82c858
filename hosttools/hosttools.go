// Package hosttools gives the agent the host's own tools: an MCP server
// built with the MCP Go SDK (github.com/modelcontextprotocol/go-sdk), with
// whatever it registered (tools, resources, prompts), served to each
// session of an acphost client on loopback. It is the one package of
// acphost that links the SDK; the root package knows host tools only
// through acphost.HostTools.
//
//	srv := mcp.NewServer(&mcp.Implementation{Name: "shop"}, nil)
//	mcp.AddTool(srv, &mcp.Tool{Name: "order", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, lookUpOrder)
//	c, err := acphost.Start(ctx, acphost.ACPOptions{Command: "…", HostTools: hosttools.New(srv, hosttools.Options{Name: "shop"})})
//
// Each session gets its own Streamable HTTP endpoint on 127.0.0.1 at a
// random port, closed with the session or the client. What guards it:
//
//   - On Linux, who connects: a connection whose other end is not a
//     socket of the host's own user (its owner read from /proc/net/tcp and
//     tcp6, once per connection, before a byte is read) is closed at once,
//     and so is one whose owner cannot be found. Another local user who
//     learned the token (an agent may show it on its command line) is
//     refused. On macOS and Windows there is no such check: the token
//     alone guards the endpoint.
//   - A bearer token of the session's own (256 bits), which the agent is
//     given in the server's headers: without it, 401. Connections that
//     have not shown it are capped, and every connection has read-header
//     and idle timeouts, as acphost's other servers have.
//   - A live session: a call is served only while its session's endpoint
//     is; closing the session refuses new calls, ends the running ones'
//     ctx and waits for them before it returns.
//
// Every call of a tool goes through the host first: the turn that called
// it (none running, or the session closed: refused), plan mode (a tool
// not annotated readOnlyHint: refused), Options.Allow; then the handler
// runs in a ctx that ends with the turn or the endpoint and says who
// called (acphost.HostToolCallFrom); its result is cut to
// Options.MaxResultBytes with a note, a panic becomes an MCP error, and
// the turn's stream gets an acphost.EventHostTool with the call, its
// arguments and its outcome. No call runs unseen.
package hosttools

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/httpserve"

	"github.com/acphost/acphost"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxResultBytes is the size cap of a tool's result when
// Options.MaxResultBytes is zero.
const DefaultMaxResultBytes = 1 << 20

// Options configures host tools. The zero value serves the server as
// "host" with the default cap and no policy.
type Options struct {
	// Name is the MCP server's name as the agent is given it; agents
	// prefix its tools with it (Claude: mcp__<Name>__<tool>). Default:
	// "host".
	Name string
	// MaxResultBytes caps a tool's result as sent to the agent (its JSON):
	// a larger one is cut, text first, and ends with a note saying so.
	// Default DefaultMaxResultBytes.
	MaxResultBytes int
	// Allow, if set, gates each call before its handler runs (after the
	// host's own checks: a running turn, plan mode): an error refuses the
	// call, and the agent is answered with it as the tool's error. It runs
	// on the goroutine serving the agent's HTTP request; ctx ends with the
	// turn. Nil: every call the host's checks let through runs.
	Allow func(ctx context.Context, call acphost.HostToolCall) error
}

// HostTools serves one MCP server to every session of the clients it is
// given to (ACPOptions.HostTools). Safe for concurrent use.
type HostTools struct {
	srv  *mcp.Server
	opts Options
}

// New returns host tools serving srv. It adds a receiving middleware to
// srv (requests that do not come through an endpoint of these host tools
// pass it unchanged, so srv may be served elsewhere too).
func New(srv *mcp.Server, opts Options) *HostTools {
	if opts.Name == "" {
		opts.Name = "host"
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	h := &HostTools{srv: srv, opts: opts}
	srv.AddReceivingMiddleware(h.middleware)
	return h
}

// served is one session's endpoint.
type served struct {
	h     *HostTools
	s     *acphost.Session
	token string
	hs    *http.Server
	life  context.Context // ends at stop: in-flight handlers' ctx ends
	end   context.CancelFunc
	serve chan struct{} // closed when Serve returned

	mu       sync.Mutex
	stopped  bool
	inFlight sync.WaitGroup // HTTP requests being served
	running  sync.WaitGroup // MCP methods being handled (they may outlive their request)
	slots    chan struct{}  // MaxConcurrentRequests
}

// servedKey marks a request's ctx with the endpoint it came through; the
// SDK keeps a request's ctx values in its methods' ctx.
type servedKey struct{}

// timeouts are the endpoints' read-header and idle timeouts (tests
// shorten them).
var timeouts = struct{ header, idle time.Duration }{httpserve.ReadHeaderTimeout, httpserve.IdleTimeout}

// MaxConcurrentRequests bounds the agent's requests a session's endpoint
// serves at once; more are answered 429 at once. With the SDK's 4 MiB
// body limit it bounds what an agent can make the endpoint hold.
const MaxConcurrentRequests = 16

var _ acphost.HostTools = (*HostTools)(nil)

// ServeSession implements acphost.HostTools: it starts s's endpoint and
// returns it as an http MCP server with its bearer token. On Linux it
// fails when the socket tables that tell who connects cannot be read.
func (h *HostTools) ServeSession(s *acphost.Session) ([]acp.MCPServer, func(), error) {
	if err := checkOwners(); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("hosttools: listening on loopback: %w", err)
	}
	var key [32]byte
	_, _ = rand.Read(key[:]) // never fails (crypto/rand)
	sv := &served{h: h, s: s, token: hex.EncodeToString(key[:]), serve: make(chan struct{}), slots: make(chan struct{}, MaxConcurrentRequests)}
	sv.life, sv.end = context.WithCancel(context.Background())
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.srv }, &mcp.StreamableHTTPOptions{
		// Stateless: each request its own MCP session, closed with it, so
		// nothing of the SDK outlives stop. Requests from the server to the
		// agent (sampling, elicitation, roots) are not served so.
		Stateless: true,
		Logger:    slog.New(slog.DiscardHandler),
	})
	hs, gln := httpserve.New(sv.guard(mcpHandler), ownOnly(ln), 0, log.New(io.Discard, "", 0))
	hs.ReadHeaderTimeout, hs.IdleTimeout = timeouts.header, timeouts.idle
	hs.MaxHeaderBytes = 64 << 10
	hs.BaseContext = func(net.Listener) context.Context { return sv.life }
	sv.hs = hs
	go func() {
		defer close(sv.serve)
		_ = sv.hs.Serve(gln)
	}()
	server := acp.MCPServer{
		Name:    h.opts.Name,
		Type:    acp.MCPHTTP,
		URL:     "http://" + ln.Addr().String() + "/mcp",
		Headers: []acp.NameValue{{Name: "Authorization", Value: "Bearer " + sv.token}},
	}
	return []acp.MCPServer{server}, sv.stop, nil
}

// stop closes the endpoint, in this order: new requests and MCP methods
// are refused; the running ones' ctx ends; it returns once every request
// and method has returned.
func (sv *served) stop() {
	sv.mu.Lock()
	sv.stopped = true
	sv.mu.Unlock()
	sv.end()
	_ = sv.hs.Close()
	<-sv.serve
	sv.inFlight.Wait()
	sv.running.Wait()
	// Close does not wait for the connections' goroutines; Shutdown does,
	// and has nothing left to wait for but them.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = sv.hs.Shutdown(ctx)
}

// guard lets through only requests with the session's bearer token.
func (sv *served) guard(next http.Handler) http.Handler {
	want := []byte("Bearer " + sv.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		httpserve.Trust(r.Context())
		select {
		case sv.slots <- struct{}{}:
			defer func() { <-sv.slots }()
		default:
			http.Error(w, "too many requests at once", http.StatusTooManyRequests)
			return
		}
		sv.mu.Lock()
		if sv.stopped {
			sv.mu.Unlock()
			http.Error(w, "closed", http.StatusServiceUnavailable)
			return
		}
		sv.inFlight.Add(1)
		sv.mu.Unlock()
		defer sv.inFlight.Done()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), servedKey{}, sv)))
	})
}

// middleware handles the MCP methods that came through an endpoint of
// these host tools: each one only while its endpoint is live, in a ctx
// that ends when it stops, and a tools/call through call. A method from
// elsewhere (srv served by the app itself) passes unchanged.
func (h *HostTools) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		sv, ok := ctx.Value(servedKey{}).(*served)
		if !ok || sv.h != h {
			return next(ctx, method, req)
		}
		ctr, isCall := req.(*mcp.CallToolRequest)
		ctx, leave, err := sv.enter(ctx)
		if err != nil {
			if isCall {
				return refusal(err), nil
			}
			return nil, err
		}
		defer leave()
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		if !isCall || ctr.Params == nil {
			return nil, fmt.Errorf("hosttools: a tools/call without its parameters")
		}
		return sv.call(ctx, next, ctr)
	}
}

// errClosed ends the handlers' ctx when the endpoint stops, and refuses
// what comes after.
var errClosed = fmt.Errorf("hosttools: the session's host tools closed: %w", acphost.ErrRefused)

// enter admits one MCP method while the endpoint is live: it returns the
// ctx to handle it in (ended when the endpoint stops) and the leave to
// call once it is handled; once stop began, errClosed. stop waits for
// every method admitted.
func (sv *served) enter(ctx context.Context) (context.Context, func(), error) {
	sv.mu.Lock()
	if sv.stopped {
		sv.mu.Unlock()
		return nil, nil, errClosed
	}
	sv.running.Add(1)
	sv.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(sv.life, func() { cancel(errClosed) })
	return ctx, func() {
		unhook()
		cancel(nil)
		sv.running.Done()
	}, nil
}

// call runs one tools/call of a live endpoint (see enter): the host's
// checks, the policy, the handler (a panic caught), the cap, and the
// event.
func (sv *served) call(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest) (_ mcp.Result, err error) {
	call := acphost.HostToolCall{Server: sv.h.opts.Name, Tool: req.Params.Name, Args: req.Params.Arguments}
	call.ReadOnly = sv.h.readOnly(ctx, next, req.Session, call.Tool)
	hctx, end, err := sv.s.BeginHostTool(ctx, call)
	if err != nil {
		return refusal(err), nil
	}
	call, _ = acphost.HostToolCallFrom(hctx)
	if allow := sv.h.opts.Allow; allow != nil {
		if perr := safely(func() { err = allow(hctx, call) }); perr != nil {
			err = perr
		}
		if err != nil {
			call.Err = fmt.Errorf("hosttools: %s refused by the policy: %w: %w", call.Tool, acphost.ErrRefused, err)
			end(call)
			return refusal(call.Err), nil
		}
	}
	var res mcp.Result
	if perr := safely(func() { res, err = next(hctx, "tools/call", req) }); perr != nil {
		call.Err = perr
		end(call)
		return nil, perr
	}
	if err != nil {
		call.Err = err
		end(call)
		return nil, err
	}
	ctres, ok := res.(*mcp.CallToolResult)
	if !ok || ctres == nil {
		end(call)
		return res, nil
	}
	ctres, call.Result, call.Truncated = capResult(ctres, sv.h.opts.MaxResultBytes)
	call.IsError = ctres.IsError
	end(call)
	return ctres, nil
}

// readOnly reports whether tool is annotated readOnlyHint, from the
// server's own list (what the agent says of a tool is not asked). A tool
// not found, or a list that fails, is not read-only.
func (h *HostTools) readOnly(ctx context.Context, next mcp.MethodHandler, ss *mcp.ServerSession, tool string) bool {
	cursor := ""
	for range maxListPages {
		res, err := next(ctx, "tools/list", &mcp.ListToolsRequest{Session: ss, Params: &mcp.ListToolsParams{Cursor: cursor}})
		list, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok || list == nil {
			return false
		}
		for _, t := range list.Tools {
			if t != nil && t.Name == tool {
				return t.Annotations != nil && t.Annotations.ReadOnlyHint
			}
		}
		if list.NextCursor == "" {
			return false
		}
		cursor = list.NextCursor
	}
	return false
}

// maxListPages bounds the pages read looking for a tool's annotations.
const maxListPages = 100

// refusal is the tool's error result telling the agent why the host
// refused the call.
func refusal(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimPrefix(err.Error(), "acphost: ")}}}
}

// safely runs f, turning a panic into an error.
func safely(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("hosttools: the handler panicked: %v", r)
		}
	}()
	f()
	return nil
}
