//go:build unix

package websocket

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

func start(t *testing.T, tr *Transport, opts acphost.ACPOptions) *acphost.ACPClient {
	t.Helper()
	opts.Transport = tr
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := acphost.Start(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func turn(steps ...fakeagent.Step) fakeagent.Turn { return fakeagent.Turn{Steps: steps} }

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestTurnsPermissionAndCancelOverTheBridge(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "hello", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hi there"))}},
		{Prompt: "edit", Steps: []fakeagent.Step{
			fakeagent.Ask(fakeagent.PermissionParams("t1", "Edit a file", "edit",
				fakeagent.Option{ID: "yes", Name: "Allow", Kind: "allow_once"},
				fakeagent.Option{ID: "no", Name: "Reject", Kind: "reject_once"})),
			fakeagent.Say(fakeagent.Text("answer={{answer}}")),
		}},
		{Prompt: "hang", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {WaitCancel: true}}},
	}}
	s := serveFake(t, script, nil)
	tr := &Transport{URL: s.url(), Token: testToken}
	asked := make(chan string, 1)
	started := make(chan struct{}, 1)
	c := start(t, tr, acphost.ACPOptions{
		OnPermission: func(_ context.Context, req *acp.PermissionRequest) (string, error) {
			asked <- req.ToolCall.Title
			return "yes", nil
		},
		OnUpdate: func(u acp.Update) {
			select {
			case started <- struct{}{}:
			default:
			}
		},
	})
	p := c.Promises()
	assert.Equal(t, acphost.Promises{Transport: "websocket", ExitStatus: true, Redial: true}, p)
	assert.Regexp(t, uuidV4, tr.ConnectionID(), "the bridge named the connection")

	resp, err := c.Generate(acphost.Request{Prompt: "hello"})
	require.NoError(t, err)
	assert.Equal(t, "hi there", resp.Text)

	resp, err = c.Generate(acphost.Request{Prompt: "edit"})
	require.NoError(t, err)
	assert.Equal(t, "Edit a file", <-asked)
	assert.Equal(t, "answer=yes", resp.Text, "the permission answer crossed the link")

	for len(started) > 0 {
		<-started
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	resp, err = c.GenerateCtx(ctx, acphost.Request{Prompt: "hang"})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, acp.StopCancelled, resp.StopReason, "session/cancel reached the agent and it answered")

	resp, err = c.Generate(acphost.Request{Prompt: "hello"})
	require.NoError(t, err, "the link carries turns after a cancel")
	assert.Equal(t, "hi there", resp.Text)
}

func TestTokenIsRequired(t *testing.T) {
	t.Parallel()
	s := serveFake(t, fakeagent.Script{}, nil)
	for name, tr := range map[string]*Transport{
		"wrong":   {URL: s.url(), Token: "nope"},
		"missing": {URL: s.url()},
	} {
		_, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: t.TempDir()})
		var he *HandshakeError
		require.ErrorAs(t, err, &he, name)
		assert.Equal(t, http.StatusUnauthorized, he.StatusCode, name)
		assert.ErrorIs(t, err, ErrUnauthorized, name)
		assert.NotErrorIs(t, err, acphost.ErrLinkLost, "%s: a refused token is not a lost link", name)
	}
	req, err := http.NewRequest("GET", "http://"+s.addr+"/acp", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, `Bearer realm="acp"`, resp.Header.Get("WWW-Authenticate"))

	c := start(t, &Transport{URL: s.url() + "?token=" + testToken}, acphost.ACPOptions{})
	r, err := c.Generate(acphost.Request{Prompt: "x"})
	require.NoError(t, err, "the token as a query parameter, for clients that cannot send headers")
	assert.Equal(t, "ok", r.Text)
}

func TestAgentExitIsAnExitError(t *testing.T) {
	t.Parallel()
	three := 3
	s := serveFake(t, fakeagent.Script{Turns: []fakeagent.Turn{
		turn(fakeagent.Say(fakeagent.Text("bye")), fakeagent.Step{Exit: &three}),
	}}, nil)
	c := start(t, &Transport{URL: s.url(), Token: testToken}, acphost.ACPOptions{})
	_, err := c.Generate(acphost.Request{Prompt: "x"})
	var ee *acphost.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.ExitCode, "the exit code crossed the link in the close reason")
	assert.True(t, ee.DuringTurn)
	assert.ErrorIs(t, err, acphost.ErrAgentExited)
	assert.NotErrorIs(t, err, acphost.ErrLinkLost)
	eventually(t, "the bridge to let the agent go", func() bool { return len(s.b.pids()) == 0 })
}

// hangScript is a turn that runs until cancelled, then any turn says ok.
func hangScript() fakeagent.Script {
	return fakeagent.Script{IgnoreEOF: true, Turns: []fakeagent.Turn{
		{Prompt: "hang", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {WaitCancel: true}}},
		turn(fakeagent.Say(fakeagent.Text("ok"))),
	}}
}

// hangingTurn starts a "hang" turn on c and returns its result once the
// agent has said something in it.
func hangingTurn(t *testing.T, c *acphost.ACPClient, started <-chan struct{}) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := c.Generate(acphost.Request{Prompt: "hang"})
		errc <- err
	}()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("the turn ended before it started: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the turn never started")
	}
	return errc
}

func signal(ch chan struct{}) func(acp.Update) {
	return func(acp.Update) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func TestCutLinkIsALinkErrorAtOnceAndRecovers(t *testing.T) {
	t.Parallel()
	s := serveFake(t, hangScript(), nil)
	px := newProxy(t, s.addr)
	started := make(chan struct{}, 1)
	c := start(t, &Transport{URL: px.url(), Token: testToken}, acphost.ACPOptions{
		Recover: &acphost.RecoverOptions{Backoff: time.Millisecond}, OnUpdate: signal(started)})
	errc := hangingTurn(t, c, started)
	eventually(t, "the agent to run", func() bool { return len(s.b.pids()) == 1 })
	first := s.b.pids()[0]

	px.cut()
	cutAt := time.Now()
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("a cut link left the turn waiting")
	}
	assert.Less(t, time.Since(cutAt), time.Second, "a dropped connection is seen at once, not by a timeout")
	var le *acphost.LinkError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "websocket", le.Transport)
	assert.Equal(t, "read", le.Op)
	assert.True(t, le.DuringTurn)
	assert.NotErrorIs(t, err, acphost.ErrAgentExited)
	eventually(t, "the bridge to stop the agent of the cut connection", func() bool { return !processRunning(first) })

	_, err = c.Generate(acphost.Request{Prompt: "again"})
	require.ErrorIs(t, err, acphost.ErrContextLost, "recovery dialled a new connection")
	resp, err := c.Generate(acphost.Request{Prompt: "again"})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Text)
}

func TestStalledLinkIsALinkErrorByKeepalive(t *testing.T) {
	t.Parallel()
	s := serveFake(t, hangScript(), func(b *Bridge) { b.PingInterval = -1 })
	px := newProxy(t, s.addr)
	started := make(chan struct{}, 1)
	c := start(t, &Transport{URL: px.url(), Token: testToken, PingInterval: 200 * time.Millisecond},
		acphost.ACPOptions{OnUpdate: signal(started)})
	errc := hangingTurn(t, c, started)
	px.freeze()
	frozeAt := time.Now()
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled link left the turn waiting")
	}
	var le *acphost.LinkError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "keepalive", le.Op)
	assert.Less(t, time.Since(frozeAt), 2*time.Second, "within two ping intervals and a bit")
	px.thaw()
}

func TestCloseStopsTheBridgedAgent(t *testing.T) {
	t.Parallel()
	s := serveFake(t, fakeagent.Script{IgnoreEOF: true}, nil)
	c := start(t, &Transport{URL: s.url(), Token: testToken}, acphost.ACPOptions{Timeouts: acphost.Timeouts{CloseGrace: 200 * time.Millisecond}})
	_, err := c.Generate(acphost.Request{Prompt: "x"})
	require.NoError(t, err)
	pids := s.b.pids()
	require.Len(t, pids, 1)
	require.True(t, processRunning(pids[0]))
	require.NoError(t, c.Close())
	eventually(t, "the agent to be stopped", func() bool { return !processRunning(pids[0]) && len(s.b.pids()) == 0 })
}

func TestBridgeCloseEndsLinks(t *testing.T) {
	t.Parallel()
	s := serveFake(t, fakeagent.Script{IgnoreEOF: true}, nil)
	c := start(t, &Transport{URL: s.url(), Token: testToken}, acphost.ACPOptions{})
	pids := s.b.pids()
	require.Len(t, pids, 1)
	require.NoError(t, s.b.Close())
	assert.False(t, processRunning(pids[0]), "Close returns once every agent is gone")
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not see the bridge go")
	}
	var ce *CloseError
	require.ErrorAs(t, c.Err(), &ce)
	assert.Equal(t, 1001, ce.Code)
	assert.ErrorIs(t, c.Err(), acphost.ErrLinkLost)
	_, err := (&Transport{URL: s.url(), Token: testToken}).Dial(context.Background())
	var he *HandshakeError
	require.ErrorAs(t, err, &he, "a closed bridge refuses")
	assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
	assert.ErrorIs(t, err, acphost.ErrLinkLost)
}
