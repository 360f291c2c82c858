package websocket

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"sync"
	"time"

	ws "github.com/coder/websocket"

	"github.com/acphost/acphost"
)

// DefaultDialTimeout bounds a dial (connect and upgrade) by default.
const DefaultDialTimeout = 30 * time.Second

// Transport is an acphost.Transport that reaches an agent over one
// WebSocket connection per Dial, the server starting an agent for each
// (as a [Bridge] does). Set the fields before the first Dial and do not
// change or copy it afterwards; Dial may be called from several
// goroutines (a Pool dials one link per process).
type Transport struct {
	// URL is the endpoint, ws:// or wss://, used as given (nothing is
	// appended: a Bridge listens on /acp by default).
	URL string
	// Token, if not empty, is sent as "Authorization: Bearer <Token>".
	Token string
	// Header holds extra headers for the upgrade request (nil: none).
	// An Authorization here is replaced when Token is set.
	Header http.Header
	// PingInterval is how often the link pings the server. A ping not
	// answered within the interval, while the link was not waiting for
	// acphost to read, ends the link: an *acphost.LinkError with Op
	// "keepalive". Zero means DefaultPingInterval (15s); negative, no
	// pings (a stalled server is then never noticed).
	PingInterval time.Duration
	// DialTimeout bounds each Dial's connect and upgrade, within its ctx.
	// Zero means DefaultDialTimeout (30s).
	DialTimeout time.Duration
	// MaxMessageBytes bounds one message from the server; a larger one
	// ends the link (Op "read", matching ErrMessageTooBig; the server sees
	// close 1009). Zero means DefaultMaxMessageBytes (64 MiB, acphost's
	// MaxLineBytes default); messages written are bounded by it too.
	MaxMessageBytes int64
	// TLSConfig configures wss:// (nil: the system's roots, the URL's
	// host as the server name).
	TLSConfig *tls.Config
	// Jar keeps the cookies the server sets and returns them, as the RFD
	// requires of clients (load-balancer affinity). Nil means a jar of the
	// Transport's own, kept across its dials.
	Jar http.CookieJar

	mu     sync.Mutex
	jar    http.CookieJar
	lastID string
}

// Dial opens a connection to a new agent. ctx bounds the dial, not the
// link. A refused upgrade is a *HandshakeError (401 and 403 match
// ErrUnauthorized, and are not a lost link: a redial would not help);
// every other failure to connect is an *acphost.LinkError with Op
// "dial". A bad URL is a plain error.
func (t *Transport) Dial(ctx context.Context) (acphost.Link, error) {
	l, err := t.DialLink(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// DialLink is Dial returning the concrete *Link (for its ConnectionID).
func (t *Transport) DialLink(ctx context.Context) (*Link, error) {
	if err := checkURL(t.URL); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, orDefault(t.DialTimeout, DefaultDialTimeout))
	defer cancel()
	raw := &rawConn{}
	conn, resp, err := ws.Dial(ctx, t.URL, &ws.DialOptions{HTTPClient: t.client(raw), HTTPHeader: t.header()})
	if err != nil {
		raw.close()
		return nil, dialError(resp, err)
	}
	l := newLink(conn, raw, resp.Header.Get("Acp-Connection-Id"), t.maxMessage(), t.PingInterval)
	t.mu.Lock()
	t.lastID = l.id
	t.mu.Unlock()
	return l, nil
}

// ConnectionID is the Acp-Connection-Id the server gave the latest dial
// ("" before one, or when the server sent none).
func (t *Transport) ConnectionID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastID
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("websocket: Transport.URL: %w", err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return fmt.Errorf("websocket: Transport.URL %q is not ws:// or wss://", s)
	}
	return nil
}

func dialError(resp *http.Response, err error) error {
	if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		he := &HandshakeError{StatusCode: resp.StatusCode}
		if errors.Is(he, ErrUnauthorized) {
			return he
		}
		err = he
	}
	return &acphost.LinkError{Transport: "websocket", Op: "dial", Err: err}
}

func (t *Transport) header() http.Header {
	h := t.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if t.Token != "" {
		h.Set("Authorization", "Bearer "+t.Token)
	}
	return h
}

func (t *Transport) maxMessage() int64 {
	if t.MaxMessageBytes > 0 {
		return t.MaxMessageBytes
	}
	return DefaultMaxMessageBytes
}

// client is a one-connection HTTP client: no proxy, no redirects (a
// token is not sent on), the connection recorded in raw so Stop and the
// keepalive can drop it whatever the WebSocket library is doing.
func (t *Transport) client(raw *rawConn) *http.Client {
	var d net.Dialer
	return &http.Client{
		Jar: t.cookieJar(),
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := d.DialContext(ctx, network, addr)
				if err == nil {
					raw.set(c)
				}
				return c, err
			},
			TLSClientConfig:   t.TLSConfig,
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (t *Transport) cookieJar() http.CookieJar {
	if t.Jar != nil {
		return t.Jar
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.jar == nil {
		t.jar, _ = cookiejar.New(nil) // never fails without options
	}
	return t.jar
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// rawConn holds the TCP connection under a WebSocket, to drop it.
type rawConn struct {
	mu sync.Mutex
	c  net.Conn
}

func (r *rawConn) set(c net.Conn) {
	r.mu.Lock()
	r.c = c
	r.mu.Unlock()
}

func (r *rawConn) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.c != nil {
		r.c.Close()
	}
}
