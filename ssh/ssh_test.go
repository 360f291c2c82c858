//go:build unix

package ssh_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/sshtest"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/acphost/acphost/ssh"
)

func TestMain(m *testing.M) {
	fakeagent.Main()
	os.Exit(m.Run())
}

// remoteFake is a Transport running the fake agent (this test binary)
// through srv, marked so the test can find its processes on the
// "remote" host (this machine) by their environment.
func remoteFake(t *testing.T, srv *sshtest.Server, script fakeagent.Script) (*ssh.Transport, string) {
	t.Helper()
	path, args, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	b := make([]byte, 8)
	rand.Read(b)
	mark := "ACPHOST_TEST_MARK=" + hex.EncodeToString(b)
	return &ssh.Transport{
		Addr: srv.Addr, User: srv.User, IdentityFiles: []string{srv.Identity}, KnownHostsFiles: []string{srv.KnownHosts},
		Command: path, Args: args, Env: append(env, mark), KeepAlive: time.Second,
	}, mark
}

var askAndSay = fakeagent.Script{StderrLines: []string{"remote agent ready"}, Turns: []fakeagent.Turn{
	{Steps: []fakeagent.Step{
		fakeagent.Ask(fakeagent.PermissionParams("t1", "edit main.go", "edit")),
		fakeagent.Say(fakeagent.Text("done remotely")),
	}},
}}

func TestSSHRunsTurnsAndCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	tr, mark := remoteFake(t, srv, askAndSay)
	var asked []string
	var mu sync.Mutex
	stderr := &testutil.SyncBuffer{}
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: t.TempDir(),
		OnPermission: func(_ context.Context, req *acp.PermissionRequest) (string, error) {
			mu.Lock()
			asked = append(asked, req.ToolCall.Title)
			mu.Unlock()
			return acphost.AllowOption(req), nil
		},
		Process: acphost.ProcessOptions{Stderr: stderr},
	})
	require.NoError(t, err)
	p := c.Promises()
	assert.Equal(t, "ssh", p.Transport)
	assert.True(t, p.ExitStatus && p.Stderr && p.GroupKill && p.Redial)
	assert.False(t, p.HostFiles, "a remote agent does not see the host's files")
	require.NotEmpty(t, testutil.WithEnv(mark), "the agent runs on the remote side")

	for range 2 {
		resp, err := c.Generate(acphost.Request{Prompt: "go"})
		require.NoError(t, err)
		assert.Equal(t, "done remotely", resp.Text)
	}
	assert.Equal(t, []string{"edit main.go", "edit main.go"}, asked)
	require.NoError(t, c.Close())
	assert.Contains(t, stderr.String(), "remote agent ready", "stderr comes over its own channel")
	testutil.NoneLeft(t, mark, 10*time.Second)
}

func TestSSHCancelKeepsTheAgentWarm(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	tr, _ := remoteFake(t, srv, fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "long", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {WaitCancel: true}}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("next"))}},
	}})
	started := make(chan struct{}, 1)
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: t.TempDir(), OnUpdate: func(acp.Update) {
		select {
		case started <- struct{}{}:
		default:
		}
	}})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	resp, err := c.GenerateCtx(ctx, acphost.Request{Prompt: "long"})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, acp.StopCancelled, resp.StopReason, "the agent confirmed the cancel over the link")
	resp, err = c.Generate(acphost.Request{Prompt: "again"})
	require.NoError(t, err)
	assert.Equal(t, "next", resp.Text)
}

func TestSSHReportsTheAgentsExit(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	code := 9
	tr, mark := remoteFake(t, srv, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Stderr: "panic: remote boom"}, {Exit: &code}}}}})
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: t.TempDir()})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Generate(acphost.Request{Prompt: "crash"})
	var ee *acphost.ExitError
	require.ErrorAs(t, err, &ee, "the exit status comes over the session")
	assert.Equal(t, 9, ee.ExitCode)
	assert.Contains(t, ee.Stderr, "panic: remote boom")
	assert.NotErrorIs(t, err, acphost.ErrLinkLost)
	testutil.NoneLeft(t, mark, 10*time.Second)
}

// The link is cut mid-turn while a permission waits: the turn fails with
// the link's error at once, the remote agent is ended by its watchdog, and
// Recover dials again and re-attaches the session by session/load.
func TestSSHCutLinkFailsAtOnceAndRecovers(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	history := filepath.Join(t.TempDir(), "history.ndjson")
	tr, mark := remoteFake(t, srv, fakeagent.Script{
		IgnoreEOF: true, IgnoreSIGTERM: true, Grandchild: true, HistoryFile: history,
		AgentCapabilities: json(`{"loadSession":true}`),
		Turns: []fakeagent.Turn{
			{Prompt: "ask", Steps: []fakeagent.Step{fakeagent.Ask(fakeagent.PermissionParams("t1", "rm -rf build", "execute"))}},
			{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("after"))}},
		},
	})
	asked := make(chan struct{})
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: t.TempDir(), Recover: &acphost.RecoverOptions{Backoff: time.Millisecond},
		OnPermission: func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
			close(asked)
			<-ctx.Done() // a human who never answers
			return "", ctx.Err()
		}})
	require.NoError(t, err)
	defer c.Close()
	sid := c.Session().ID()
	first := testutil.WithEnv(mark)
	require.NotEmpty(t, first)

	errc := make(chan error, 1)
	go func() {
		_, err := c.Generate(acphost.Request{Prompt: "ask"})
		errc <- err
	}()
	<-asked
	require.Positive(t, srv.CutConnections())
	cut := time.Now()
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("a cut link left the turn waiting")
	}
	t.Logf("cut link to failed turn: %v", time.Since(cut))
	var le *acphost.LinkError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "ssh", le.Transport)
	assert.True(t, le.DuringTurn)
	assert.NotErrorIs(t, err, acphost.ErrAgentExited)
	// The remote agent, which ignores EOF and SIGTERM and left a grandchild,
	// is ended by its watchdog though no host is left to ask.
	testutil.Until(t, 15*time.Second, func() (bool, string) {
		return !slices.ContainsFunc(first, testutil.Running), "the first agent's processes outlived the link"
	})

	resp, err := c.Generate(acphost.Request{Prompt: "next"})
	require.NoError(t, err, "Recover dialled again")
	assert.Equal(t, "after", resp.Text)
	require.NotNil(t, resp.Restarted)
	assert.Equal(t, "load", resp.Restarted.How)
	assert.ErrorIs(t, resp.Restarted, acphost.ErrLinkLost, "the restart says the link was lost")
	assert.Equal(t, sid, c.Session().ID())
	require.NoError(t, c.Close())
	testutil.NoneLeft(t, mark, 15*time.Second)
}

func TestSSHCloseEndsAStubbornAgentAndItsGroup(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	tr, mark := remoteFake(t, srv, fakeagent.Script{IgnoreEOF: true, IgnoreSIGTERM: true, Grandchild: true})
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: t.TempDir(), Timeouts: acphost.Timeouts{CloseGrace: 100 * time.Millisecond}})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(testutil.WithEnv(mark)), 2, "the agent and its grandchild run")
	require.NoError(t, c.Close())
	testutil.NoneLeft(t, mark, 15*time.Second)
}

func TestSSHRefusesUnknownAndChangedHostKeys(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	tr, _ := remoteFake(t, srv, fakeagent.Script{})
	empty := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	dir := t.TempDir()

	unknown := *tr
	unknown.KnownHostsFiles = []string{empty}
	_, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: &unknown, Dir: dir})
	require.ErrorIs(t, err, ssh.ErrUnknownHost)
	require.ErrorIs(t, err, acphost.ErrLinkLost, "a dial that failed is the link's failure")

	changed := *tr
	changed.KnownHostsFiles = []string{srv.KnownHostsWith(t, sshtest.NewKey(t))}
	_, err = acphost.Start(context.Background(), acphost.ACPOptions{Transport: &changed, Dir: dir})
	require.ErrorIs(t, err, ssh.ErrHostKeyMismatch)

	insecure := unknown
	insecure.InsecureIgnoreHostKey = true
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: &insecure, Dir: dir})
	require.NoError(t, err, "the opt-out accepts the unknown host")
	c.Close()

	stranger := *tr
	key := filepath.Join(t.TempDir(), "id")
	require.NoError(t, os.WriteFile(key, []byte(strangerKey(t)), 0o600))
	stranger.IdentityFiles, stranger.AgentSocket = []string{key}, "/nonexistent"
	_, err = acphost.Start(context.Background(), acphost.ACPOptions{Transport: &stranger, Dir: dir})
	require.ErrorIs(t, err, ssh.ErrAuth)
}

// A link that stalls — no bytes, no close — ends by the keepalive.
func TestSSHStalledLinkEndsByKeepalive(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	proxy := newFreezingProxy(t, srv.Addr)
	tr, _ := remoteFake(t, srv, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("x")), {WaitCancel: true}}}}})
	tr.Addr, tr.KeepAlive = proxy.addr, 200*time.Millisecond
	tr.InsecureIgnoreHostKey = true // the proxy's address is not the server's
	started := make(chan struct{}, 1)
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: t.TempDir(), OnUpdate: func(acp.Update) {
		select {
		case started <- struct{}{}:
		default:
		}
	}})
	require.NoError(t, err)
	defer c.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Generate(acphost.Request{Prompt: "x"})
		errc <- err
	}()
	<-started
	proxy.freeze()
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled link left the turn waiting")
	}
	var le *acphost.LinkError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "keepalive", le.Op)
}

func TestSSHPoolSpansHostsAndSurvivesOneGoingAway(t *testing.T) {
	t.Parallel()
	a, b := sshtest.Start(t), sshtest.Start(t)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}}}}
	ta, markA := remoteFake(t, a, script)
	tb, markB := remoteFake(t, b, script)
	p, err := acphost.NewPool(context.Background(), acphost.PoolOptions{Min: 2, Max: 4, Agent: acphost.ACPOptions{Dir: t.TempDir()}, Transports: []acphost.Transport{ta, tb}, HostRetry: time.Hour})
	require.NoError(t, err)
	defer p.Close()
	assert.Equal(t, []int{1, 1}, p.Hosts())
	var sessions []*acphost.Session
	for range 4 {
		s, err := p.NewSession(context.Background(), acphost.SessionOptions{})
		require.NoError(t, err)
		sessions = append(sessions, s)
	}
	assert.Equal(t, []int{2, 2}, p.Hosts(), "spread evenly")

	b.Stop()
	var lost, ok int
	for _, s := range sessions {
		resp, err := s.Generate(acphost.Request{Prompt: "x"})
		switch {
		case err == nil && resp.Text == "ok":
			ok++
		case errors.Is(err, acphost.ErrLinkLost):
			lost++
		default:
			t.Errorf("neither an answer nor a lost link: %v", err)
		}
	}
	assert.Equal(t, 2, ok, "the sessions on the live host go on")
	assert.Equal(t, 2, lost, "the others fail typed")
	for _, s := range sessions {
		s.Close(context.Background())
	}
	s, err := p.NewSession(context.Background(), acphost.SessionOptions{})
	require.NoError(t, err, "a new session goes to the live host")
	resp, err := s.Generate(acphost.Request{Prompt: "x"})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Text)
	require.NoError(t, p.Close())
	testutil.NoneLeft(t, markA, 15*time.Second)
	testutil.NoneLeft(t, markB, 15*time.Second)
}

func json(s string) []byte { return []byte(s) }

// freezingProxy forwards TCP to target until freeze, after which it
// neither forwards nor closes anything.
type freezingProxy struct {
	addr   string
	mu     sync.Mutex
	frozen chan struct{}
}

func newFreezingProxy(t *testing.T, target string) *freezingProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &freezingProxy{addr: l.Addr().String(), frozen: make(chan struct{})}
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			conns = append(conns, in, out)
			p.mu.Unlock()
			wg.Go(func() { p.pipe(out, in) })
			wg.Go(func() { p.pipe(in, out) })
		}
	})
	return p
}

func (p *freezingProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.frozen:
			return // drop it, and everything after: a stalled link
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *freezingProxy) freeze() { close(p.frozen) }

// strangerKey is a private key the server does not know.
func strangerKey(t *testing.T) string { return string(sshtest.PrivateKeyPEM(t)) }

func TestSSHLoginDir(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	tr, _ := remoteFake(t, srv, fakeagent.Script{})
	dir, err := tr.LoginDir(context.Background())
	require.NoError(t, err)
	// The login's directory is the passwd entry's home, not this
	// process's $HOME (which may be elsewhere, as in CI's unprivileged run).
	me, err := user.Current()
	require.NoError(t, err)
	assert.Equal(t, me.HomeDir, dir, "the remote host is this machine, logged in as this user")
}
