// Package bench holds go test benchmarks of acphost's per-update path,
// next to the same work done by the Go SDK and by a raw client ("the
// limit"). Clients run in-process over io.Pipe against the flood agent, so
// allocation counts include the agent's, which are ~0 per update (it writes
// one pre-encoded line per chunk).
//
//	go test -run '^$' -bench . -benchmem
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/bench/clients"
	"github.com/acphost/acphost/bench/flood"
)

// chunkLine is one agent_message_chunk line as the flood agent writes it.
var chunkLine = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"flood-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_"}}}}`)

// escapedParams is the params of a chunk whose text has escapes.
var escapedParams = []byte(`{"sessionId":"flood-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"abcdefghijklmnop\"rstuvwxyz012345\tABCDEFGHIJKLMNOPQRSTUVWXYZ-\n"}}}`)

func chunkParams(tb testing.TB) json.RawMessage {
	var env clients.Envelope
	if !env.Read(chunkLine) {
		tb.Fatal("chunk line not read")
	}
	return env.Params
}

// stdEnvelope is the JSON-RPC frame for encoding/json (the old, loose
// limit's).
type stdEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// BenchmarkDecodeUpdateChunk is acphost.DecodeUpdate of one
// agent_message_chunk's params.
func BenchmarkDecodeUpdateChunk(b *testing.B) {
	params := chunkParams(b)
	b.ReportAllocs()
	for b.Loop() {
		u := acp.DecodeUpdate(params)
		if u.Kind() != acp.KindAgentMessageChunk {
			b.Fatal(u.Kind())
		}
	}
}

// BenchmarkDecodeUpdateChunkEscaped is DecodeUpdate of a chunk whose text
// has escapes (\n \t \").
func BenchmarkDecodeUpdateChunkEscaped(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		u := acp.DecodeUpdate(escapedParams)
		if u.Kind() != acp.KindAgentMessageChunk {
			b.Fatal(u.Kind())
		}
	}
}

// BenchmarkEnvelope is one json.Unmarshal of the line into a fresh
// envelope: the old, loose limit's whole per-update work.
func BenchmarkEnvelope(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var env stdEnvelope
		if err := json.Unmarshal(chunkLine, &env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibLimitLine is the limit's per-update work done with
// encoding/json as tightly as it goes: the envelope into a reused struct
// of json.RawMessage (their buffers reused), the typed update into a
// reused struct, the text kept. It is why the limit reads JSON with
// acphost's reader instead.
func BenchmarkStdlibLimitLine(b *testing.B) {
	var env struct {
		JSONRPC, ID, Method, Params, Result, Error json.RawMessage
	}
	var u struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string `json:"sessionUpdate"`
			Content       struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			ToolCallID string `json:"toolCallId"`
			Status     string `json:"status"`
		} `json:"update"`
	}
	var text strings.Builder
	b.ReportAllocs()
	for b.Loop() {
		env.ID, env.Method, env.Params = env.ID[:0], env.Method[:0], env.Params[:0]
		if err := json.Unmarshal(chunkLine, &env); err != nil {
			b.Fatal(err)
		}
		if string(env.Method) != `"session/update"` {
			b.Fatal(string(env.Method))
		}
		u.Update.Content.Text = ""
		if err := json.Unmarshal(env.Params, &u); err != nil {
			b.Fatal(err)
		}
		text.WriteString(u.Update.Content.Text)
	}
}

// BenchmarkLimitLine is the limit's whole per-update work: the envelope
// and the typed update read in place, the text kept (its builder's growth
// amortized over b.N chunks).
func BenchmarkLimitLine(b *testing.B) {
	line := clients.LimitLine("flood-1")
	b.ReportAllocs()
	for b.Loop() {
		if n, err := line(chunkLine); err != nil || n == 0 {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkEnvelopeThenDecodeUpdate is the decoding acphost does per
// update: the envelope (internal/wire), then DecodeUpdate (dispatcher).
func BenchmarkEnvelopeThenDecodeUpdate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var env stdEnvelope
		if err := json.Unmarshal(chunkLine, &env); err != nil {
			b.Fatal(err)
		}
		_ = acp.DecodeUpdate(env.Params)
	}
}

// BenchmarkSDKDecodeChunk is the SDK's per-update decoding: its envelope,
// then the SessionNotification union.
func BenchmarkSDKDecodeChunk(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var env struct {
			JSONRPC string           `json:"jsonrpc"`
			ID      *json.RawMessage `json:"id,omitempty"`
			Method  string           `json:"method,omitempty"`
			Params  json.RawMessage  `json:"params,omitempty"`
			Result  json.RawMessage  `json:"result,omitempty"`
			Error   *sdk.RequestError
		}
		if err := json.Unmarshal(chunkLine, &env); err != nil {
			b.Fatal(err)
		}
		var n sdk.SessionNotification
		if err := json.Unmarshal(env.Params, &n); err != nil {
			b.Fatal(err)
		}
	}
}

// inProcess starts the flood agent on pipes and connects the named client.
func inProcess(tb testing.TB, name string) clients.Client {
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = flood.Serve(c2aR, a2cW, flood.DefaultConfig())
		a2cW.Close()
	}()
	closer := closerFunc(func() error {
		c2aW.Close()
		<-served
		a2cR.Close()
		return nil
	})
	c, err := clients.Connect(context.Background(), name, a2cR, c2aW, closer, clients.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// BenchmarkBurst streams b.N updates in turns of 1,000 chunks (small
// enough for the SDK's 1,024-slot queue) through each client; one op is
// one delivered update.
func BenchmarkBurst(b *testing.B) {
	benchBurst(b, "")
}

// BenchmarkBurstEscaped is BenchmarkBurst with a newline, a tab and a
// quote in every chunk's text.
func BenchmarkBurstEscaped(b *testing.B) {
	benchBurst(b, "escape=1")
}

// BenchmarkBurstParamsFirst is BenchmarkBurst with the envelope's keys in
// another order: {"params":…,"method":…,"jsonrpc":"2.0"}.
func BenchmarkBurstParamsFirst(b *testing.B) {
	benchBurst(b, "layout=params-first")
}

func benchBurst(b *testing.B, extra string) {
	for _, name := range clients.Names {
		b.Run(name, func(b *testing.B) {
			c := inProcess(b, name)
			if _, err := c.Turn(context.Background(), "n=100"); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for left := b.N; left > 0; {
				n := min(left, 1000)
				res, err := c.Turn(context.Background(), fmt.Sprintf("n=%d %s", n, extra))
				if err != nil {
					b.Fatal(err)
				}
				if res.Updates != int64(n) {
					b.Fatalf("%d updates, want %d", res.Updates, n)
				}
				left -= n
			}
		})
	}
}

// BenchmarkTrivialTurn is one prompt answered at once; one op is one turn.
func BenchmarkTrivialTurn(b *testing.B) {
	benchTurns(b, "n=0")
}

// BenchmarkPermissionTurn is one prompt with one permission request and a
// completed tool call update; one op is one turn.
func BenchmarkPermissionTurn(b *testing.B) {
	benchTurns(b, "n=0 perm=1")
}

func benchTurns(b *testing.B, prompt string) {
	for _, name := range clients.Names {
		b.Run(name, func(b *testing.B) {
			c := inProcess(b, name)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Turn(context.Background(), prompt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFloodAgentInProcess checks the three clients against the in-process
// agent: chunk counts, permission answers and cancellation.
func TestFloodAgentInProcess(t *testing.T) {
	for _, name := range clients.Names {
		t.Run(name, func(t *testing.T) {
			c := inProcess(t, name)
			res, err := c.Turn(context.Background(), "n=500 perm=1")
			if err != nil {
				t.Fatal(err)
			}
			if res.Updates != 501 || res.StopReason != "end_turn" {
				t.Fatalf("updates %d, stop %q", res.Updates, res.StopReason)
			}
			if !res.HasMeta || res.Meta.Sent != 500 || res.Meta.PermRTTNanos <= 0 {
				t.Fatalf("meta %+v (has %v)", res.Meta, res.HasMeta)
			}
			if name != clients.SDK && len(res.Text) != 500*64 {
				t.Fatalf("text of %d bytes, want %d", len(res.Text), 500*64)
			}
			// Cancel a turn that streams until cancelled.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := c.Turn(ctx, "forever=1 interval=1ms")
				done <- err
			}()
			time.Sleep(20 * time.Millisecond)
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled turn: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("cancelled turn did not return")
			}
			// The client still works (the SDK may see the cancelled turn's
			// answer late; it drops it).
			if name == clients.SDK {
				time.Sleep(50 * time.Millisecond)
			}
			res, err = c.Turn(context.Background(), "n=10")
			if err != nil || res.StopReason != "end_turn" {
				t.Fatalf("turn after cancel: %+v %v", res, err)
			}
		})
	}
}

func TestMain(m *testing.M) {
	// The SDK logs connection diagnostics to slog.Default.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}
