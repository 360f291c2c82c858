//go:build unix

package websocket

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ws "github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// rawServer upgrades one connection by hand and runs script on it, with
// frames written byte by byte: what a library would not let a peer send.
func rawServer(t *testing.T, script func(rw *bufio.ReadWriter)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Acp-Connection-Id: raw-1\r\nSec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
		rw.Flush()
		script(rw)
		rw.Flush()
		<-done
	})}
	go srv.Serve(ln)
	t.Cleanup(func() {
		close(done)
		srv.Close()
	})
	return "ws://" + ln.Addr().String() + "/acp"
}

// frame writes one unmasked server frame.
func frame(w io.Writer, fin bool, op byte, payload []byte) {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	hdr := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, byte(n))
	default:
		hdr = append(hdr, 126, byte(n>>8), byte(n))
	}
	w.Write(hdr)
	w.Write(payload)
}

// readClientFrame reads one masked client frame's opcode and payload.
func readClientFrame(r io.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := int(h[1] & 0x7f)
	if n == 126 {
		var ext [2]byte
		io.ReadFull(r, ext[:])
		n = int(binary.BigEndian.Uint16(ext[:]))
	}
	var mask [4]byte
	io.ReadFull(r, mask[:])
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	for i := range p {
		p[i] ^= mask[i%4]
	}
	return h[0] & 0x0f, p, nil
}

func closePayload(code int, reason string) []byte {
	return append([]byte{byte(code >> 8), byte(code)}, reason...)
}

// rawFrame is a frame a raw server sends: FIN, opcode, payload.
type rawFrame struct {
	fin bool
	op  byte
	p   []byte
}

// takeTwoThenSend serves a client: the payloads of its first two frames
// come on got, then frames are sent.
func takeTwoThenSend(t *testing.T, frames ...rawFrame) (url string, got <-chan []string) {
	taken := make(chan []string, 1)
	url = rawServer(t, func(rw *bufio.ReadWriter) {
		var payloads []string
		for range 2 {
			_, p, err := readClientFrame(rw)
			if err != nil {
				break
			}
			payloads = append(payloads, string(p))
		}
		taken <- payloads
		for _, f := range frames {
			frame(rw, f.fin, f.op, f.p)
		}
	})
	return url, taken
}

func TestLinkFramesEitherWay(t *testing.T) {
	t.Parallel()
	url, got := takeTwoThenSend(t,
		rawFrame{true, 0x2, []byte{0, 1, 2}},                                                // binary: ignored
		rawFrame{true, 0x1, []byte("{\n  \"jsonrpc\": \"2.0\",\r\n  \"method\": \"x\"\n}")}, // pretty-printed
		rawFrame{true, 0x1, []byte(" \n ")},                                                 // blank: skipped
		rawFrame{false, 0x1, []byte(`{"jsonrpc":"2.0","method":"cut`)},                      // a message begun...
		rawFrame{true, 0x8, closePayload(1000, "exit 5")})                                   // ...and a close in the middle of it
	l, err := (&Transport{URL: url}).DialLink(context.Background())
	require.NoError(t, err)
	defer l.Stop(0)
	assert.Equal(t, "raw-1", l.ConnectionID())

	for _, part := range []string{`{"a":`, `1}` + "\n" + `{"b":2}`, "\r\n"} {
		_, err := l.Write([]byte(part))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{`{"a":1}`, `{"b":2}`}, <-got, "a line written in parts is one frame; CRLF ends it too")

	all, err := io.ReadAll(l)
	require.NoError(t, err)
	assert.Equal(t, `{   "jsonrpc": "2.0",    "method": "x" }`+"\n", string(all),
		"a frame's raw newlines are spaces, the half message is dropped")
	assert.EqualValues(t, 1, l.BinaryFrames())
	<-l.Done()
	var ee *acphost.ExitError
	require.ErrorAs(t, l.Err(), &ee, "1000 with \"exit 5\" is the agent's exit")
	assert.Equal(t, 5, ee.ExitCode)
}

func TestLinkReportsOtherClosesAsLost(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		payload []byte
		code    int
	}{
		"going away":   {closePayload(1001, "bye"), 1001},
		"normal":       {closePayload(1000, "done"), 1000},
		"no status":    {nil, 1005},
		"signal":       {closePayload(1000, "signal killed"), -1},
		"exit garbled": {closePayload(1000, "exit x"), 1000},
	} {
		url := rawServer(t, func(rw *bufio.ReadWriter) { frame(rw, true, 0x8, tc.payload) })
		l, err := (&Transport{URL: url}).DialLink(context.Background())
		require.NoError(t, err)
		<-l.Done()
		if tc.code == -1 {
			var ee *acphost.ExitError
			require.ErrorAs(t, l.Err(), &ee, name)
			assert.Equal(t, "killed", ee.Signal)
		} else {
			var ce *CloseError
			require.ErrorAs(t, l.Err(), &ce, name)
			assert.Equal(t, tc.code, ce.Code, name)
			assert.ErrorIs(t, l.Err(), acphost.ErrLinkLost, name)
		}
		l.Stop(0)
	}
}

func TestLinkBoundsWhatItReads(t *testing.T) {
	t.Parallel()
	url := rawServer(t, func(rw *bufio.ReadWriter) {
		frame(rw, true, 0x1, bytes.Repeat([]byte("x"), 2000))
	})
	l, err := (&Transport{URL: url, MaxMessageBytes: 1000}).DialLink(context.Background())
	require.NoError(t, err)
	defer l.Stop(0)
	<-l.Done()
	var le *acphost.LinkError
	require.ErrorAs(t, l.Err(), &le)
	assert.Equal(t, "read", le.Op)
	assert.ErrorIs(t, l.Err(), ErrMessageTooBig)
}

// dialBridge opens a plain WebSocket connection to a Bridge.
func dialBridge(t *testing.T, s *served, h http.Header) (*ws.Conn, *http.Response, error) {
	t.Helper()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Authorization") == "" {
		h.Set("Authorization", "Bearer "+testToken)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := ws.Dial(ctx, s.url(), &ws.DialOptions{HTTPHeader: h})
	if c != nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

func readCtx(t *testing.T, c *ws.Conn) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, p, err := c.Read(ctx)
	return p, err
}

func write(t *testing.T, c *ws.Conn, typ ws.MessageType, p string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Write(ctx, typ, []byte(p)))
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`

func TestBridgeRequiresInitializeFirst(t *testing.T) {
	t.Parallel()
	s := serveFake(t, fakeagent.Script{}, nil)
	for name, first := range map[string]string{
		"another method": `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`,
		"a notification": `{"jsonrpc":"2.0","method":"initialize","params":{}}`,
		"null id":        `{"jsonrpc":"2.0","id":null,"method":"initialize"}`,
		"not JSON":       `hello`,
		"a batch":        `[` + initialize + `]`,
	} {
		c, _, err := dialBridge(t, s, nil)
		require.NoError(t, err, name)
		write(t, c, ws.MessageText, first)
		_, err = readCtx(t, c)
		assert.Equal(t, ws.StatusProtocolError, ws.CloseStatus(err), "%s: %v", name, err)
		var ce ws.CloseError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, errNotInitialize, ce.Reason)
	}
	assert.Empty(t, s.b.pids(), "no agent was started")
}

func TestBridgeRelaysWhatAStdioAgentNeeds(t *testing.T) {
	t.Parallel()
	var logs testutil.SyncBuffer
	s := serveFake(t, fakeagent.Script{StderrLines: []string{"stderr banner"}, Turns: []fakeagent.Turn{
		turn(fakeagent.Step{Raw: "stdout banner, not JSON"}, fakeagent.Say(fakeagent.Text("ok"))),
	}}, func(b *Bridge) {
		b.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c, resp, err := dialBridge(t, s, nil)
	require.NoError(t, err)
	assert.Regexp(t, uuidV4, resp.Header.Get("Acp-Connection-Id"))
	write(t, c, ws.MessageBinary, "ignored")
	write(t, c, ws.MessageText, strings.ReplaceAll(initialize, ",", ",\n  ")) // pretty-printed: one line to the agent
	p, err := readCtx(t, c)
	require.NoError(t, err)
	assert.Contains(t, string(p), `"id":0`)
	assert.Contains(t, string(p), `"result"`)
	write(t, c, ws.MessageText, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	p, err = readCtx(t, c)
	require.NoError(t, err)
	assert.Contains(t, string(p), `"sessionId"`)
	write(t, c, ws.MessageText, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"x"}]}}`)
	for {
		p, err = readCtx(t, c)
		require.NoError(t, err)
		assert.NotContains(t, string(p), "banner")
		if strings.Contains(string(p), `"stopReason"`) {
			break
		}
	}
	eventually(t, "the skipped line to be logged", func() bool { return strings.Contains(logs.String(), "stdout banner") })
	assert.NotContains(t, logs.String(), testToken)
}

func TestBridgeBoundsFrames(t *testing.T) {
	t.Parallel()
	s := serveFake(t, fakeagent.Script{IgnoreEOF: true}, func(b *Bridge) { b.MaxMessageBytes = 4096 })
	c, _, err := dialBridge(t, s, nil)
	require.NoError(t, err)
	write(t, c, ws.MessageText, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"pad":"`+strings.Repeat("x", 8000)+`"}}`)
	_, err = readCtx(t, c)
	assert.Equal(t, ws.StatusMessageTooBig, ws.CloseStatus(err), "%v", err)
	assert.Empty(t, s.b.pids())

	c, _, err = dialBridge(t, s, nil)
	require.NoError(t, err)
	write(t, c, ws.MessageText, initialize)
	_, err = readCtx(t, c)
	require.NoError(t, err)
	require.Len(t, s.b.pids(), 1)
	pid := s.b.pids()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; err == nil && i < 1000; i++ { // a flood of big frames: the first ends it
		err = c.Write(ctx, ws.MessageText, bytes.Repeat([]byte("y"), 5000))
	}
	_, _, err = c.Read(ctx)
	assert.Equal(t, ws.StatusMessageTooBig, ws.CloseStatus(err), "%v", err)
	eventually(t, "the flooding client's agent to be stopped", func() bool { return !processRunning(pid) })
}

func TestBridgeRefuses(t *testing.T) {
	t.Parallel()
	s := serveFake(t, fakeagent.Script{}, func(b *Bridge) { b.MaxConnections = 1 })
	_, resp, err := dialBridge(t, s, http.Header{"Origin": {"https://evil.example"}})
	require.Error(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a cross-origin browser")
	_, resp, err = dialBridge(t, s, http.Header{"Authorization": {"Basic " + testToken}})
	require.Error(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the token only as a bearer token")

	c, _, err := dialBridge(t, s, http.Header{"Origin": {"http://" + s.addr}})
	require.NoError(t, err, "a page of the bridge's own host")
	write(t, c, ws.MessageText, initialize)
	_, err = readCtx(t, c)
	require.NoError(t, err)
	_, resp, err = dialBridge(t, s, nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "beyond MaxConnections")

	r, err := http.Get("http://" + s.addr + "/other")
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
}

func TestNoTokenMeansLoopbackOnly(t *testing.T) {
	t.Parallel()
	err := ListenAndServe(context.Background(), "127.0.0.1:0", &Bridge{Command: "true"})
	require.ErrorIs(t, err, ErrNoToken, "a token is required unless AllowNoToken")
	b := &Bridge{Command: "true", AllowNoToken: true}
	err = ListenAndServe(context.Background(), ":0", b)
	require.ErrorIs(t, err, ErrNoToken)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ListenAndServe(ctx, "127.0.0.1:0", b) }()
	cancel()
	require.NoError(t, <-done)
}

// TestBridgeClosesAnAgentLineOverTheBound: an agent line over
// MaxMessageBytes is never relayed: the client gets 1009 and the agent is
// stopped.
func TestBridgeClosesAnAgentLineOverTheBound(t *testing.T) {
	t.Parallel()
	s := serveFake(t, fakeagent.Script{Turns: []fakeagent.Turn{
		turn(fakeagent.Say(fakeagent.Text(strings.Repeat("z", 8000)))),
	}}, func(b *Bridge) { b.MaxMessageBytes = 4096 })
	c, pid := initialized(t, s)
	write(t, c, ws.MessageText, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	_, err := readCtx(t, c)
	require.NoError(t, err)
	write(t, c, ws.MessageText, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"x"}]}}`)
	for err == nil {
		var p []byte
		p, err = readCtx(t, c)
		require.NotContains(t, string(p), "zzzz", "a line over the bound was relayed")
	}
	assert.Equal(t, ws.StatusMessageTooBig, ws.CloseStatus(err), "%v", err)
	var ce ws.CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "agent line too long", ce.Reason)
	eventually(t, "the agent to be stopped", func() bool { return !processRunning(pid) })
}

// TestBridgePingEndsAStalledClient: a client that stops reading (so it
// answers no ping) while the agent is idle loses its connection within
// about two ping intervals, and its agent is stopped.
func TestBridgePingEndsAStalledClient(t *testing.T) {
	t.Parallel()
	s := serveFake(t, fakeagent.Script{}, func(b *Bridge) { b.PingInterval = 100 * time.Millisecond })
	c, pid := initialized(t, s)
	// The client reads nothing more, so its library answers no ping.
	eventually(t, "the stalled client's agent to be stopped", func() bool { return !processRunning(pid) && len(s.b.pids()) == 0 })
	_, err := readCtx(t, c)
	assert.Error(t, err, "the connection was ended")
}

// initialized dials s, has the agent answer initialize and returns the
// connection and the agent's pid.
func initialized(t *testing.T, s *served) (*ws.Conn, int) {
	t.Helper()
	c, _, err := dialBridge(t, s, nil)
	require.NoError(t, err)
	write(t, c, ws.MessageText, initialize)
	_, err = readCtx(t, c)
	require.NoError(t, err)
	require.Len(t, s.b.pids(), 1)
	return c, s.b.pids()[0]
}

// The acphost client reads a Link's messages whole: ReadMessage hands each
// text frame as it came (raw newlines and all), WriteMessage sends each
// message as one frame as it is; blank frames, binary frames and a
// message cut by a close are dropped, and a message over MaxMessageBytes
// is refused either way.
func TestLinkMessagesEitherWay(t *testing.T) {
	t.Parallel()
	pretty := "{\n  \"jsonrpc\": \"2.0\",\r\n  \"method\": \"x\"\n}"
	url, got := takeTwoThenSend(t,
		rawFrame{true, 0x2, []byte{0, 1, 2}},
		rawFrame{true, 0x1, []byte(pretty)},
		rawFrame{true, 0x1, []byte(" \n ")},
		rawFrame{true, 0x1, []byte(`{"jsonrpc":"2.0","method":"y"}`)},
		rawFrame{false, 0x1, []byte(`{"jsonrpc":"2.0","method":"cut`)},
		rawFrame{true, 0x8, closePayload(1000, "exit 5")})
	l, err := (&Transport{URL: url, MaxMessageBytes: 100}).DialLink(context.Background())
	require.NoError(t, err)
	defer l.Stop(0)
	var _ acphost.MessageLink = l

	require.NoError(t, l.WriteMessage([]byte("{\"a\":\n1}")))
	require.ErrorIs(t, l.WriteMessage(bytes.Repeat([]byte("x"), 101)), ErrMessageTooBig)
	require.NoError(t, l.WriteMessage([]byte(`{"b":2}`)))
	assert.Equal(t, []string{"{\"a\":\n1}", `{"b":2}`}, <-got, "one frame per message, as written")

	var msgs []string
	for {
		m, err := l.ReadMessage()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		msgs = append(msgs, string(m))
	}
	assert.Equal(t, []string{pretty, `{"jsonrpc":"2.0","method":"y"}`}, msgs)
	assert.EqualValues(t, 1, l.BinaryFrames())
	var ee *acphost.ExitError
	require.ErrorAs(t, l.Err(), &ee)
	assert.Equal(t, 5, ee.ExitCode)
}

// Over a Link the client takes each message whole: a pretty-printed one
// is read (and recorded as one line), and one over ACPOptions.Limits.MaxLineBytes
// ends the connection as a line over it does, with ErrLineTooLong, while
// the link itself allows it.
func TestClientTakesWholeMessagesWithinItsBound(t *testing.T) {
	t.Parallel()
	pretty := []byte("{\r\n \"jsonrpc\": \"2.0\",\n \"method\": \"session/update\",\n \"params\": {\"sessionId\": \"s1\", \"update\": {\"sessionUpdate\": \"agent_message_chunk\",\n  \"content\": {\"type\": \"text\", \"text\": \"hi\\nthere\"}}}\n}")
	big := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("x", 4<<10) + `"}}}}`)
	srv := httptest.NewServer(wsAgent(func(send func([]byte) error) error { return send(pretty) }))
	defer srv.Close()
	var rec bytes.Buffer
	c := start(t, &Transport{URL: "ws" + strings.TrimPrefix(srv.URL, "http")}, acphost.ACPOptions{Debug: acphost.DebugOptions{Record: &rec}})
	resp, err := c.Generate(acphost.Request{Prompt: "x"})
	require.NoError(t, err)
	assert.Equal(t, "hi\nthere", resp.Text)
	c.Close()
	for _, line := range strings.Split(strings.TrimSuffix(rec.String(), "\n"), "\n") {
		assert.True(t, json.Valid([]byte(line)), "a record entry is one line: %q", line)
	}

	bigSrv := httptest.NewServer(wsAgent(func(send func([]byte) error) error { return send(big) }))
	defer bigSrv.Close()
	c = start(t, &Transport{URL: "ws" + strings.TrimPrefix(bigSrv.URL, "http")}, acphost.ACPOptions{Limits: acphost.Limits{MaxLineBytes: 2 << 10}})
	_, err = c.Generate(acphost.Request{Prompt: "x"})
	require.ErrorIs(t, err, acphost.ErrLineTooLong)
	var pe *acphost.ProtocolError
	require.ErrorAs(t, err, &pe)
}
