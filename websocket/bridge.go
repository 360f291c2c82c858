package websocket

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ws "github.com/coder/websocket"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/httpserve"
	"github.com/acphost/acphost/internal/proc"
)

// Defaults of a Bridge.
const (
	DefaultPath           = "/acp"
	DefaultMaxConnections = 64
	DefaultInitTimeout    = 30 * time.Second
	DefaultStopGrace      = 2 * time.Second
)

// drainWait bounds how long an exited agent's last lines are waited for
// before the rest of its group is killed (a grandchild may hold stdout).
const drainWait = time.Second

// Bridge is an http.Handler that serves ACP over WebSocket for a local
// stdio agent: each connection it accepts gets a process of its own,
// started once the first frame (which must be an initialize request) has
// arrived and stopped when the connection ends — stdin closed, StopGrace,
// SIGTERM to its process group, StopGrace, SIGKILL to the group and, on
// Linux where cgroups can be had, to its cgroup. With a Transport each
// connection dials it for its agent instead (an agent in a Kubernetes
// pod, over SSH…) and the Link is stopped with StopGrace when the
// connection ends. When the agent exits the bridge closes with 1000 and
// the exit in the reason ("exit 3", "signal killed"), which a [Transport]
// reports as an *acphost.ExitError; a Link lost without an exit status
// closes with 1011.
//
// Security: a request is refused 403 when it has an Origin header naming
// another host than its Host and not in AllowedOrigins (a browser page
// of another site), 401 without the Token, 503 beyond MaxConnections or
// once Close has begun. Without a Token only connections to a loopback
// address are served.
//
// Set the fields before serving and do not change them afterwards.
// ServeHTTP runs each connection on the request's goroutine until it
// ends. Call Close to end every connection and agent.
type Bridge struct {
	// Command and Args start the agent, in Dir ("": the bridge's
	// directory), with the bridge's environment plus Env.
	Command string
	Args    []string
	Env     []string
	Dir     string
	// Transport, when set, is dialled once per connection for its agent
	// instead of starting Command, on the connection's goroutine; Close
	// ends a dial under way. The Link's lines (a MessageLink's messages)
	// are relayed as a process's are, within the same bounds, and its
	// stderr is forwarded to Stderr. Command, Args, Env and Dir must then
	// be empty: Serve refuses the mix with ErrTransportAndCommand, and
	// ServeHTTP answers 500. The Transport is the caller's to close, after
	// the bridge.
	Transport acphost.Transport
	// Token is the bearer token a client must send: "Authorization:
	// Bearer <Token>", or a "token" query parameter for clients that
	// cannot set headers (the Rust SDK's WebSocket client) — a URL ends up
	// in logs, so prefer the header. Compared in constant time. Required:
	// without one every request is refused, unless AllowNoToken.
	Token string
	// AllowNoToken lets a Bridge without a Token serve loopback and Unix
	// socket connections with no credential at all. Loopback is shared by
	// every user of the machine, so any of them can then drive the agent
	// as you: use it only on a machine of your own, or behind a Unix
	// socket whose file permissions do the checking.
	AllowNoToken bool
	// Hosts are the names a request's Host may carry besides IP addresses
	// and "localhost" (a DNS name you serve the bridge under). Any other
	// Host is refused 403: a page whose name an attacker points at your
	// address (DNS rebinding) never reaches the agent.
	Hosts []string
	// Path is the endpoint; "" means DefaultPath ("/acp"). Other paths
	// get 404.
	Path string
	// AllowedOrigins are browser origins allowed besides the request's
	// own host, as "https://app.example.com"; "*" allows any. Requests
	// without an Origin header (non-browser clients) are not affected.
	AllowedOrigins []string
	// MaxUntrusted bounds, under Serve, the connections held that have
	// shown they are not the person's (a request refused, or none made
	// within 2s); past it they are closed, idle ones first. 0 means 64.
	MaxUntrusted int
	// MaxConnections bounds the agents running at once; 0 means
	// DefaultMaxConnections (64), negative no bound.
	MaxConnections int
	// PingInterval is how often each connection is pinged; a ping not
	// answered within the interval (while the bridge was not waiting on
	// the agent or on the client's reading) ends the connection and stops
	// its agent. 0 means DefaultPingInterval (15s); negative, no pings.
	PingInterval time.Duration
	// InitTimeout bounds the wait for the first frame; 0 means
	// DefaultInitTimeout (30s).
	InitTimeout time.Duration
	// StopGrace is each wait of the agent's stop; 0 means
	// DefaultStopGrace (2s).
	StopGrace time.Duration
	// MaxMessageBytes bounds a frame from the client and a line from the
	// agent; 0 means DefaultMaxMessageBytes (64 MiB). A larger frame
	// closes the connection with 1009, a larger line with 1009 too.
	MaxMessageBytes int64
	// Stderr receives the agents' stderr, interleaved (nil: discarded).
	Stderr io.Writer
	// Logger receives what the bridge notices: refused requests, lines
	// of the agent that are not JSON-RPC, ends (nil: nothing is logged).
	Logger *slog.Logger

	mu        sync.Mutex
	conns     map[*bridgeConn]struct{}
	closing   bool
	stop      chan struct{} // closed by Close
	drained   sync.Cond     // signalled as the last connection is released (Close waits on it)
	cgroupLog sync.Once
}

// ServeHTTP checks the request (path, origin, token, capacity), upgrades
// it and serves the connection until it ends, on the caller's goroutine.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != b.path() {
		http.NotFound(w, r)
		return
	}
	if status, why := b.refuse(r); status != 0 {
		b.logger().Info("acphost/websocket: refused", "status", status, "why", why, "remote", r.RemoteAddr)
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="acp"`)
		}
		http.Error(w, why, status)
		return
	}
	if err := b.check(); err != nil {
		b.logger().Error("acphost/websocket: refused", "err", err)
		http.Error(w, "bridge misconfigured", http.StatusInternalServerError)
		return
	}
	httpserve.Trust(r.Context())
	c, ok := b.admit()
	if !ok {
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return
	}
	defer b.release(c)
	w.Header().Set("Acp-Connection-Id", c.id)
	rec := &hijackRecorder{ResponseWriter: w}
	conn, err := ws.Accept(rec, r, &ws.AcceptOptions{InsecureSkipVerify: true}) // origin checked in refuse
	if err != nil {
		b.logger().Info("acphost/websocket: upgrade failed", "err", err, "remote", r.RemoteAddr)
		return
	}
	c.conn, c.raw = conn, rec.conn
	c.serve()
}

// ErrTransportAndCommand is Serve's error for a Bridge given both a
// Transport and a Command (or Args, Env, Dir) to reach its agents.
var ErrTransportAndCommand = errors.New("websocket: a Bridge with a Transport starts no Command: leave Command, Args, Env and Dir empty")

// check refuses a bridge told two ways to reach its agents.
func (b *Bridge) check() error {
	if b.Transport != nil && (b.Command != "" || len(b.Args) > 0 || len(b.Env) > 0 || b.Dir != "") {
		return ErrTransportAndCommand
	}
	return nil
}

// refuse says why r may not connect: a status and a message, or 0.
func (b *Bridge) refuse(r *http.Request) (int, string) {
	if !b.hostAllowed(r.Host) {
		return http.StatusForbidden, "host not allowed"
	}
	if !b.originAllowed(r) {
		return http.StatusForbidden, "origin not allowed"
	}
	if b.Token == "" {
		switch {
		case !b.AllowNoToken:
			return http.StatusUnauthorized, "this bridge has no token to check"
		case !loopbackRequest(r):
			return http.StatusForbidden, "a bridge without a token serves loopback only"
		}
		return 0, ""
	}
	if !b.tokenOK(r) {
		return http.StatusUnauthorized, "unauthorized"
	}
	return 0, ""
}

func (b *Bridge) tokenOK(r *http.Request) bool {
	got, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		got = r.URL.Query().Get("token")
	}
	want := sha256.Sum256([]byte(b.Token))
	have := sha256.Sum256([]byte(got))
	return got != "" && subtle.ConstantTimeCompare(want[:], have[:]) == 1
}

// bearer reads "Bearer <token>" (the scheme in any case).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// hostAllowed: an IP address, localhost, or one of Hosts (port aside).
func (b *Bridge) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if net.ParseIP(host) != nil || strings.EqualFold(host, "localhost") {
		return true
	}
	for _, h := range b.Hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// originAllowed: no Origin, the request's own host, or AllowedOrigins.
func (b *Bridge) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, o := range b.AllowedOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

func loopbackRequest(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && localAddr(addr)
}

// localAddr reports whether addr is a loopback or Unix socket address.
func localAddr(addr net.Addr) bool {
	if _, ok := addr.(*net.UnixAddr); ok {
		return true
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// admit counts a new connection in, unless closing or full.
func (b *Bridge) admit() (*bridgeConn, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	max := b.MaxConnections
	if max == 0 {
		max = DefaultMaxConnections
	}
	if b.closing || max > 0 && len(b.conns) >= max {
		return nil, false
	}
	c := &bridgeConn{b: b, id: newUUID(), readDone: make(chan struct{}), gone: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	b.conns[c] = struct{}{}
	return c, true
}

func (b *Bridge) release(c *bridgeConn) {
	c.cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conns, c)
	if len(b.conns) == 0 {
		b.drained.Broadcast()
	}
}

// init makes the bridge's state; b.mu is held.
func (b *Bridge) init() {
	if b.conns == nil {
		b.conns = map[*bridgeConn]struct{}{}
		b.stop = make(chan struct{})
		b.drained.L = &b.mu
	}
}

// Close refuses new connections, closes every open one with 1001, stops
// their agents and returns once all are gone. It may be called more than
// once; it does not stop an http.Server serving the bridge.
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.init()
	if !b.closing {
		b.closing = true
		close(b.stop)
	}
	for len(b.conns) > 0 {
		b.drained.Wait()
	}
	b.mu.Unlock()
	return nil
}

// pids are the agents running now (for tests).
func (b *Bridge) pids() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []int
	for c := range b.conns {
		if pid := c.pid.Load(); pid > 0 {
			out = append(out, int(pid))
		}
	}
	return out
}

func (b *Bridge) path() string {
	if b.Path == "" {
		return DefaultPath
	}
	return b.Path
}

func (b *Bridge) logger() *slog.Logger {
	if b.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Logger
}

func (b *Bridge) maxMessage() int64 {
	if b.MaxMessageBytes > 0 {
		return b.MaxMessageBytes
	}
	return DefaultMaxMessageBytes
}

// start dials the Transport for one agent, or spawns one in a cgroup of
// its own where one can be had. ctx ends a dial.
func (b *Bridge) start(ctx context.Context) (agent, error) {
	if b.Transport != nil {
		l, err := b.Transport.Dial(ctx)
		if err != nil {
			return nil, err
		}
		return newLinkAgent(l, b.logger()), nil
	}
	group, err := cgroup.New("ws-agent-")
	if err != nil {
		b.cgroupLog.Do(func() {
			b.logger().Warn("acphost/websocket: agents are held by their process group only", "reason", err)
		})
		group = nil
	}
	env := append(os.Environ(), b.Env...)
	p, err := proc.Start(proc.Spec{Command: b.Command, Args: b.Args, Env: env, Dir: b.Dir, Group: group, Log: b.Logger})
	if err != nil {
		return nil, err
	}
	return procAgent{p}, nil
}

// closable is ctx, ended also by Close; cancel releases the goroutine
// that watches.
func (b *Bridge) closable(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}

// hijackRecorder keeps the connection the upgrade hijacks, so the bridge
// can drop it whatever the WebSocket library is doing.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	return c, brw, err
}

// bridgeConn is one connection and its agent.
type bridgeConn struct {
	b        *Bridge
	id       string
	conn     *ws.Conn
	raw      net.Conn
	ctx      context.Context // the connection's reads and writes; its end drops it
	cancel   context.CancelFunc
	live     liveness
	pid      atomic.Int64
	readDone chan struct{} // the client's frames have ended
	goneOnce sync.Once
	gone     chan struct{} // the client is gone, or a bound was hit
	goneCode ws.StatusCode // the close to send, 0: none (dropped)
	goneWhy  string
}

// lost ends the connection from the client's side: code (0: none) and
// why are the close to send.
func (c *bridgeConn) lost(code ws.StatusCode, why string, err error) {
	c.goneOnce.Do(func() {
		c.goneCode, c.goneWhy = code, why
		c.b.logger().Debug("acphost/websocket: connection ends", "id", c.id, "why", why, "err", err)
		close(c.gone)
	})
}

// serve runs the connection: the initialize check, the agent, the relay,
// the end.
func (c *bridgeConn) serve() {
	defer c.raw.Close()
	defer c.cancel()
	c.conn.SetReadLimit(c.b.maxMessage())
	first, ok := c.initialize()
	if !ok {
		return
	}
	ctx, cancel := c.b.closable(c.ctx)
	a, err := c.b.start(ctx)
	cancel()
	if err != nil {
		select {
		case <-c.b.stop:
			c.closeWith(ws.StatusGoingAway, "bridge shutting down")
		default:
			c.b.logger().Warn("acphost/websocket: the agent did not start", "id", c.id, "err", err)
			c.closeWith(ws.StatusInternalError, "agent did not start")
		}
		return
	}
	c.pid.Store(int64(a.pid()))
	var wg sync.WaitGroup
	a.pump(&wg, c.b.Stderr)
	relayed := make(chan struct{})
	wg.Go(func() { c.toAgent(a, first) })
	wg.Go(func() {
		defer close(relayed)
		c.fromAgent(a)
	})
	if ping := c.b.PingInterval; ping >= 0 {
		wg.Go(func() {
			keepalive(c.ctx, c.conn, orDefault(ping, DefaultPingInterval), &c.live, func(err error) { c.lost(0, "keepalive", err) })
		})
	}
	c.run(a, relayed)
	c.cancel()
	c.raw.Close()
	wg.Wait()
}

// run waits for the end (the agent's, the client's, the bridge's) and
// stops the agent. An agent without an exit of its own to wait for (a
// Link without Done) ends with what it writes.
func (c *bridgeConn) run(a agent, relayed <-chan struct{}) {
	grace := orDefault(c.b.StopGrace, DefaultStopGrace)
	exited := a.exited()
	if exited == nil {
		exited = relayed
	}
	select {
	case <-exited:
		t := time.NewTimer(drainWait)
		select {
		case <-relayed:
		case <-t.C:
		}
		t.Stop()
		a.stop(grace)
		<-relayed
		code, why := a.end()
		c.b.logger().Debug("acphost/websocket: agent ended", "id", c.id, "close", why)
		c.closeWith(code, why)
	case <-c.gone:
		a.stop(grace)
		c.closeWith(c.goneCode, c.goneWhy)
	case <-c.b.stop:
		c.closeWith(ws.StatusGoingAway, "bridge shutting down")
		a.stop(grace)
	}
}

// closeWith sends a close frame (code 0: none) and waits, bounded, for
// the client's; then the connection is dropped.
func (c *bridgeConn) closeWith(code ws.StatusCode, why string) {
	if code == 0 {
		return
	}
	// c.readDone: the reader took the client's close.
	if done, ok := closeWithin(c.conn, code, why, orDefault(c.b.StopGrace, DefaultStopGrace), c.readDone); !ok {
		c.raw.Close()
		<-done
	}
}

// errNotInitialize is the close reason for a first frame that is not an
// initialize request, as the TypeScript SDK's server says it.
const errNotInitialize = "First message must be initialize"

// initialize reads the first text frame and checks that it is an
// initialize request with an id; otherwise it closes with 1002 (1009 for
// a frame too big) and returns false.
func (c *bridgeConn) initialize() ([]byte, bool) {
	ctx, cancel := context.WithTimeout(c.ctx, orDefault(c.b.InitTimeout, DefaultInitTimeout))
	defer cancel()
	ctx, cancelClose := c.b.closable(ctx) // Close ends the wait
	defer cancelClose()
	for {
		typ, data, err := c.conn.Read(ctx)
		if err != nil {
			close(c.readDone)
			c.b.logger().Info("acphost/websocket: no initialize", "id", c.id, "err", err)
			return nil, false
		}
		if typ != ws.MessageText {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(data, &m) != nil || m.Method != "initialize" || len(m.ID) == 0 || string(m.ID) == "null" {
			c.b.logger().Info("acphost/websocket: first message is not initialize", "id", c.id)
			c.closeWith(ws.StatusProtocolError, errNotInitialize)
			return nil, false
		}
		return toLine(data), true
	}
}

// toAgent writes first, then each text frame, to the agent's stdin, until
// the client's frames end (the client is then gone) or stdin fails (the
// agent's end, seen by run).
func (c *bridgeConn) toAgent(stdin io.Writer, first []byte) {
	defer close(c.readDone)
	if _, err := stdin.Write(first); err != nil {
		return
	}
	var buf []byte
	for {
		data, err := readText(c.ctx, c.conn, &c.live, nil, buf)
		if err != nil {
			c.readFailed(err)
			return
		}
		buf = toLine(data)
		c.live.enter()
		_, err = stdin.Write(buf)
		c.live.leave()
		if err != nil {
			return
		}
		if cap(buf) > keptBytes {
			buf = nil
		}
	}
}

func (c *bridgeConn) readFailed(err error) {
	if errors.Is(err, ws.ErrMessageTooBig) {
		c.lost(0, "message too big", err) // the library has closed with 1009
		return
	}
	c.lost(0, "client gone", err)
}

// fromAgent sends each line the agent writes that starts with '{' as a
// text frame, and logs the others (banners, log lines), until stdout
// ends or the client is gone.
func (c *bridgeConn) fromAgent(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	var buf []byte
	for {
		line, err := readLine(br, c.b.maxMessage(), buf[:0])
		buf = line
		if errors.Is(err, ErrMessageTooBig) {
			c.b.logger().Warn("acphost/websocket: agent line too long", "id", c.id, "max", c.b.maxMessage())
			c.lost(ws.StatusMessageTooBig, "agent line too long", err)
			return
		}
		if msg := trimJSON(line); msg != nil {
			c.live.enter()
			werr := c.conn.Write(c.ctx, ws.MessageText, msg)
			c.live.leave()
			if werr != nil {
				c.lost(0, "write failed", werr)
				return
			}
		} else if !blank(line) {
			c.b.logger().Debug("acphost/websocket: skipped a line of the agent that is not JSON-RPC", "id", c.id, "line", clip(line))
		}
		if err != nil {
			return
		}
	}
}

// trimJSON is line without surrounding space if it starts with '{', else
// nil.
func trimJSON(line []byte) []byte {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' {
		return nil
	}
	return t
}

func clip(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// readLine reads one line (with its newline, if any) into buf, failing
// with ErrMessageTooBig past max bytes.
func readLine(br *bufio.Reader, max int64, buf []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		if int64(len(buf)+len(frag)) > max+1 {
			return buf, ErrMessageTooBig
		}
		buf = append(buf, frag...)
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}
