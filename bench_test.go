package acphost_test

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/wire"
)

var chunkParams = json.RawMessage(`{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"0123456789012345678901234567890123456789012345678901234567890123"}}}`)

// BenchmarkDecodeUpdate measures the typed decode of one message chunk.
func BenchmarkDecodeUpdate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = acp.DecodeUpdate(chunkParams)
	}
}

// BenchmarkReadEnvelope measures the framing: one update line read,
// classified and handed to the router.
func BenchmarkReadEnvelope(b *testing.B) {
	line := append([]byte(`{"jsonrpc":"2.0","method":"session/update","params":`), chunkParams...)
	line = append(line, "}\n"...)
	n := 0
	c := wire.NewConn(&repeatReader{line: line, left: b.N}, io.Discard, wire.Options{Inbound: func(wire.Message) { n++ }})
	b.ReportAllocs()
	b.ResetTimer()
	c.Start()
	<-c.Done()
	if n != b.N {
		b.Fatalf("routed %d lines, want %d", n, b.N)
	}
}

// repeatReader yields line left times, then io.EOF.
type repeatReader struct {
	line []byte
	left int
	pos  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.line[r.pos:])
	r.pos += n
	if r.pos == len(r.line) {
		r.pos = 0
		r.left--
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
	c, _ := benchConnect(b, script, acphost.ACPOptions{OnUpdate: func(acp.Update) { delivered++ }})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Generate(acphost.Request{Prompt: "x"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/update")
}

func benchConnect(b *testing.B, script fakeagent.Script, opts acphost.ACPOptions) (*acphost.ACPClient, *acphost.PipeAgent) {
	c, pa, err := acphost.TryConnectFake(b, script, opts)
	if err != nil {
		b.Fatal(err)
	}
	return c, pa
}
