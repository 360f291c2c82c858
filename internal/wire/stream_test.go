package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seen is what a Conn's hooks saw.
type seen struct {
	inbound []Message
	skipped []string
	trace   []string
}

func (s *seen) options(max int) Options {
	return Options{
		MaxMessage: max,
		Inbound:    func(m Message) { s.inbound = append(s.inbound, m) },
		Skipped:    func(msg []byte) { s.skipped = append(s.skipped, string(msg)) },
		Trace:      func(dir string, msg []byte) { s.trace = append(s.trace, dir+" "+string(msg)) },
	}
}

// framing makes a Conn over input: as lines, or as one message per line
// of input handed whole by a Messages transport.
type framing struct {
	name string
	conn func(input string, opts Options) *Conn
}

var framings = []framing{
	{"lines", func(input string, opts Options) *Conn { return NewConn(strings.NewReader(input), io.Discard, opts) }},
	{"messages", func(input string, opts Options) *Conn {
		return NewMessageConn(newFakeMessages(strings.Split(strings.TrimSuffix(input, "\n"), "\n")...), opts)
	}},
}

// readAll runs c's read loop to its end on the test's goroutine, with
// calls awaiting an answer under ids, and returns why reading ended.
func readAll(c *Conn, calls map[uint64]*answers) error {
	for id, a := range calls {
		c.calls[id] = a
	}
	c.read()
	return c.ReadErr()
}

// answers records the answers a call got.
type answers struct{ got []string }

func (a *answers) Answer(result, rpcErr json.RawMessage) {
	a.got = append(a.got, "result="+string(result)+" error="+string(rpcErr))
}
func (a *answers) Fail(cause error) { a.got = append(a.got, "fail="+cause.Error()) }

// fakeMessages is a Messages transport: ReadMessage hands out in, then
// io.EOF; WriteMessage keeps copies, or blocks while blocked is open
// until AbortWrites.
type fakeMessages struct {
	in      [][]byte
	mu      sync.Mutex
	out     []string
	blocked chan struct{}
	abort   chan struct{}
	once    sync.Once
}

func newFakeMessages(in ...string) *fakeMessages {
	m := &fakeMessages{abort: make(chan struct{})}
	for _, s := range in {
		m.in = append(m.in, []byte(s))
	}
	return m
}

func (m *fakeMessages) ReadMessage() ([]byte, error) {
	if len(m.in) == 0 {
		return nil, io.EOF
	}
	msg := m.in[0]
	m.in = m.in[1:]
	return msg, nil
}

func (m *fakeMessages) WriteMessage(msg []byte) error {
	if m.blocked != nil {
		select {
		case <-m.blocked:
		case <-m.abort:
			return errors.New("aborted")
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.out = append(m.out, string(msg))
	return nil
}

func (m *fakeMessages) AbortWrites() { m.once.Do(func() { close(m.abort) }) }

func (m *fakeMessages) written() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out
}

func TestReadSkipsJunkAndRoutesMessages(t *testing.T) {
	input := strings.Join([]string{
		"Starting agent v1.2...",
		"\x1b[32mready\x1b[0m",
		``,
		`{"level":"info","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"a":1}}`,
		`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}`,
		`{"jsonrpc":"2.0","id":"x-1","method":"fs/read_text_file","params":{}}`,
		`[1,2]`,
		`{"method":"m","jsonrpc":"2.0","id":7}`,
		`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`,
	}, "\n") + "\n"
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			got := &seen{}
			call := &answers{}
			require.ErrorIs(t, readAll(f.conn(input, got.options(0)), map[uint64]*answers{1: call}), io.EOF)
			assert.Equal(t, []string{`result={"ok":true} error=`}, call.got, "the call got its answer, and only it")
			require.Len(t, got.inbound, 4)
			assert.Equal(t, "session/update", got.inbound[0].Method)
			assert.Nil(t, got.inbound[0].ID, "a notification has no id")
			assert.JSONEq(t, `{"a":1}`, string(got.inbound[0].Params))
			assert.Equal(t, "0", string(got.inbound[1].ID), "id 0 is a real id")
			assert.Equal(t, `"x-1"`, string(got.inbound[2].ID))
			assert.Equal(t, "7", string(got.inbound[3].ID), "key order does not matter")
			assert.Equal(t, []string{"Starting agent v1.2...", "\x1b[32mready\x1b[0m", `{"level":"info","id":1,"result":{}}`, `[1,2]`}, got.skipped,
				"a non-JSON-RPC object with an id must never resolve a call")
		})
	}
}

// A message over MaxMessage ends reading with a *LineError on both
// framings: a line is refused as it grows past the limit (never held
// whole), a whole message as it is handed over.
func TestMessageOverLimitIsFatal(t *testing.T) {
	huge := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", 300<<10) + `"}`
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			got := &seen{}
			c := f.conn(huge+"\n"+`{"jsonrpc":"2.0","method":"after"}`+"\n", got.options(200<<10))
			err := readAll(c, nil)
			require.ErrorIs(t, err, ErrLineTooLong)
			var le *LineError
			require.True(t, errors.As(err, &le))
			assert.Equal(t, 200<<10, le.Limit)
			assert.Empty(t, got.inbound, "nothing is read past it")
			select {
			case <-c.ReadDone():
			default:
				t.Fatal("ReadDone is open")
			}
		})
	}
}

func TestLongMessageUnderLimitIsRead(t *testing.T) {
	text := strings.Repeat("b", 1<<20)
	line := `{"jsonrpc":"2.0","method":"x","params":"` + text + `"}`
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			got := &seen{}
			require.ErrorIs(t, readAll(f.conn(line+"\n"+`{"jsonrpc":"2.0","id":2,"result":null}`+"\n", got.options(0)), nil), io.EOF)
			require.Len(t, got.inbound, 1)
			assert.Equal(t, `"`+text+`"`, string(got.inbound[0].Params))
		})
	}
}

func TestLastLineWithoutNewline(t *testing.T) {
	call := &answers{}
	c := NewConn(strings.NewReader(`{"jsonrpc":"2.0","id":3,"result":{}}`), io.Discard, Options{})
	require.ErrorIs(t, readAll(c, map[uint64]*answers{3: call}), io.EOF)
	assert.Len(t, call.got, 1)
}

// A whole message keeps what JSON allows between tokens, raw newlines
// included (a pretty-printed message), and is handed on as one line:
// those newlines become spaces, while one inside a string (which JSON
// forbids) stays and the message stays invalid.
func TestWholeMessagesAreOneLine(t *testing.T) {
	got := &seen{}
	m := newFakeMessages(
		"{\r\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"session/update\",\n  \"params\": {\"text\": \"a\\nb \\\"q\\\" \\\\\"}\n}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"raw\nnewline\"}",
	)
	require.ErrorIs(t, readAll(NewMessageConn(m, got.options(0)), nil), io.EOF)
	require.Len(t, got.inbound, 1)
	assert.Equal(t, "session/update", got.inbound[0].Method)
	assert.Equal(t, `{"text": "a\nb \"q\" \\"}`, string(got.inbound[0].Params))
	require.Len(t, got.trace, 1)
	assert.NotContains(t, got.trace[0], "\n")
	assert.Equal(t, []string{"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"raw\nnewline\"}"}, got.skipped)
}

// Each message is one write: a line with its newline on the line
// framing, the message alone on a Messages transport.
func TestWriteOneWritePerMessage(t *testing.T) {
	write := func(c *Conn) {
		require.NoError(t, c.Notify("n", map[string]any{"text": "a\nb", "raw": json.RawMessage("{\n \"x\": 1\n}")}))
		require.NoError(t, c.Reply(json.RawMessage(`"id-9"`), map[string]string{"k": "v"}, nil))
		require.NoError(t, c.Reply(json.RawMessage(`0`), nil, &Error{Code: -32601, Message: "nope"}))
		require.NoError(t, c.ReplyRaw(json.RawMessage(`3`), nil))
	}
	want := []string{
		`{"jsonrpc":"2.0","method":"n","params":{"raw":{"x":1},"text":"a\nb"}}`,
		`{"jsonrpc":"2.0","id":"id-9","result":{"k":"v"}}`,
		`{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"nope"}}`,
		`{"jsonrpc":"2.0","id":3,"result":null}`,
	}
	var buf bytes.Buffer
	write(NewConn(strings.NewReader(""), &buf, Options{}))
	assert.Equal(t, strings.Join(want, "\n")+"\n", buf.String())
	m := newFakeMessages()
	write(NewMessageConn(m, Options{}))
	assert.Equal(t, want, m.written())
}

// FuzzReadObject runs the read loop over arbitrary input: as lines (the
// first byte even) or as whole messages split at NUL bytes (odd). Nothing
// panics, and only messages with a method reach Inbound.
func FuzzReadObject(f *testing.F) {
	f.Add([]byte("\x00" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	f.Add([]byte("\x00" + `{"jsonrpc":"2.0","method":"session/update","params":{}}` + "\njunk\n"))
	f.Add([]byte("\x00" + `{"jsonrpc":"2.0","id":null,"error":{"code":1}}`))
	f.Add([]byte("\x01" + "{\n\"jsonrpc\":\"2.0\",\r\"method\":\"m\"}\x00junk\x00\x00{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		opts := Options{MaxMessage: 1 << 16, Inbound: func(m Message) {
			if m.Method == "" {
				t.Fatal("inbound message without method")
			}
		}}
		var c *Conn
		if data[0]&1 == 0 {
			c = NewConn(bytes.NewReader(data[1:]), io.Discard, opts)
		} else {
			m := newFakeMessages()
			m.in = bytes.Split(data[1:], []byte{0})
			c = NewMessageConn(m, opts)
		}
		_ = readAll(c, map[uint64]*answers{1: {}})
	})
}

// FuzzEnvelope checks the one-pass envelope reader against json.Unmarshal.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","method":"m","params":[1],"id":"x"}`,
		`{"JSONRPC":"2.0","Method":"m"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":1},"error":null}`,
		`{"jsonrpc":null,"method":7}`, "{\"m\xc5\xbfthod\":\"x\"}", `{"jsonrpc":"2.0","x":{"y":[1,2]}}`,
		`{"jsonrpc":"2.\u0030","method":"a\nb"}`, `{"id":1}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got, want envelope
		ok := got.decode(line)
		wantOK := json.Unmarshal(line, &want) == nil
		if ok != wantOK {
			t.Fatalf("%q: decode %v, json.Unmarshal %v", line, ok, wantOK)
		}
		if ok && !reflect.DeepEqual(normal(got), normal(want)) {
			t.Fatalf("%q: decode %+v, json.Unmarshal %+v", line, got, want)
		}
	})
}

func TestEnvelopeNestingLimit(t *testing.T) {
	for _, line := range []string{deepParams(9999), deepParams(10000)} {
		var got, want envelope
		ok := got.decode([]byte(line))
		assert.Equal(t, json.Unmarshal([]byte(line), &want) == nil, ok)
	}
}

// deepParams is a notification whose params nest n arrays (n+1 levels in
// all: encoding/json refuses more than 10,000).
func deepParams(n int) string {
	return `{"jsonrpc":"2.0","method":"m","params":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
}

// normal makes empty raw members nil, as both readers mean the same by them.
func normal(e envelope) envelope {
	for _, r := range []*json.RawMessage{&e.ID, &e.Params, &e.Result, &e.Error} {
		if len(*r) == 0 {
			*r = nil
		}
	}
	return e
}

func TestFastPathNeverMisclassifies(t *testing.T) {
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"a":1},"id":5}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"a":"}"}}`,
		`{"jsonrpc":"2.0","method":"x\"y","params":{}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"a":1}} `,
		`{"jsonrpc":"2.0","method":"session/update","params":{"a":1},"_meta":{}}`,
	}, "\n") + "\n"
	got := &seen{}
	require.ErrorIs(t, readAll(NewConn(strings.NewReader(input), io.Discard, got.options(0)), nil), io.EOF)
	require.Len(t, got.inbound, 5)
	assert.Equal(t, "5", string(got.inbound[0].ID), "an id after params makes it a request")
	assert.JSONEq(t, `{"a":1}`, string(got.inbound[0].Params))
	assert.JSONEq(t, `{"a":"}"}`, string(got.inbound[1].Params))
	assert.Equal(t, `x"y`, got.inbound[2].Method)
	assert.JSONEq(t, `{"a":1}`, string(got.inbound[3].Params))
	assert.JSONEq(t, `{"a":1}`, string(got.inbound[4].Params))
}

func TestNullErrorBesideResultIsAResult(t *testing.T) {
	call := &answers{}
	c := NewConn(strings.NewReader(`{"jsonrpc":"2.0","id":4,"result":{"ok":1},"error":null}`+"\n"), io.Discard, Options{})
	require.ErrorIs(t, readAll(c, map[uint64]*answers{4: call}), io.EOF)
	assert.Equal(t, []string{`result={"ok":1} error=`}, call.got)
}

// Halt stops reading at the next message: nothing more is handed on.
func TestHaltStopsReading(t *testing.T) {
	got := &seen{}
	opts := got.options(0)
	var c *Conn
	opts.Inbound = func(m Message) {
		got.inbound = append(got.inbound, m)
		c.Halt()
	}
	c = NewConn(strings.NewReader(`{"jsonrpc":"2.0","method":"a"}`+"\n"+`{"jsonrpc":"2.0","method":"b"}`+"\n"), io.Discard, opts)
	require.ErrorIs(t, readAll(c, nil), errHalted)
	assert.Len(t, got.inbound, 1)
}

// WriteBlockedFor measures the write in progress, and only it.
func TestWriteBlockedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, w := io.Pipe()
		c := NewConn(strings.NewReader(""), w, Options{})
		assert.Zero(t, c.WriteBlockedFor(), "no write yet")
		wrote := make(chan error, 1)
		go func() { wrote <- c.Notify("n", nil) }()
		time.Sleep(3 * time.Second) // nobody reads: the write stays blocked
		assert.Equal(t, 3*time.Second, c.WriteBlockedFor())
		_, err := r.Read(make([]byte, 64))
		require.NoError(t, err)
		require.NoError(t, <-wrote)
		assert.Zero(t, c.WriteBlockedFor(), "the write is over")
	})
}

// AbortWrites ends a write blocked on a Messages transport, and every
// later write fails without reaching it.
func TestAbortWritesOnMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newFakeMessages()
		m.blocked = make(chan struct{})
		c := NewMessageConn(m, Options{})
		wrote := make(chan error, 1)
		go func() { wrote <- c.Notify("n", nil) }()
		time.Sleep(time.Second)
		assert.Equal(t, time.Second, c.WriteBlockedFor(), "the write is blocked")
		c.AbortWrites()
		assert.ErrorIs(t, <-wrote, ErrWritesAborted)
		close(m.blocked)
		assert.ErrorIs(t, c.Notify("later", nil), ErrWritesAborted)
		assert.Empty(t, m.written())
	})
}
