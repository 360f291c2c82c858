package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// With an OTLP endpoint in the environment, a run's turn arrives there as
// spans (and its metrics, flushed at exit); the bodies are OTLP protobuf,
// whose strings are plain bytes: the span names are found in them.
func TestTelemetryExportedToTheOTLPEndpoint(t *testing.T) {
	var mu sync.Mutex
	bodies := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies[r.URL.Path] = append(bodies[r.URL.Path], b...)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	extra := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_EXPORTER_OTLP_COMPRESSION=none",
		"OTEL_SDK_DISABLED=", "OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER=", "OTEL_EXPORTER_OTLP_PROTOCOL="}
	r := runIn(t, t.TempDir(), extra, nil, "", "--no-store", "--permission", "allow", "-p", "hello")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	traces := bodies["/v1/traces"]
	for _, name := range []string{"invoke_agent fakeagent", "execute_tool execute", "acphost.permission", "gen_ai.conversation.id", "acphost"} {
		if !bytes.Contains(traces, []byte(name)) {
			t.Errorf("the exported spans lack %q (%d bytes of /v1/traces)", name, len(traces))
		}
	}
	if !bytes.Contains(bodies["/v1/metrics"], []byte("gen_ai.client.operation.duration")) {
		t.Errorf("the turn's latency was not exported at exit (%d bytes of /v1/metrics)", len(bodies["/v1/metrics"]))
	}
	if strings.Contains(r.stderr, "telemetry") {
		t.Errorf("stderr speaks of telemetry: %s", r.stderr)
	}
}

// An OTLP protocol acphost does not export is said once, and the run goes on.
func TestTelemetryUnsupportedProtocolSaid(t *testing.T) {
	extra := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_SDK_DISABLED=", "OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER="}
	r := runIn(t, t.TempDir(), extra, nil, "", "--no-store", "--permission", "allow", "-p", "hello")
	if r.code != 0 || strings.Count(r.stderr, "telemetry is not exported") != 1 || !strings.Contains(r.stderr, "http/protobuf") {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
}
