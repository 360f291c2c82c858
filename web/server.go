package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/httpserve"
)

//go:embed assets
var assets embed.FS

// DefaultMaxLogBytes is the transcript a Server keeps for tabs that connect
// later when Config.MaxLogBytes is zero.
const DefaultMaxLogBytes = 32 << 20

// maxBodyBytes bounds a POST body: an amended file of up to
// acphost.DefaultMaxReadBytes, JSON-escaped.
const maxBodyBytes = 4*acphost.DefaultMaxReadBytes + 1<<20

// bodyReadTimeout bounds the read of a POST body.
const bodyReadTimeout = 60 * time.Second

// keepAlive is how often an idle event stream gets a comment line, so that
// proxies and the browser see it alive.
const keepAlive = 15 * time.Second

// Config configures a Server.
type Config struct {
	// Agent is the agent to start and the client's options. Its
	// OnPermission, Elicitation.OnRequest and FS.OnWriteFile must be nil: the
	// server sets them to ask the page (FS.OnWriteFile only when FS.Write
	// is set). OnUpdate, if set, is called after the server's own.
	Agent acphost.ACPOptions
	// Start starts the client from Agent (with the server's hooks set).
	// Nil: acphost.Start. Set it to reach the agent another way, e.g.
	// an acphost.StreamTransport over pipes to an in-process agent.
	Start func(ctx context.Context, opts acphost.ACPOptions) (*acphost.ACPClient, error)
	// Token is the secret every request must carry. Empty: 32 random bytes
	// from crypto/rand, hex-encoded (see Server.Token).
	Token string
	// Hosts are host names (without port) accepted in the Host header
	// besides IP addresses and "localhost": the names the server is
	// reached by beyond loopback. A name not listed is refused, which is
	// what defeats DNS rebinding.
	Hosts []string
	// MaxLogBytes bounds the transcript kept for tabs that connect later
	// (the bytes of its messages as sent): the oldest messages go first.
	// A text message larger than a piece of it is split into several, so
	// that the bound holds; another message too large to keep (a huge tool
	// call) reaches the tabs connected then, and is kept as a note saying
	// so. Zero: DefaultMaxLogBytes.
	MaxLogBytes int
	// MaxTabBytes bounds what one tab may have queued and not yet taken:
	// a tab further behind (a frozen background tab, a sleeping laptop, a
	// paused debugger) is cut off at once, its queue released and its
	// connection closed; the page connects again and is replayed the
	// transcript kept. A tab that takes no event for eventWriteTimeout
	// (10s) is cut off too. Zero: DefaultMaxTabBytes.
	MaxTabBytes int
	// Logger receives the server's diagnostics. Nil: none.
	Logger *slog.Logger
	// Permission, if set, answers permission requests in place of the
	// page: it is handed the page's own function (which opens a dialog on
	// every tab and waits for an answer) to wrap or to ignore, e.g.
	// acphost.Remember(page), or acphost.AllowAll(). Nil: the page asks
	// every time.
	Permission func(page acphost.PermissionFunc) acphost.PermissionFunc
	// PermissionLabel names the policy in the page's header ("ask",
	// "allow", ...). Empty: none shown.
	PermissionLabel string
	// Mode, if set, is the session mode asked for on every session the
	// server opens, its first one included. An agent that refuses it is
	// noted in the transcript; the session stays in the agent's mode.
	Mode string
	// ConfigOptions are session config options (id → value) set on every
	// session the server opens, after Mode, in id order; a boolean
	// option takes true/false (or on/off). One the agent does not offer or
	// refuses is noted in the transcript.
	ConfigOptions map[string]string
	// Sessions, if set, records the sessions the page uses and lists the
	// recorded ones the page can continue (acphost web fills it from the
	// command line's session store). Nil: the page offers a new session
	// only.
	Sessions SessionStore
	// Worktree, if set, lets the page open a new session in a worktree
	// of its own (a checkbox and an optional name in the page's
	// new-session form): the session's directory is the one Make
	// returns, its record (Config.Sessions) names the worktree, and the
	// page shows its branch. The package runs no version control itself:
	// acphost web passes hooks that run git when --cwd is in a git work
	// tree. Nil: every session runs in Agent.Dir.
	Worktree *WorktreeHooks
}

// WorktreeHooks make the worktrees the page's sessions run in, and
// discard one no session came to run in. Both run on the goroutine of
// the page's request, while the page is switching sessions (no turn runs
// and no other session opens meanwhile); ctx ends when the request is
// abandoned or the server closes.
//
// With Agent.FS, the host's file service serves only its roots (Agent.Dir
// and FS.AdditionalDirs, opened when the agent starts), so a worktree whose
// directory is not beneath one of them is refused (and discarded) rather
// than opened with every read and write refused.
type WorktreeHooks struct {
	// Make makes a new worktree named name ("": the hook picks a name)
	// and returns it. An error is shown to the person and nothing is
	// opened. The name is the person's text, unchecked beyond
	// MaxWorktreeName bytes: Make checks it.
	Make func(ctx context.Context, name string) (Worktree, error)
	// Discard, if set, removes a worktree Make made when the agent
	// refused to open a session in it. Nil: it is left.
	Discard func(ctx context.Context, w Worktree)
}

// MaxWorktreeName bounds the worktree name the page may send.
const MaxWorktreeName = 256

// Worktree is a worktree a session runs in.
type Worktree struct {
	Dir    string // the session's working directory (absolute), in the worktree
	Path   string // the worktree's own directory
	Branch string // its branch, shown in the page
}

// SessionStore keeps the sessions a Server used, so that the page (and
// other hosts sharing the store) can continue them later.
type SessionStore interface {
	// List returns the recorded sessions of this server's agent, most
	// recently used first.
	List() ([]SessionRecord, error)
	// Put records a session: new, or its last use, title and mode.
	Put(SessionRecord) error
}

// TurnRecorder is a SessionStore that also keeps each finished turn (the
// terminal host's store does, for acphost sessions history). The server
// calls RecordTurn on the turn's goroutine once the turn has ended; the
// turn then keeps its Response (within ACPOptions.Limits.MaxResponseBytes) for it.
type TurnRecorder interface {
	RecordTurn(sessionID string, t TurnRecord) error
}

// TurnRecord is a finished turn: its prompt, its Response (what it kept
// before it failed, when it did), its error, when it started and how long
// it took.
type TurnRecord struct {
	Prompt   string
	Response acphost.Response
	Err      error
	Started  time.Time
	Duration time.Duration
}

// SessionRecord is one recorded session.
type SessionRecord struct {
	ID       string    // the agent's session id
	Cwd      string    // its working directory
	Title    string    // what the agent called it, if anything
	Mode     string    // its mode when last used
	LastUsed time.Time // when a turn last ran in it
	// Worktree is the worktree the session runs in (Config.Worktree, or
	// a terminal's acphost --worktree), nil for none: the page continues
	// the session in Worktree.Dir and shows its branch. Put is given it
	// for a session the page opened in one (then Cwd is Worktree.Dir).
	Worktree *Worktree
}

// Server is an http.Handler serving one agent to a browser; see the package
// documentation. Create it with New and Close it when done.
type Server struct {
	c      *acphost.ACPClient
	token  string
	hosts  map[string]bool
	log    *slog.Logger
	hub    *hub
	mux    *http.ServeMux
	ctx    context.Context // ends at Close: turns and hooks
	stop   context.CancelFunc
	userUp func(acp.Update)
	cfg    Config

	// showMu orders what the agent's updates put on the page: the ones
	// from before New knew the session first (onUpdate, setFirstSession).
	showMu sync.Mutex

	mu        sync.Mutex
	sess      *acphost.Session // the session prompts go to; nil until New knows it
	wt        *Worktree        // the worktree sess runs in; nil: Agent.Dir
	early     []acp.Update     // updates from before it, for New to show
	clicked   map[any]bool     // requests the person answered in the page
	switching bool             // a session is being opened: no prompt meanwhile
	replay    *replayBuf       // the history of the session being loaded
	turn      *runningTurn
	turns     int // turns started
	dialogs   int // dialogs opened (their ids)
	closed    bool
	wg        sync.WaitGroup // turns and the agent watcher

	// left is the transcript of the client's first session, kept when the
	// page left it (marked as history), for coming back to it.
	left        [][]byte
	leftDropped int
}

type runningTurn struct {
	id     int
	cancel context.CancelFunc
}

// New starts the agent and returns a Server for it. ctx bounds the start
// only.
func New(ctx context.Context, cfg Config) (*Server, error) {
	opts := cfg.Agent
	if opts.OnPermission != nil || opts.Elicitation.OnRequest != nil || (opts.FS != nil && opts.FS.OnWriteFile != nil) {
		return nil, errors.New("web: Agent.OnPermission, Agent.Elicitation.OnRequest and FS.OnWriteFile are the server's: leave them nil")
	}
	token := cfg.Token
	if token == "" {
		b := make([]byte, 32)
		rand.Read(b) // never fails (crypto/rand)
		token = hex.EncodeToString(b)
	}
	maxLog := cfg.MaxLogBytes
	if maxLog <= 0 {
		maxLog = DefaultMaxLogBytes
	}
	maxTab := cfg.MaxTabBytes
	if maxTab <= 0 {
		maxTab = DefaultMaxTabBytes
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	sctx, stop := context.WithCancel(context.Background())
	s := &Server{token: token, hosts: map[string]bool{"localhost": true},
		log: lg, hub: newHub(maxLog, maxTab), ctx: sctx, stop: stop, userUp: opts.OnUpdate, cfg: cfg}
	for _, h := range cfg.Hosts {
		s.hosts[strings.ToLower(h)] = true
	}
	opts.OnPermission = s.onPermission
	if cfg.Permission != nil {
		opts.OnPermission = cfg.Permission(s.onPermission)
	}
	opts.Elicitation.OnRequest = s.onElicitation
	opts.OnUpdate = s.onUpdate
	if opts.FS != nil && opts.FS.Write {
		fsOpts := *opts.FS
		fsOpts.OnWriteFile = s.onWriteFile
		opts.FS = &fsOpts
	}
	start := cfg.Start
	if start == nil {
		start = acphost.Start
	}
	c, err := start(ctx, opts)
	if err != nil {
		stop()
		return nil, err
	}
	s.c = c
	s.routes()
	s.setFirstSession(c.Session())
	s.setMode(ctx, c.Session(), cfg.Mode)
	s.setOptions(ctx, c.Session())
	s.publishState()
	s.wg.Add(1)
	go s.watchAgent()
	return s, nil
}

// Token returns the token every request must carry.
func (s *Server) Token() string { return s.token }

// Client returns the server's client, for calls the page does not make.
func (s *Server) Client() *acphost.ACPClient { return s.c }

// URL returns base (the address the server is served at, e.g.
// "http://127.0.0.1:8080/") with the token in its fragment
// ("#token=..."): the address to open in a browser. A fragment never
// reaches a server, a proxy or a log; the page's script reads it, keeps it
// in the tab's sessionStorage and removes it from the address bar.
func (s *Server) URL(base string) string {
	return base + "#token=" + url.QueryEscape(s.token)
}

// Close cancels the running turn, ends every event stream, and closes the
// client (which ends the pending hooks: their requests are answered
// "cancelled"). It waits for the server's goroutines. Serve no more
// requests after it: they are answered 503. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	closed := s.closed
	s.closed = true
	s.mu.Unlock()
	if closed {
		return nil
	}
	s.stop()
	s.hub.shutdown()
	err := s.c.Close()
	s.wg.Wait()
	return err
}

// watchAgent shows an agent that ended on its own.
func (s *Server) watchAgent() {
	defer s.wg.Done()
	select {
	case <-s.c.Done():
		s.publishState()
	case <-s.ctx.Done():
	}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.Handle("GET /{$}", asset("index.html"))
	for p := range shell {
		if name := strings.TrimPrefix(p, "/"); assetTypes[path.Ext(name)] != "" {
			m.Handle("GET "+p, asset(name))
		}
	}
	m.HandleFunc("GET /events", s.events)
	m.HandleFunc("POST /api/prompt", s.apiPrompt)
	m.HandleFunc("POST /api/stop", s.apiStop)
	m.HandleFunc("POST /api/permission", s.apiPermission)
	m.HandleFunc("POST /api/proposal", s.apiProposal)
	m.HandleFunc("POST /api/elicitation", s.apiElicitation)
	m.HandleFunc("POST /api/planmode", s.apiPlanMode)
	m.HandleFunc("POST /api/mode", s.apiMode)
	m.HandleFunc("POST /api/config", s.apiConfig)
	m.HandleFunc("GET /api/sessions", s.apiSessions)
	m.HandleFunc("POST /api/session/new", s.apiNewSession)
	m.HandleFunc("POST /api/session/resume", s.apiResume)
	s.mux = m
}

// csp allows the page's own script, style and connections, and nothing else.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// shell is the page itself: nothing secret in it, served without the
// token (which its script holds and sends with every other request): "/"
// (index.html) and every other file of assets of a type in assetTypes at
// its name (the script's modules, the style sheet), so that a module added
// there is served as the others are. The favicon a browser asks for is not
// found, rather than refused.
var shell = shellPaths()

func shellPaths() map[string]bool {
	m := map[string]bool{"/": true, "/favicon.ico": true}
	files, _ := fs.ReadDir(assets, "assets") // embedded: cannot fail
	for _, f := range files {
		if !f.IsDir() && f.Name() != "index.html" && assetTypes[path.Ext(f.Name())] != "" {
			m["/"+f.Name()] = true
		}
	}
	return m
}

// assetTypes are the Content-Types of the page's files, by extension: set
// here rather than looked up in mime's table, which the system's own can
// change (on Windows the registry may say text/plain for .js, which a
// browser refuses to run as a module under nosniff). A file of another
// type in assets is not served.
var assetTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// asset serves the embedded file assets/name. Every response is no-store
// (ServeHTTP): a tab never runs modules of two versions of the page.
func asset(name string) http.Handler {
	ctype := assetTypes[path.Ext(name)]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ctype)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	})
}

// ServeHTTP checks every request (Host, Origin, token) before routing it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !s.hostAllowed(r.Host) {
		http.Error(w, "host not allowed", http.StatusForbidden)
		return
	}
	if !sameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	if s.authorized(r) {
		httpserve.Trust(r.Context())
	} else if !(r.Method == http.MethodGet && shell[r.URL.Path]) {
		http.Error(w, "a valid token is required: open the URL acphost printed", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost {
		// No ReadTimeout on the server (event streams live long): the
		// body has its own.
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			http.Error(w, "want Content-Type application/json", http.StatusUnsupportedMediaType)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// hostAllowed accepts an IP address, localhost and the configured names:
// a DNS name that an attacker rebound to this address is not among them.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return s.hosts[strings.ToLower(host)]
}

// sameOrigin refuses what a browser marks as coming from another site or
// origin: an Origin other than this Host (or "null"), or a Sec-Fetch-Site
// of cross-site or same-site (another port of localhost is same-site).
// A navigation typed or clicked by the person ("none") and requests
// without these headers (curl, a Go client) pass; beyond the page shell
// they still need the token.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		// Even the page shell: the person opens the printed URL, not a
		// link from another site.
		return false
	}
	return true
}

// authorized checks the token: an "Authorization: Bearer" header, the only
// way it is taken (no cookie: a browser sends a cookie to every port of
// the host; no query: a URL ends up in logs and history).
func (s *Server) authorized(r *http.Request) bool {
	b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && s.tokenOK(b)
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

// eventWriteTimeout bounds the write of one event (and of the keepalive)
// to a tab: a tab that takes no more within it is cut off.
const eventWriteTimeout = 10 * time.Second

// events is the event stream (Server-Sent Events): a reset, the transcript
// kept, the state and the pending dialogs, then every message as it
// happens. Each write has a deadline; a tab the hub cuts off (it fell more
// than its budget behind) has its write ended at once and its connection
// closed; it comes back to the replay.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	sub, first := s.hub.subscribe(s.resetMsg)
	if sub == nil {
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return
	}
	defer s.hub.unsubscribe(sub)
	rc := http.NewResponseController(w)
	// A cut ends the write under way: the deadline moves to now.
	ended := make(chan struct{})
	cutter := make(chan struct{})
	go func() {
		defer close(cutter)
		select {
		case <-sub.done:
			rc.SetWriteDeadline(time.Now())
		case <-ended:
		}
	}()
	defer func() { close(ended); <-cutter }()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(format string, b []byte) bool {
		if rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)) != nil {
			return false
		}
		_, err := fmt.Fprintf(w, format, b)
		return err == nil
	}
	flush := func() bool {
		return rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)) == nil && rc.Flush() == nil
	}
	for i, b := range first {
		first[i] = nil // written: the transcript's to keep or drop
		if !write("data: %s\n\n", b) {
			return
		}
	}
	if !flush() {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-sub.wake:
			// Write all that is queued before flushing.
			for b := sub.next(); b != nil; b = sub.next() {
				ok := write("data: %s\n\n", b)
				sub.written(b)
				if !ok {
					return
				}
			}
		case <-tick.C:
			if !write(": keepalive%s\n\n", nil) {
				return
			}
		case <-sub.done:
			return
		case <-r.Context().Done():
			return
		}
		if !flush() {
			return
		}
	}
}

// Serve serves s on ln until ctx ends, then closes s (the running turn
// cancelled, the event streams ended), shuts the HTTP server down (within
// five seconds) and returns what s.Close returned; if serving fails first
// it closes s and returns the error. ln is closed when Serve returns.
//
// The server has timeouts (10s for a request's header, 60s for an idle
// keep-alive connection, and for a POST body) and holds at most 64
// connections that have shown they are not the person's (a request
// without the token answered, or 2s without a request): past it they are
// closed, idle ones first, so that a local process without the token
// cannot use up the descriptors and starve the person's requests. A
// connection whose request is on its way is not closed for the cap, so
// that a burst of the person's own connections keeps every one (up to
// 1024 such connections at once). Serving s with an http.Server of your
// own, set such timeouts yourself.
func Serve(ctx context.Context, ln net.Listener, s *Server) error {
	hs, gln := httpserve.New(s, ln, 0, slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	served := make(chan error, 1)
	go func() { served <- hs.Serve(gln) }()
	select {
	case <-ctx.Done():
		err := s.Close()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if hs.Shutdown(shut) != nil {
			hs.Close()
		}
		<-served
		return err
	case err := <-served:
		s.Close()
		return err
	}
}
