package otelacphost

import (
	"context"
	"os"
	"strings"
	"sync"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Telemetry. The zero value uses the global
// providers (otel.GetTracerProvider, otel.GetMeterProvider), which do
// nothing until a program sets them.
type Options struct {
	// TracerProvider makes the spans. Nil: otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics. Nil: otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Decision, if set, names who decided a permission request and by
	// which rule, where the host knows more than the answer's Reason
	// (acphost.AnswerReason): a policy file's rule, a person. It is
	// called on the dispatcher goroutine as the answer is shown and must
	// not block; by and rule become acphost.answered_by (instead of the
	// Reason) and acphost.permission.rule. Nil: the Reason only.
	Decision func(toolCallID string, ans *acphost.PermissionAnswer) (by, rule string, ok bool)
}

// Telemetry makes spans and metrics of acphost clients. One serves any
// number of clients; its methods are safe for concurrent use.
type Telemetry struct {
	tracer   trace.Tracer
	decision func(string, *acphost.PermissionAnswer) (string, string, bool)

	turnDuration metric.Float64Histogram
	tokenUsage   metric.Int64Histogram
	updates      metric.Int64Counter
	pendingAsks  metric.Int64UpDownCounter
	activeTurns  metric.Int64UpDownCounter
	restarts     metric.Int64Counter

	// Per-update options, made once: the update path allocates nothing.
	updateOpts map[acp.UpdateKind][]metric.AddOption
	otherOpt   []metric.AddOption
	askOpts    [2][]metric.AddOption // permission, elicitation

	mu      sync.Mutex
	clients map[*acphost.ACPClient]struct{}
}

// The kinds of update counted by name; any other is "other".
var updateKinds = []acp.UpdateKind{acp.KindUserMessageChunk, acp.KindAgentMessageChunk, acp.KindAgentThoughtChunk,
	acp.KindToolCall, acp.KindToolCallUpdate, acp.KindPlan, acp.KindAvailableCommandsUpdate, acp.KindCurrentModeUpdate,
	acp.KindConfigOptionUpdate, acp.KindSessionInfoUpdate, acp.KindUsageUpdate, acp.KindNotice,
	acp.KindCompactionUpdate, acp.KindCompactionSummaryChunk}

// New makes a Telemetry and its instruments.
func New(o Options) (*Telemetry, error) {
	tp, mp := o.TracerProvider, o.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	t := &Telemetry{tracer: tp.Tracer(scopeName, trace.WithInstrumentationVersion(acphost.Version)),
		decision: o.Decision, clients: map[*acphost.ACPClient]struct{}{}}
	m := mp.Meter(scopeName, metric.WithInstrumentationVersion(acphost.Version))
	var err error
	if t.turnDuration, err = m.Float64Histogram(metricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("How long a turn took, from its call to its Response."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84, 327.68, 655.36)); err != nil {
		return nil, err
	}
	if t.tokenUsage, err = m.Int64Histogram(metricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("The tokens a turn used, where the agent reports them.")); err != nil {
		return nil, err
	}
	if t.updates, err = m.Int64Counter(metricUpdates, metric.WithUnit("{update}"),
		metric.WithDescription("The session/update notifications delivered (their rate: updates per second).")); err != nil {
		return nil, err
	}
	if t.pendingAsks, err = m.Int64UpDownCounter(metricPendingAsks, metric.WithUnit("{request}"),
		metric.WithDescription("The permission and elicitation requests of running turns awaiting their answer.")); err != nil {
		return nil, err
	}
	if t.activeTurns, err = m.Int64UpDownCounter(metricActiveTurns, metric.WithUnit("{turn}"),
		metric.WithDescription("The turns running, or waiting for their session.")); err != nil {
		return nil, err
	}
	if t.restarts, err = m.Int64Counter(metricRestarts, metric.WithUnit("{restart}"),
		metric.WithDescription("The agent restarts reported to turns.")); err != nil {
		return nil, err
	}
	sessions, err := m.Int64ObservableGauge(metricActiveSessions, metric.WithUnit("{session}"),
		metric.WithDescription("The open sessions of the observed clients."))
	if err != nil {
		return nil, err
	}
	queued, err := m.Int64ObservableGauge(metricQueued, metric.WithUnit("{message}"),
		metric.WithDescription("What the observed clients read from their agents and have not yet delivered."))
	if err != nil {
		return nil, err
	}
	if _, err = m.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		var s, q int64
		t.mu.Lock()
		for c := range t.clients {
			st := c.Stats()
			s += int64(st.Sessions)
			q += int64(st.Queued)
		}
		t.mu.Unlock()
		ob.ObserveInt64(sessions, s)
		ob.ObserveInt64(queued, q)
		return nil
	}, sessions, queued); err != nil {
		return nil, err
	}
	t.updateOpts = make(map[acp.UpdateKind][]metric.AddOption, len(updateKinds))
	for _, k := range updateKinds {
		t.updateOpts[k] = addOption(keyUpdateKind.String(string(k)))
	}
	t.otherOpt = addOption(keyUpdateKind.String("other"))
	t.askOpts[0] = addOption(keyAskKind.String("permission"))
	t.askOpts[1] = addOption(keyAskKind.String("elicitation"))
	return t, nil
}

// Instrument makes opts report to t: it chains OnUpdate (the host's own
// runs first, then the count) and Debug.OnTurn (the host's own, if any,
// is called first, and its watch runs before t's), and gives a local
// agent started with Process.CleanEnv the host's OTEL_* variables (an
// agent started without it inherits them anyway), so that an agent
// that exports telemetry itself sends it where the host does. Call it
// before Start (or NewPool, on PoolOptions.Agent), once per options.
func (t *Telemetry) Instrument(opts *acphost.ACPOptions) {
	user := opts.OnUpdate
	opts.OnUpdate = func(u acp.Update) {
		if user != nil {
			user(u)
		}
		t.countUpdate(u)
	}
	prev := opts.Debug.OnTurn
	opts.Debug.OnTurn = func(ctx context.Context, ti acphost.TurnInfo) acphost.TurnWatch {
		var pw acphost.TurnWatch
		if prev != nil {
			pw = prev(ctx, ti)
		}
		return chain(pw, t.beginTurn(ctx, ti))
	}
	if opts.Transport == nil && opts.Process.CleanEnv {
		opts.Process.Env = append(opts.Process.Env, otelEnv(os.Environ())...)
	}
}

// countUpdate counts one delivered update by its kind.
func (t *Telemetry) countUpdate(u acp.Update) {
	opt, ok := t.updateOpts[u.Kind()]
	if !ok {
		opt = t.otherOpt
	}
	t.updates.Add(context.Background(), 1, opt...)
}

// addOption is the options of an Add with one attribute, made once (a
// variadic call with a fresh option allocates its slice each time).
func addOption(kv attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv))}
}

// Observe has t report c's open sessions and queue (ACPClient.Stats)
// until the returned func is called (or c is closed: it then counts 0).
func (t *Telemetry) Observe(c *acphost.ACPClient) (stop func()) {
	t.mu.Lock()
	t.clients[c] = struct{}{}
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		delete(t.clients, c)
		t.mu.Unlock()
	}
}

// chain is a watch that runs first's parts, then second's.
func chain(first, second acphost.TurnWatch) acphost.TurnWatch {
	if first.Event == nil && first.End == nil && first.Meta == nil {
		return second
	}
	w := second
	if first.Meta != nil {
		w.Meta = map[string]string{}
		for k, v := range first.Meta {
			w.Meta[k] = v
		}
		for k, v := range second.Meta {
			w.Meta[k] = v
		}
	}
	if first.Event != nil {
		w.Event = func(ev acphost.StreamEvent) { first.Event(ev); second.Event(ev) }
	}
	if first.End != nil {
		w.End = func(r acphost.Response, err error) { first.End(r, err); second.End(r, err) }
	}
	return w
}

// otelEnv picks the OTEL_* variables of env, but the service's name and
// resource (the agent is a service of its own).
func otelEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "OTEL_SERVICE_NAME=") || strings.HasPrefix(kv, "OTEL_RESOURCE_ATTRIBUTES=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// traceMeta is the W3C trace context of ctx's span, as the prompt's _meta.
func traceMeta(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	m := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, m)
	return m
}
