package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// read runs ReadObject over input and collects what the hooks saw.
type seen struct {
	inbound  []Message
	skipped  []string
	response []json.RawMessage
}

func newReader(t *testing.T, input string, max int) (*Stream, *seen) {
	t.Helper()
	s := New(strings.NewReader(input), io.Discard, max)
	got := &seen{}
	s.Inbound = func(m Message) { got.inbound = append(got.inbound, m) }
	s.Skipped = func(line []byte) { got.skipped = append(got.skipped, string(line)) }
	s.Response = func(id, _, _ json.RawMessage) bool {
		got.response = append(got.response, bytes.Clone(id))
		return false
	}
	return s, got
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
	s, got := newReader(t, input, 0)
	var v map[string]any
	require.NoError(t, s.ReadObject(&v))
	assert.Equal(t, map[string]any{"id": float64(1), "jsonrpc": "2.0", "result": map[string]any{"ok": true}}, v)
	require.Len(t, got.inbound, 4)
	assert.Equal(t, "session/update", got.inbound[0].Method)
	assert.Nil(t, got.inbound[0].ID, "a notification has no id")
	assert.JSONEq(t, `{"a":1}`, string(got.inbound[0].Params))
	assert.Equal(t, "0", string(got.inbound[1].ID), "id 0 is a real id")
	assert.Equal(t, `"x-1"`, string(got.inbound[2].ID))
	assert.Equal(t, "7", string(got.inbound[3].ID), "key order does not matter")
	assert.Equal(t, []string{"Starting agent v1.2...", "\x1b[32mready\x1b[0m", `{"level":"info","id":1,"result":{}}`, `[1,2]`}, got.skipped,
		"a non-JSON-RPC object with an id must never resolve a call")
	assert.Equal(t, []json.RawMessage{json.RawMessage("1")}, got.response)
	assert.ErrorIs(t, s.ReadObject(&v), io.EOF)
}

func TestLineOverLimitIsFatal(t *testing.T) {
	huge := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", 300<<10) + `"}`
	s, _ := newReader(t, huge+"\n", 200<<10)
	var v any
	err := s.ReadObject(&v)
	require.ErrorIs(t, err, ErrLineTooLong)
	var le *LineError
	require.True(t, errors.As(err, &le))
	assert.Equal(t, 200<<10, le.Limit)
	assert.ErrorIs(t, s.ReadErr(), ErrLineTooLong)
}

func TestLongLineUnderLimitIsRead(t *testing.T) {
	text := strings.Repeat("b", 1<<20)
	line := `{"jsonrpc":"2.0","method":"x","params":"` + text + `"}`
	s, got := newReader(t, line+"\n"+`{"jsonrpc":"2.0","id":2,"result":null}`+"\n", 0)
	var v any
	require.NoError(t, s.ReadObject(&v))
	require.Len(t, got.inbound, 1)
	assert.Equal(t, `"`+text+`"`, string(got.inbound[0].Params))
}

func TestLastLineWithoutNewline(t *testing.T) {
	s, _ := newReader(t, `{"jsonrpc":"2.0","id":3,"result":{}}`, 0)
	var v any
	require.NoError(t, s.ReadObject(&v))
}

func TestWriteOneLinePerMessage(t *testing.T) {
	var buf bytes.Buffer
	s := New(strings.NewReader(""), &buf, 0)
	require.NoError(t, s.WriteObject(map[string]any{"text": "a\nb", "raw": json.RawMessage("{\n \"x\": 1\n}")}))
	require.NoError(t, s.Reply(json.RawMessage(`"id-9"`), map[string]string{"k": "v"}, nil))
	require.NoError(t, s.Reply(json.RawMessage(`0`), nil, &Error{Code: -32601, Message: "nope"}))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.JSONEq(t, `{"text":"a\nb","raw":{"x":1}}`, lines[0])
	assert.Equal(t, `{"jsonrpc":"2.0","id":"id-9","result":{"k":"v"}}`, lines[1])
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"nope"}}`, lines[2])
}

func FuzzReadObject(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{}}` + "\njunk\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := New(bytes.NewReader(data), io.Discard, 1<<16)
		s.Inbound = func(m Message) {
			if m.Method == "" {
				t.Fatal("inbound message without method")
			}
		}
		for i := 0; i < 100; i++ {
			var v any
			if s.ReadObject(&v) != nil {
				return
			}
		}
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
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	}, "\n") + "\n"
	s, got := newReader(t, input, 0)
	var v any
	require.NoError(t, s.ReadObject(&v))
	require.Len(t, got.inbound, 5)
	assert.Equal(t, "5", string(got.inbound[0].ID), "an id after params makes it a request")
	assert.JSONEq(t, `{"a":1}`, string(got.inbound[0].Params))
	assert.JSONEq(t, `{"a":"}"}`, string(got.inbound[1].Params))
	assert.Equal(t, `x"y`, got.inbound[2].Method)
	assert.JSONEq(t, `{"a":1}`, string(got.inbound[3].Params))
	assert.JSONEq(t, `{"a":1}`, string(got.inbound[4].Params))
}

func TestNullErrorBesideResultIsAResult(t *testing.T) {
	s := New(strings.NewReader(`{"jsonrpc":"2.0","id":4,"result":{"ok":1},"error":null}`+"\n"), io.Discard, 0)
	var gotErr json.RawMessage = json.RawMessage("unset")
	s.Response = func(_, _, rpcErr json.RawMessage) bool { gotErr = bytes.Clone(rpcErr); return true }
	var v any
	assert.ErrorIs(t, s.ReadObject(&v), io.EOF)
	assert.Nil(t, gotErr)
}

// WriteBlockedFor measures the write in progress, and only it.
func TestWriteBlockedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, w := io.Pipe()
		s := New(strings.NewReader(""), w, 0)
		assert.Zero(t, s.WriteBlockedFor(), "no write yet")
		wrote := make(chan error, 1)
		go func() { wrote <- s.WriteLine([]byte(`{}`)) }()
		time.Sleep(3 * time.Second) // nobody reads: the write stays blocked
		assert.Equal(t, 3*time.Second, s.WriteBlockedFor())
		_, err := r.Read(make([]byte, 8))
		require.NoError(t, err)
		require.NoError(t, <-wrote)
		assert.Zero(t, s.WriteBlockedFor(), "the write is over")
	})
}
