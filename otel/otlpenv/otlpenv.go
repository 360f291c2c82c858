// Package otlpenv builds OpenTelemetry providers from the standard OTEL_*
// environment, exporting over OTLP (HTTP/protobuf): what the acphost
// command uses, for programs that want the same.
//
// Export is on only when an endpoint is given: OTEL_EXPORTER_OTLP_ENDPOINT
// for both signals, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT for one. OTEL_SDK_DISABLED=true,
// OTEL_TRACES_EXPORTER=none and OTEL_METRICS_EXPORTER=none turn it off.
// Everything else is the SDK's and the exporters' own reading of the
// environment: headers, timeout, compression, certificates
// (OTEL_EXPORTER_OTLP_*), the sampler (OTEL_TRACES_SAMPLER), the batch and
// the export interval (OTEL_BSP_*, OTEL_METRIC_EXPORT_INTERVAL), the
// service and resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
package otlpenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ErrProtocol reports an OTEL_EXPORTER_OTLP_PROTOCOL other than
// http/protobuf (grpc, http/json), which this package does not export.
var ErrProtocol = errors.New("otlpenv: only the http/protobuf OTLP protocol is exported")

// Providers are the providers the environment asked for. A signal not
// exported has a nil provider.
type Providers struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider

	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
}

// New returns the providers the environment asks for, named service
// (and version) unless OTEL_SERVICE_NAME says otherwise; nil, with
// nothing started, when it asks for none. Each exporting provider runs
// a goroutine until Shutdown.
func New(ctx context.Context, service, version string) (*Providers, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	traces, metrics := wants("TRACES"), wants("METRICS")
	if !traces && !metrics {
		return nil, nil
	}
	for sig, on := range map[string]bool{"TRACES": traces, "METRICS": metrics} {
		if p := protocol(sig); on && p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%w, not %s (OTEL_EXPORTER_OTLP_PROTOCOL)", ErrProtocol, p)
		}
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, err
	}
	p := &Providers{}
	if traces {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, err
		}
		p.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		p.TracerProvider = p.tp
	}
	if metrics {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			p.Shutdown(ctx)
			return nil, err
		}
		p.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		p.MeterProvider = p.mp
	}
	return p, nil
}

// Shutdown exports what is left and stops the providers' goroutines,
// within ctx. Safe on nil.
func (p *Providers) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.tp != nil {
		errs = append(errs, p.tp.Shutdown(ctx))
	}
	if p.mp != nil {
		errs = append(errs, p.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// wants reports whether signal ("TRACES", "METRICS") is to be exported:
// an endpoint is set for it, and its exporter is not "none".
func wants(signal string) bool {
	if e := strings.TrimSpace(os.Getenv("OTEL_" + signal + "_EXPORTER")); e != "" && e != "otlp" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// protocol is signal's OTLP protocol as the environment sets it.
func protocol(signal string) string {
	if p := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"); p != "" {
		return strings.TrimSpace(p)
	}
	return strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
}
