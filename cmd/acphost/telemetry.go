package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/acphost/acphost"
	otelacphost "github.com/acphost/acphost/otel"
	"github.com/acphost/acphost/otel/otlpenv"
)

// shutdownBound bounds the flush of what telemetry still holds at exit:
// a collector that does not answer delays the exit by this much at most.
const shutdownBound = 5 * time.Second

// telemetry is a run's OpenTelemetry export, when the OTEL_* environment
// asks for it (an OTLP endpoint; see otlpenv); nil otherwise, which
// starts nothing and costs nothing. Its methods are safe on nil.
type telemetry struct {
	tel       *otelacphost.Telemetry
	providers *otlpenv.Providers
}

// startTelemetry starts the export the environment asks for, telling
// warn why not when it asks for one it cannot have. decision names who
// decided a permission, where the run knows (nil: the answer's reason).
func startTelemetry(warn func(error), decision func(string, *acphost.PermissionAnswer) (string, string, bool)) *telemetry {
	p, err := otlpenv.New(context.Background(), "acphost", acphost.Version)
	if err != nil {
		warn(fmt.Errorf("telemetry is not exported: %w", err))
		return nil
	}
	if p == nil {
		return nil
	}
	tel, err := otelacphost.New(otelacphost.Options{TracerProvider: p.TracerProvider, MeterProvider: p.MeterProvider, Decision: decision})
	if err != nil {
		p.Shutdown(context.Background())
		warn(fmt.Errorf("telemetry is not exported: %w", err))
		return nil
	}
	return &telemetry{tel: tel, providers: p}
}

// instrument makes opts report to the export.
func (t *telemetry) instrument(opts *acphost.ACPOptions) {
	if t != nil {
		t.tel.Instrument(opts)
	}
}

// observe reports c's sessions and queue until the returned func is called.
func (t *telemetry) observe(c *acphost.ACPClient) func() {
	if t == nil || c == nil {
		return func() {}
	}
	return t.tel.Observe(c)
}

// shutdown flushes what is left, within shutdownBound.
func (t *telemetry) shutdown() {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	t.providers.Shutdown(ctx)
}

// warnTo is a startTelemetry warning on w, for a command's name.
func warnTo(w io.Writer, name string) func(error) {
	return func(err error) { fmt.Fprintf(w, "%s: %v\n", name, err) }
}
