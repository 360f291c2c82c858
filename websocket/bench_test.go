package websocket

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	ws "github.com/coder/websocket"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// chunkFrame is one agent_message_chunk, as the benchmark's agent sends it.
var chunkFrame = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_"}}}}`)

// wsAgent is an ACP agent in-process behind a WebSocket: it answers
// initialize and session/new, and each session/prompt with what prompt
// sends through send (frames as they are), then end_turn. It allocates
// next to nothing per frame of its own.
func wsAgent(prompt func(send func([]byte) error) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, err := ws.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(-1)
		ctx := context.Background() // a ctx that cannot end costs the library nothing per frame; CloseNow ends the reads
		send := func(b []byte) error { return conn.Write(ctx, ws.MessageText, b) }
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(data, &m) != nil || len(m.ID) == 0 {
				continue
			}
			var result string
			switch m.Method {
			case "initialize":
				result = `{"protocolVersion":1,"agentCapabilities":{},"authMethods":[],"agentInfo":{"name":"wsagent","version":"0"}}`
			case "session/new":
				result = `{"sessionId":"s1"}`
			case "session/prompt":
				if prompt(send) != nil {
					return
				}
				result = `{"stopReason":"end_turn"}`
			default:
				result = `{}`
			}
			if send([]byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`)) != nil {
				return
			}
		}
	}
}

// benchAgent answers each prompt with n chunks, each encoded once.
func benchAgent(n int) http.HandlerFunc {
	return wsAgent(func(send func([]byte) error) error {
		for range n {
			if err := send(chunkFrame); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkLinkUpdates streams turns of 1,000 message chunks from an agent
// behind a WebSocket to a client over Transport: the per-update figures
// are the client's whole path (the link, the framing, the envelope, the
// queue, the typed decode, OnUpdate) plus the in-process agent's frame
// writes, which are the same whatever the client does.
func BenchmarkLinkUpdates(b *testing.B) {
	const n = 1000
	srv := httptest.NewServer(benchAgent(n))
	defer srv.Close()
	delivered := 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := acphost.Start(ctx, acphost.ACPOptions{
		Transport: &Transport{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), PingInterval: -1},
		Dir:       b.TempDir(),
		OnUpdate:  func(acp.Update) { delivered++ },
	})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Generate(acphost.Request{Prompt: "x"}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	updates := float64(b.N * n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/updates, "ns/update")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/updates, "allocs/update")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/updates, "B/update")
	if delivered < b.N*n {
		b.Fatalf("delivered %d updates, want %d", delivered, b.N*n)
	}
}
