// Package otelacphost traces and measures acphost clients with
// OpenTelemetry, for the people who run agents for others.
//
// It lives in a module of its own (github.com/acphost/acphost/otel), so
// the acphost module links none of OpenTelemetry. Its name follows the
// OpenTelemetry contrib convention (otelhttp, otelgrpc: "otel" and what is
// instrumented); importing it as "otel" would shadow go.opentelemetry.io/otel.
//
// It is fed only by what acphost offers every host: ACPOptions.OnUpdate
// (chained: the host's own still runs), ACPOptions.Debug.OnTurn (each
// turn's events, as a stream gets them, and its Response) and
// ACPClient.Stats. Instrument the options before Start:
//
//	tel, err := otelacphost.New(otelacphost.Options{TracerProvider: tp, MeterProvider: mp})
//	...
//	tel.Instrument(&opts)
//	client, err := acphost.Start(ctx, opts)
//	...
//	defer tel.Observe(client)()
//
// # Spans
//
// One span per turn, "invoke_agent {agent}" (kind client, the GenAI
// semantic conventions' agent invocation), a child of the span in the
// turn's ctx if any. Under it: "execute_tool {tool}" per tool call the
// agent reports (from its first sighting to completed or failed),
// "acphost.permission" per permission request and "acphost.elicitation"
// per elicitation (from the request to its answer: how long a person
// took; who answered in acphost.answered_by), and "acphost.restart" when
// the agent was restarted before the turn. The turn's trace context goes
// to the agent as the prompt's _meta.traceparent (ACP reserves the key),
// so an agent that reads it can join the trace.
//
// # Metrics
//
// gen_ai.client.operation.duration (turn latency, seconds),
// gen_ai.client.token.usage (when the turn's Response reports tokens),
// acphost.client.updates (a counter: its rate is updates per second),
// acphost.client.pending_asks, acphost.client.active_turns,
// acphost.client.restarts, and for observed clients
// acphost.client.active_sessions and acphost.client.queued_messages.
//
// Nothing here keeps agent text: no prompt, answer, tool title or input
// goes into a span. Strings the agent chooses (tool names, kinds,
// statuses, stop reasons) are cut to a bound or folded to "other", so a
// hostile agent cannot blow up a backend's cardinality.
//
// Package otlpenv builds providers from the standard OTEL_* environment
// for programs that want exactly that (the acphost command does).
package otelacphost
