package otlpenv_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/acphost/acphost/internal/testutil"
	"github.com/acphost/acphost/otel/otlpenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// receiver is an OTLP/HTTP endpoint that counts what arrives by path.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	paths map[string]int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{paths: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.paths[req.URL.Path]++
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paths[path]
}

func TestNothingWithoutAnEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "")
	before := runtime.NumGoroutine()
	p, err := otlpenv.New(context.Background(), "acphost", "test")
	require.NoError(t, err)
	assert.Nil(t, p, "no endpoint: no providers")
	assert.Equal(t, before, runtime.NumGoroutine(), "and no goroutine")
	assert.NoError(t, p.Shutdown(context.Background()))
}

func TestDisabledAndNoneAndGRPC(t *testing.T) {
	r := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL)
	t.Setenv("OTEL_SDK_DISABLED", "true")
	p, err := otlpenv.New(context.Background(), "acphost", "test")
	require.NoError(t, err)
	assert.Nil(t, p)
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	p, err = otlpenv.New(context.Background(), "acphost", "test")
	require.NoError(t, err)
	assert.Nil(t, p)
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	_, err = otlpenv.New(context.Background(), "acphost", "test")
	assert.ErrorIs(t, err, otlpenv.ErrProtocol)
}

func TestExportsToTheEndpointAndShutsDown(t *testing.T) {
	r := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL)
	before := runtime.NumGoroutine()
	p, err := otlpenv.New(context.Background(), "acphost", "test")
	require.NoError(t, err)
	require.NotNil(t, p)
	_, span := p.TracerProvider.Tracer("t").Start(context.Background(), "s")
	span.End()
	c, err := p.MeterProvider.Meter("t").Int64Counter("c")
	require.NoError(t, err)
	c.Add(context.Background(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Shutdown(ctx))
	assert.Equal(t, 1, r.count("/v1/traces"), "the span is flushed at shutdown")
	assert.Equal(t, 1, r.count("/v1/metrics"))
	r.CloseClientConnections()
	assert.True(t, testutil.GoroutinesBackTo(before), "no goroutine outlives Shutdown")
}
