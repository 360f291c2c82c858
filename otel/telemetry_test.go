package otelacphost_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	otelacphost "github.com/acphost/acphost/otel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestMain(m *testing.M) {
	fakeagent.Main() // the restart test's agent is this binary
	os.Exit(m.Run())
}

// sdk is an in-memory SDK: every span ended, every metric on demand.
type sdk struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tel    *otelacphost.Telemetry
}

func newSDK(t *testing.T, o otelacphost.Options) *sdk {
	t.Helper()
	s := &sdk{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	t.Cleanup(func() {
		require.NoError(t, tp.Shutdown(context.Background()))
		require.NoError(t, mp.Shutdown(context.Background()))
	})
	o.TracerProvider, o.MeterProvider = tp, mp
	var err error
	s.tel, err = otelacphost.New(o)
	require.NoError(t, err)
	return s
}

func (s *sdk) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, sp := range s.spans.Ended() {
		if sp.Name() == name {
			found = append(found, sp)
		}
	}
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

func attr(sp sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range sp.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// metrics collects the metrics by name.
func (s *sdk) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func sumOf(t *testing.T, a metricdata.Aggregation) int64 {
	t.Helper()
	var n int64
	switch d := a.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			n += p.Value
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			n += p.Value
		}
	default:
		t.Fatalf("not an int64 sum or gauge: %T", a)
	}
	return n
}

// connect starts a client on an in-process fake agent, its options
// instrumented by tel.
func connect(t testing.TB, tel *otelacphost.Telemetry, script fakeagent.Script, opts acphost.ACPOptions) (*acphost.ACPClient, *fakeagent.Agent) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	fa := fakeagent.New(script)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = fa.Serve(context.Background(), toAgentR, toClientW)
		toClientW.Close()
		toAgentR.Close()
	}()
	opts.Dir = t.TempDir()
	opts.Transport = &acphost.StreamTransport{Reader: toClientR, Writer: toAgentW, Closer: closer(func() error {
		toAgentW.Close()
		toClientR.Close()
		return nil
	})}
	if tel != nil {
		tel.Instrument(&opts)
	}
	c, err := acphost.Start(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		<-served
	})
	return c, fa
}

type closer func() error

func (f closer) Close() error { return f() }

func TestTurnWithAToolAndAPermissionAnsweredByAHook(t *testing.T) {
	s := newSDK(t, otelacphost.Options{Decision: func(id string, ans *acphost.PermissionAnswer) (string, string, bool) {
		return "policy", "allow ls", id == "t1"
	}})
	var userUpdates int
	c, fa := connect(t, s.tel, fakeagent.Demo(), acphost.ACPOptions{
		OnPermission: acphost.AllowAll(),
		OnUpdate:     func(acp.Update) { userUpdates++ },
	})
	defer s.tel.Observe(c)()
	resp, err := c.GenerateCtx(context.Background(), acphost.Request{Prompt: "x"})
	require.NoError(t, err)
	assert.Equal(t, "picked allow", resp.Text)
	assert.Equal(t, 5, userUpdates, "the host's own OnUpdate still sees every update")

	turn := s.span(t, "invoke_agent fakeagent")
	assert.Equal(t, trace.SpanKindClient, turn.SpanKind())
	assert.Equal(t, "invoke_agent", attr(turn, "gen_ai.operation.name").AsString())
	assert.Equal(t, "fakeagent", attr(turn, "gen_ai.agent.name").AsString())
	assert.Equal(t, c.Session().ID(), attr(turn, "gen_ai.conversation.id").AsString())
	assert.Equal(t, []string{"end_turn"}, attr(turn, "gen_ai.response.finish_reasons").AsStringSlice())
	assert.EqualValues(t, 1, attr(turn, "acphost.turn.tool_calls").AsInt64())
	assert.Equal(t, codes.Unset, turn.Status().Code)

	tool := s.span(t, "execute_tool execute")
	assert.Equal(t, turn.SpanContext().SpanID(), tool.Parent().SpanID(), "a tool call is a child of its turn")
	assert.Equal(t, "t1", attr(tool, "gen_ai.tool.call.id").AsString())
	assert.Equal(t, "execute", attr(tool, "acphost.tool.kind").AsString())
	assert.Equal(t, "completed", attr(tool, "acphost.tool.status").AsString())

	perm := s.span(t, "acphost.permission")
	assert.Equal(t, tool.SpanContext().SpanID(), perm.Parent().SpanID(), "a permission is a child of its tool call")
	assert.Equal(t, "policy", attr(perm, "acphost.answered_by").AsString(), "Decision names who decided")
	assert.Equal(t, "allow ls", attr(perm, "acphost.permission.rule").AsString())
	assert.Equal(t, "selected", attr(perm, "acphost.outcome").AsString())
	assert.Equal(t, "allow_once", attr(perm, "acphost.permission.option_kind").AsString())
	assert.False(t, perm.EndTime().Before(perm.StartTime()))

	// The agent was given the turn's trace context where ACP reserves it.
	var p struct {
		Meta map[string]string `json:"_meta"`
	}
	var prompts []json.RawMessage
	for _, m := range fa.Received() {
		if m.Method == "session/prompt" {
			prompts = append(prompts, m.Params)
		}
	}
	require.Len(t, prompts, 1)
	require.NoError(t, json.Unmarshal(prompts[0], &p))
	assert.Equal(t, "00-"+turn.SpanContext().TraceID().String()+"-"+turn.SpanContext().SpanID().String()+"-01", p.Meta["traceparent"])

	m := s.metrics(t)
	assert.EqualValues(t, 5, sumOf(t, m["acphost.client.updates"]))
	assert.Zero(t, sumOf(t, m["acphost.client.pending_asks"]))
	assert.Zero(t, sumOf(t, m["acphost.client.active_turns"]))
	assert.EqualValues(t, 1, sumOf(t, m["acphost.client.active_sessions"]))
	assert.Zero(t, sumOf(t, m["acphost.client.queued_messages"]))
	h, ok := m["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, h.DataPoints, 1)
	assert.EqualValues(t, 1, h.DataPoints[0].Count)
	name, _ := h.DataPoints[0].Attributes.Value("gen_ai.agent.name")
	assert.Equal(t, "fakeagent", name.AsString())
}

// A permission a person never answered before the stop button: the ask
// is answered "cancelled" by the cancel, and the turn is a cancellation,
// not a failure.
func TestCancelledTurn(t *testing.T) {
	s := newSDK(t, otelacphost.Options{})
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.ToolCall("t2", "grep", "search")),
		fakeagent.Say(fakeagent.ToolCall("t1", "rm -rf", "execute")),
		fakeagent.Ask(fakeagent.PermissionParams("t1", "rm -rf", "execute")),
		{WaitCancel: true},
	}}}}
	asked := make(chan struct{})
	c, _ := connect(t, s.tel, script, acphost.ACPOptions{OnPermission: func(ctx context.Context, _ *acp.PermissionRequest) (string, error) {
		close(asked)
		<-ctx.Done() // a person who never answers
		return "", ctx.Err()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-asked
		m := s.metrics(t)
		assert.EqualValues(t, 1, sumOf(t, m["acphost.client.pending_asks"]), "the ask is pending while the person thinks")
		assert.EqualValues(t, 1, sumOf(t, m["acphost.client.active_turns"]))
		cancel()
	}()
	resp, err := c.GenerateCtx(ctx, acphost.Request{Prompt: "x"})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, acp.StopCancelled, resp.StopReason)

	turn := s.span(t, "invoke_agent fakeagent")
	assert.Equal(t, "cancelled", attr(turn, "error.type").AsString())
	assert.Equal(t, []string{"cancelled"}, attr(turn, "gen_ai.response.finish_reasons").AsStringSlice())
	assert.Equal(t, codes.Unset, turn.Status().Code, "a confirmed cancellation is not a failure")
	perm := s.span(t, "acphost.permission")
	assert.Equal(t, "cancelled", attr(perm, "acphost.answered_by").AsString())
	assert.Equal(t, "cancelled", attr(perm, "acphost.outcome").AsString())
	assert.Equal(t, "failed", attr(s.span(t, "execute_tool execute"), "acphost.tool.status").AsString(), "the refused tool failed")
	assert.Equal(t, "failed", attr(s.span(t, "execute_tool search"), "acphost.tool.status").AsString(), "so did the open one, as the library reports")

	m := s.metrics(t)
	assert.Zero(t, sumOf(t, m["acphost.client.pending_asks"]))
	assert.Zero(t, sumOf(t, m["acphost.client.active_turns"]))
	h := m["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	et, _ := h.DataPoints[0].Attributes.Value("error.type")
	assert.Equal(t, "cancelled", et.AsString())
}

// The agent crashes in a turn; the next turn restarts it (the fake agent
// keeps no sessions: the context is lost) and says so.
func TestRestart(t *testing.T) {
	s := newSDK(t, otelacphost.Options{})
	nine := 9
	script := fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "crash", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.ToolCall("t1", "grep", "search")), {Exit: &nine}}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}},
	}}
	path, args, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	opts := acphost.ACPOptions{Command: path, Args: args, Dir: t.TempDir(),
		Process: acphost.ProcessOptions{Env: env, Contain: acphost.ContainProcessGroup},
		Recover: &acphost.RecoverOptions{Backoff: time.Millisecond}}
	s.tel.Instrument(&opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := acphost.Start(ctx, opts)
	require.NoError(t, err)
	defer c.Close()

	_, err = c.GenerateCtx(ctx, acphost.Request{Prompt: "crash"})
	require.ErrorIs(t, err, acphost.ErrAgentExited)
	_, err = c.GenerateCtx(ctx, acphost.Request{Prompt: "after"})
	require.ErrorIs(t, err, acphost.ErrContextLost)

	rs := s.span(t, "acphost.restart")
	assert.Equal(t, "new", attr(rs, "acphost.restart.how").AsString())
	assert.True(t, attr(rs, "acphost.restart.context_lost").AsBool())
	assert.Equal(t, "agent_exited", attr(rs, "error.type").AsString())
	assert.Equal(t, codes.Error, rs.Status().Code)
	var turns []sdktrace.ReadOnlySpan
	for _, sp := range s.spans.Ended() {
		if sp.Name() == "invoke_agent fakeagent" {
			turns = append(turns, sp)
		}
	}
	require.Len(t, turns, 2)
	assert.Equal(t, "agent_exited", attr(turns[0], "error.type").AsString())
	assert.Equal(t, "unfinished", attr(s.span(t, "execute_tool search"), "acphost.tool.status").AsString(), "a tool span left open ends with its turn")
	assert.Equal(t, codes.Error, turns[0].Status().Code)
	assert.Equal(t, turns[1].SpanContext().SpanID(), rs.Parent().SpanID(), "the restart is a child of the turn it came before")
	assert.Equal(t, "context_lost", attr(turns[1], "error.type").AsString())
	assert.EqualValues(t, 1, sumOf(t, s.metrics(t)["acphost.client.restarts"]))
}
