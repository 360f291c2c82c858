package acphost

import (
	"encoding/json"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/wire"
)

var chunkParams = json.RawMessage(`{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"0123456789012345678901234567890123456789012345678901234567890123"}}}`)

// BenchmarkDecodeUpdate measures the typed decode of one message chunk.
func BenchmarkDecodeUpdate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = DecodeUpdate(chunkParams)
	}
}

// BenchmarkReadEnvelope measures the framing: one line read and classified.
func BenchmarkReadEnvelope(b *testing.B) {
	line := append([]byte(`{"jsonrpc":"2.0","method":"session/update","params":`), chunkParams...)
	line = append(line, "}\n"...)
	r := &repeatReader{line: line}
	s := wire.New(r, nil, 0)
	s.Inbound = func(wire.Message) {}
	done := false
	s.Response = func(_, _, _ json.RawMessage) bool { done = true; return false }
	b.ReportAllocs()
	for b.Loop() {
		r.left = 1
		var v any
		_ = s.ReadObject(&v)
	}
	_ = done
}

type repeatReader struct {
	line []byte
	left int
	pos  int
}

// Read yields the line left times, then one response line.
func (r *repeatReader) Read(p []byte) (int, error) {
	src := r.line
	if r.left == 0 {
		src = []byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
	}
	n := copy(p, src[r.pos:])
	r.pos += n
	if r.pos == len(src) {
		r.pos = 0
		if r.left > 0 {
			r.left--
		} else {
			r.left = -1
		}
	}
	return n, nil
}

// BenchmarkTurnUpdates runs turns of 10,000 message chunks through a client
// connected to an in-process fake agent: the whole per-update path (read,
// classify, queue, decode, deliver, accumulate).
func BenchmarkTurnUpdates(b *testing.B) {
	const n = 10000
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Updates: n}}}}}
	var delivered int
	c, _ := benchConnect(b, script, ACPOptions{OnUpdate: func(Update) { delivered++ }})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Generate(Request{Prompt: "x"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/update")
}

func benchConnect(b *testing.B, script fakeagent.Script, opts ACPOptions) (*ACPClient, *pipeAgent) {
	c, pa, err := tryConnectFake(b, script, opts)
	if err != nil {
		b.Fatal(err)
	}
	return c, pa
}
