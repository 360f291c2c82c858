package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peer is the other end of a Conn: it reads the host's lines and writes
// its own.
type peer struct {
	lines chan map[string]json.RawMessage
	w     *io.PipeWriter
}

func newConnPair(t *testing.T, inbound func(Message)) (*Conn, *peer) {
	t.Helper()
	hostR, peerW := io.Pipe()
	peerR, hostW := io.Pipe()
	c := NewConn(hostR, hostW, Options{Inbound: inbound})
	c.Start()
	p := &peer{lines: make(chan map[string]json.RawMessage, 16), w: peerW}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(peerR)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.lines <- m
			}
		}
	}()
	t.Cleanup(func() {
		peerW.Close()
		peerR.Close()
		<-c.Done()
	})
	return c, p
}

func (p *peer) send(t *testing.T, line string) {
	t.Helper()
	_, err := p.w.Write([]byte(line + "\n"))
	require.NoError(t, err)
}

func (p *peer) next(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	m, ok := <-p.lines
	require.True(t, ok, "the host's output ended")
	return m
}

// pendingFunc is a Pending for tests.
type pendingFunc struct {
	answer func(result, rpcErr json.RawMessage)
	fail   func(error)
}

func (p pendingFunc) Answer(result, rpcErr json.RawMessage) { p.answer(result, rpcErr) }
func (p pendingFunc) Fail(cause error)                      { p.fail(cause) }

// Call and Send number their requests from one counter, and each answer
// reaches its own call.
func TestConnOneIDSpace(t *testing.T) {
	c, p := newConnPair(t, func(Message) {})
	got := make(chan string, 1)
	_, err := c.Send(pendingFunc{answer: func(result, _ json.RawMessage) { got <- string(result) }}, func(b []byte, id uint64) []byte {
		return appendRequest(b, id, "session/prompt", []byte(`{}`))
	})
	require.NoError(t, err)
	prompt := p.next(t)
	assert.Equal(t, "1", string(prompt["id"]))
	called := make(chan error, 1)
	var res struct{ OK bool }
	go func() { called <- c.Call(context.Background(), "x/call", map[string]int{"a": 1}, &res, nil) }()
	call := p.next(t)
	assert.Equal(t, "2", string(call["id"]))
	assert.Equal(t, `"x/call"`, string(call["method"]))
	assert.JSONEq(t, `{"a":1}`, string(call["params"]))
	p.send(t, `{"jsonrpc":"2.0","id":2,"result":{"OK":true}}`)
	p.send(t, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`)
	require.NoError(t, <-called)
	assert.True(t, res.OK)
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, <-got)
}

// atAnswer runs on the read loop before the call returns and before the
// next message is handed on: "answer before release".
func TestConnAnswerBeforeRelease(t *testing.T) {
	var order []string
	inbound := make(chan struct{}, 1)
	c, p := newConnPair(t, func(m Message) { order = append(order, m.Method); inbound <- struct{}{} })
	called := make(chan error, 1)
	go func() {
		called <- c.Call(context.Background(), "session/load", nil, nil, func(result json.RawMessage) {
			order = append(order, "answer:"+string(result))
		})
	}()
	p.next(t)
	p.send(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"after"}`)
	require.NoError(t, <-called)
	<-inbound
	assert.Equal(t, []string{"answer:{}", "after"}, order)
}

// Close fails every call waiting for its answer at once, with its cause;
// later calls fail with it too.
func TestConnCloseFailsEveryPendingCall(t *testing.T) {
	c, p := newConnPair(t, func(Message) {})
	cause := errors.New("the agent died")
	errs := make(chan error, 3)
	for range 2 {
		go func() { errs <- c.Call(context.Background(), "m", nil, nil, nil) }()
		p.next(t)
	}
	_, err := c.Send(pendingFunc{fail: func(err error) { errs <- err }}, func(b []byte, id uint64) []byte {
		return appendRequest(b, id, "session/prompt", nil)
	})
	require.NoError(t, err)
	p.next(t)
	c.Close(cause)
	for range 3 {
		assert.Equal(t, cause, <-errs)
	}
	assert.Equal(t, cause, c.Call(context.Background(), "m", nil, nil, nil))
	assert.Equal(t, cause, c.Notify("n", nil))
}

// A call ends with its ctx, withdrawn by a $/cancel_request naming it;
// its late answer is dropped.
func TestConnCallCancelledByCtx(t *testing.T) {
	c, p := newConnPair(t, func(Message) {})
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	ran := false
	go func() { called <- c.Call(ctx, "m", nil, nil, func(json.RawMessage) { ran = true }) }()
	req := p.next(t)
	cancel()
	require.ErrorIs(t, <-called, context.Canceled)
	withdrawal := p.next(t)
	assert.JSONEq(t, `"$/cancel_request"`, string(withdrawal["method"]))
	assert.JSONEq(t, `{"requestId":`+string(req["id"])+`}`, string(withdrawal["params"]))
	assert.Nil(t, withdrawal["id"], "a notification")
	p.send(t, `{"jsonrpc":"2.0","id":`+string(req["id"])+`,"result":{}}`)
	go func() { called <- c.Call(context.Background(), "sync", nil, nil, nil) }()
	sync := p.next(t) // its answer is read after the late one
	p.send(t, `{"jsonrpc":"2.0","id":`+string(sync["id"])+`,"result":{}}`)
	require.NoError(t, <-called)
	assert.False(t, ran)
}

// An error answer comes back as *Error; a malformed one as
// ErrMalformedAnswer, not as a call left waiting.
func TestConnErrorAnswers(t *testing.T) {
	c, p := newConnPair(t, func(Message) {})
	for _, tc := range []struct {
		answer string
		check  func(error)
	}{
		{`{"code":-32601,"message":"nope","data":{"x":1}}`, func(err error) {
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, -32601, e.Code)
			assert.JSONEq(t, `{"x":1}`, string(e.Data))
		}},
		{`{"code":"x"}`, func(err error) { assert.ErrorIs(t, err, ErrMalformedAnswer) }},
	} {
		called := make(chan error, 1)
		go func() { called <- c.Call(context.Background(), "m", nil, nil, nil) }()
		req := p.next(t)
		p.send(t, `{"jsonrpc":"2.0","id":`+string(req["id"])+`,"error":`+tc.answer+`}`)
		tc.check(<-called)
	}
}

// $/cancel_request is looked up in the registry of requests being handled.
func TestConnCancelRequestLooksUpTheRegistry(t *testing.T) {
	c, _ := newConnPair(t, func(Message) {})
	var cancelled []string
	for _, id := range []string{`7`, `"seven"`} {
		c.Track(json.RawMessage(id), cancelFunc(func() { cancelled = append(cancelled, id) }))
	}
	c.CancelRequest(json.RawMessage(`{"requestId":"seven"}`))
	c.CancelRequest(json.RawMessage(`{"requestId":8}`))
	c.Untrack(json.RawMessage(`7`))
	c.CancelRequest(json.RawMessage(`{"requestId":7}`))
	assert.Equal(t, []string{`"seven"`}, cancelled)
}

type cancelFunc func()

func (f cancelFunc) Cancel() { f() }

// Once reading has ended, new calls fail with ErrClosed; waiting ones
// wait for Close's cause.
func TestConnReadEndRefusesNewCalls(t *testing.T) {
	c, p := newConnPair(t, func(Message) {})
	called := make(chan error, 1)
	go func() { called <- c.Call(context.Background(), "m", nil, nil, nil) }()
	p.next(t)
	p.w.Close()
	<-c.Done()
	assert.ErrorIs(t, c.Call(context.Background(), "m", nil, nil, nil), ErrClosed)
	select {
	case err := <-called:
		t.Fatalf("a waiting call ended before Close: %v", err)
	default:
	}
	cause := errors.New("exit status 1")
	c.Close(cause)
	assert.Equal(t, cause, <-called)
}

// Responses whose id is no JSON-RPC id are skipped lines; others that
// match no call are dropped silently.
func TestConnUnmatchedResponses(t *testing.T) {
	hostR, peerW := io.Pipe()
	var skipped []string
	c := NewConn(hostR, io.Discard, Options{Skipped: func(msg []byte) { skipped = append(skipped, string(msg)) }})
	c.Start()
	for _, id := range []string{`99`, `"x"`, `null`, `-1`, `1.5`, `true`} {
		_, err := peerW.Write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n"))
		require.NoError(t, err)
	}
	peerW.Close()
	<-c.Done()
	want := []string{}
	for _, id := range []string{`-1`, `1.5`, `true`} {
		want = append(want, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
	}
	assert.Equal(t, want, skipped)
}

// Watch finds only a Call awaiting its answer, by the id exactly as this
// connection wrote it, and its ended runs once as the call ends: answered
// (before the caller is released), withdrawn by its ctx, or failed by
// Close; unwatch forgets it.
func TestConnWatchFindsOnlyCallsAwaitingTheirAnswer(t *testing.T) {
	c, p := newConnPair(t, func(Message) {})
	call := func(ctx context.Context, method string) (id json.RawMessage, done <-chan error) {
		called := make(chan error, 1)
		go func() { called <- c.Call(ctx, method, nil, nil, nil) }()
		return p.next(t)["id"], called
	}
	endedBy := func(id json.RawMessage) (<-chan struct{}, func()) {
		ended := make(chan struct{})
		_, unwatch, ok := c.Watch(id, func() { close(ended) })
		require.True(t, ok, "call %s not found", id)
		return ended, unwatch
	}

	// Answered: ended runs before the caller is released.
	id, done := call(context.Background(), "authenticate")
	method, _, ok := c.Watch(id, func() {})
	require.True(t, ok)
	assert.Equal(t, "authenticate", method)
	for _, other := range []string{`"` + string(id) + `"`, `null`, `99`, `-` + string(id), string(id) + `.0`, string(id) + `e0`, `18446744073709551617`, `1e400`, `{}`} {
		_, _, ok := c.Watch(json.RawMessage(other), func() { t.Errorf("ended ran for %s", other) })
		assert.False(t, ok, other)
	}
	ended, _ := endedBy(id)
	p.send(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{}}`)
	require.NoError(t, <-done)
	select {
	case <-ended:
	default:
		t.Fatal("the caller was released before ended ran")
	}
	_, _, ok = c.Watch(id, func() {})
	assert.False(t, ok, "an answered call is still found")

	// Unwatched: ended does not run.
	id, done = call(context.Background(), "session/new")
	_, unwatch, ok := c.Watch(id, func() { t.Error("ended ran after unwatch") })
	require.True(t, ok)
	unwatch()
	p.send(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32603,"message":"x"}}`)
	require.Error(t, <-done)

	// Withdrawn by ctx.
	ctx, cancel := context.WithCancel(context.Background())
	id, done = call(ctx, "session/load")
	ended, _ = endedBy(id)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	<-ended
	p.next(t) // the $/cancel_request

	// A prompt (Send) is not found.
	_, err := c.Send(pendingFunc{answer: func(_, _ json.RawMessage) {}, fail: func(error) {}}, func(b []byte, id uint64) []byte {
		return appendRequest(b, id, "session/prompt", []byte(`{}`))
	})
	require.NoError(t, err)
	_, _, ok = c.Watch(p.next(t)["id"], func() {})
	assert.False(t, ok, "a prompt was found")

	// Failed by Close.
	id, done = call(context.Background(), "initialize")
	ended, _ = endedBy(id)
	c.Close(errors.New("gone"))
	<-ended
	require.Error(t, <-done)
}

// A request's id is echoed byte-exact, whatever JSON it is: -1 is not
// answered as 18446744073709551615, nor does 1.5 end the connection
// (both of which sourcegraph/jsonrpc2 v0.2.3 does: SPEC, Why not
// jsonrpc2). Params reach Inbound as the peer wrote them.
func TestRequestIDsAndParamsKeptByteExact(t *testing.T) {
	ids := []string{`-1`, `1.5`, `18446744073709551616`, `1e3`, `"x"`, `null`, `0`}
	var input strings.Builder
	for _, id := range ids {
		input.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"m","params":{"zeta":1,"alpha":"<b>","n":1.50}}` + "\n")
	}
	var out bytes.Buffer
	var c *Conn
	c = NewConn(strings.NewReader(input.String()), &out, Options{Inbound: func(m Message) {
		assert.Equal(t, `{"zeta":1,"alpha":"<b>","n":1.50}`, string(m.Params))
		require.NoError(t, c.Reply(m.ID, struct{}{}, nil))
	}})
	c.read()
	require.ErrorIs(t, c.ReadErr(), io.EOF, "the connection read every request")
	var want strings.Builder
	for _, id := range ids {
		want.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n")
	}
	assert.Equal(t, want.String(), out.String())
}
