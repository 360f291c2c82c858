package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/acphost/acphost/web"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	fakeagent.Main() // when re-executed as a fake agent, this never returns
	os.Exit(testutil.RunCheckingGoroutines(m))
}

// waitFor bounds every wait of a test for a message; nothing waits on the
// clock otherwise.
const waitFor = 20 * time.Second

// rig is a Server on an httptest.Server, playing a fake agent in-process
// (through an acphost.StreamTransport: Config.Start) so the test can read the agent's
// wire.
type rig struct {
	t     *testing.T
	srv   *web.Server
	hs    *httptest.Server
	agent *fakeagent.Agent
}

// closer closes several things.
type closer []io.Closer

func (c closer) Close() error {
	for _, x := range c {
		x.Close()
	}
	return nil
}

// newRig serves script; mod, if set, changes the Config before New.
func newRig(t *testing.T, script fakeagent.Script, mod func(*web.Config)) *rig {
	t.Helper()
	a := fakeagent.New(script)
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := a.Serve(context.Background(), toAgentR, fromAgentW)
		fromAgentW.Close()
		served <- err
	}()
	cfg := web.Config{
		Agent: acphost.ACPOptions{Dir: t.TempDir(), Timeouts: acphost.Timeouts{CloseGrace: 2 * time.Second}},
		Start: func(ctx context.Context, opts acphost.ACPOptions) (*acphost.ACPClient, error) {
			opts.Transport = &acphost.StreamTransport{Reader: fromAgentR, Writer: toAgentW, Closer: closer{toAgentW, fromAgentR}}
			return acphost.Start(ctx, opts)
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := web.New(context.Background(), cfg)
	if err != nil {
		toAgentW.Close()
		<-served
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		require.NoError(t, srv.Close())
		hs.Close()
		select {
		case <-served:
		case <-time.After(waitFor):
			t.Error("the fake agent did not end")
		}
	})
	return &rig{t: t, srv: srv, hs: hs, agent: a}
}

// request sends a request with the token (as a bearer header) unless
// noToken; hdr adds headers.
func (r *rig) request(method, path, body string, hdr map[string]string) *http.Response {
	r.t.Helper()
	req, err := http.NewRequest(method, r.hs.URL+path, strings.NewReader(body))
	require.NoError(r.t, err)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+r.srv.Token())
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := r.hs.Client().Do(req)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// post sends a command and requires the status want; it returns the body.
func (r *rig) post(path string, body any, want int) string {
	r.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(r.t, err)
	resp := r.request(http.MethodPost, path, string(b), nil)
	out, _ := io.ReadAll(resp.Body)
	require.Equal(r.t, want, resp.StatusCode, "POST %s %s: %s", path, b, out)
	return string(out)
}

// msg is one event-stream message, decoded loosely.
type msg map[string]any

func (m msg) typ() string { s, _ := m["type"].(string); return s }

func (m msg) str(k string) string { s, _ := m[k].(string); return s }

// tab is one connected event stream, as a browser tab holds it.
type tab struct {
	t      *testing.T
	ch     chan msg
	seen   []msg
	cancel context.CancelFunc
}

// tab connects an event stream; it ends with the test.
func (r *rig) tab() *tab {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.hs.URL+"/events", nil)
	require.NoError(r.t, err)
	req.Header.Set("Authorization", "Bearer "+r.srv.Token())
	resp, err := r.hs.Client().Do(req)
	if err != nil {
		cancel()
		r.t.Fatal(err)
	}
	require.Equal(r.t, http.StatusOK, resp.StatusCode)
	require.Equal(r.t, "text/event-stream", resp.Header.Get("Content-Type"))
	tb := &tab{t: r.t, ch: make(chan msg, 1<<16), cancel: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(tb.ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m msg
			if json.Unmarshal([]byte(data), &m) != nil {
				if ctx.Err() != nil {
					return // the test is over: the stream was cut in a message
				}
				r.t.Errorf("undecodable message (%d bytes) ending %q", len(data), data[max(0, len(data)-100):])
				continue
			}
			tb.ch <- m
		}
	}()
	r.t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	return tb
}

// next returns the next message for which match is true, skipping others
// (kept in seen); it fails the test after waitFor.
func (tb *tab) next(what string, match func(msg) bool) msg {
	tb.t.Helper()
	return tb.nextWithin(what, waitFor, match)
}

// nextWithin is next with a bound of its own, for a message that takes
// long to make under -race (megabytes of agent text).
func (tb *tab) nextWithin(what string, wait time.Duration, match func(msg) bool) msg {
	tb.t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case m, ok := <-tb.ch:
			if !ok {
				tb.t.Fatalf("stream ended waiting for %s; seen %v", what, tb.seen)
			}
			tb.seen = append(tb.seen, m)
			if match(m) {
				return m
			}
		case <-timeout:
			tb.t.Fatalf("no %s within %v; seen %v", what, wait, tb.seen)
		}
	}
}

func ofType(typ string) func(msg) bool { return func(m msg) bool { return m.typ() == typ } }

// textUntil gathers text deltas until the turn's end message.
func (tb *tab) textUntil(end string) (string, msg) {
	tb.t.Helper()
	var text strings.Builder
	m := tb.next(end, func(m msg) bool {
		if m.typ() == "text" {
			text.WriteString(m.str("delta"))
		}
		return m.typ() == end
	})
	return text.String(), m
}

// dialog waits for a dialog of this kind and returns it.
func (tb *tab) dialog(kind string) msg {
	tb.t.Helper()
	return tb.next(kind+" dialog", func(m msg) bool { return m.typ() == "dialog" && m.str("kind") == kind })
}

// sub returns the object under key.
func (m msg) sub(k string) msg { s, _ := m[k].(map[string]any); return s }

// list returns the objects of an array under key.
func (m msg) list(k string) []msg {
	l, _ := m[k].([]any)
	out := make([]msg, 0, len(l))
	for _, x := range l {
		o, _ := x.(map[string]any)
		out = append(out, o)
	}
	return out
}

// received waits for the agent to have received a message matching want
// (a substring of its raw JSON).
func (r *rig) received(want string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := r.agent.WaitReceivedFunc(ctx, func(m fakeagent.Message) bool { return bytes.Contains(m.Raw, []byte(want)) }); err != nil {
		r.t.Fatalf("the agent never received %s", want)
	}
}

// newHTTPServer serves h until the test ends.
func newHTTPServer(t *testing.T, h http.Handler) *httptest.Server {
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs
}
