package otelacphost_test

import (
	"context"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	otelacphost "github.com/acphost/acphost/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// providers are the two cases measured: OpenTelemetry's no-op providers
// (a program that instruments but exports nothing) and the SDK, sampling
// every span, with a reader collecting metrics.
func providers(b *testing.B, kind string) otelacphost.Options {
	if kind == "noop" {
		return otelacphost.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	return otelacphost.Options{TracerProvider: tp, MeterProvider: mp}
}

// BenchmarkPerUpdate is what telemetry adds to one delivered update: the
// chained OnUpdate (the count) and the turn's Event, for a text chunk and
// for a tool call's update (neither starts a span: a tool call's first
// sighting does, once per call).
func BenchmarkPerUpdate(b *testing.B) {
	for _, kind := range []string{"noop", "sdk"} {
		b.Run(kind, func(b *testing.B) {
			tel, err := otelacphost.New(providers(b, kind))
			if err != nil {
				b.Fatal(err)
			}
			c, _ := connect(b, tel, fakeagent.Demo(), acphost.ACPOptions{})
			b.Cleanup(func() { c.Close() })
			var opts acphost.ACPOptions
			tel.Instrument(&opts)
			w := opts.Debug.OnTurn(context.Background(), acphost.TurnInfo{Session: c.Session(), Agent: c.AgentInfo()})
			defer w.End(acphost.Response{}, nil)
			chunk := acp.DecodeUpdate([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}`))
			tool := acp.DecodeUpdate([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"in_progress"}}`))
			for _, u := range []struct {
				name string
				u    acp.Update
				ev   acphost.StreamEvent
			}{
				{"text", chunk, acphost.StreamEvent{Type: acphost.EventText, Delta: "x", Update: chunk}},
				{"tool_update", tool, acphost.StreamEvent{Type: acphost.EventToolUpdate, ID: "t1", Status: acp.StatusInProgress, Update: tool}},
			} {
				b.Run(u.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						opts.OnUpdate(u.u)
						w.Event(u.ev)
					}
				})
			}
		})
	}
}

// BenchmarkTurn is a whole turn of 1000 text updates over the in-process
// fake agent, bare and instrumented.
func BenchmarkTurn(b *testing.B) {
	for _, kind := range []string{"bare", "noop", "sdk"} {
		b.Run(kind, func(b *testing.B) {
			script := fakeagent.Script{}
			for range b.N + 1 {
				script.Turns = append(script.Turns, fakeagent.Turn{Steps: []fakeagent.Step{{Updates: 1000}}})
			}
			var c *acphost.ACPClient
			if kind == "bare" {
				c, _ = connect(b, nil, script, acphost.ACPOptions{})
			} else {
				tel, err := otelacphost.New(providers(b, kind))
				if err != nil {
					b.Fatal(err)
				}
				c, _ = connect(b, tel, script, acphost.ACPOptions{})
			}
			b.Cleanup(func() { c.Close() })
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.GenerateCtx(context.Background(), acphost.Request{Prompt: "x", Discard: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
