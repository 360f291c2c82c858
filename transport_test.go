package acphost

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// execTransport is a Transport as a user would write one, outside the
// package's own process code: os/exec, three pipes, a goroutine waiting
// for the exit. sever cuts the link without ending the agent, as a
// dropped connection does.
//
// Its stdout and stderr are os.Pipes of its own, not cmd.StdoutPipe and
// StderrPipe: cmd.Wait closes those as soon as the agent exits, throwing
// away what the client had not read yet (the crash's "panic: boom", one
// run in a few hundred under load). And Done closes only once the client
// has read stderr to its end, so the exit's tail is whole when the client
// asks for it.
type execTransport struct {
	script    fakeagent.Script
	promises  Promises
	dials     atomic.Int32
	mu        sync.Mutex
	last      *execLink
	dialError error
}

type execLink struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   *os.File
	stderr   *eofReader
	promises Promises
	done     chan struct{}
	waited   chan struct{} // cmd.Wait returned
	stopping chan struct{} // Stop was called: stderr may never be read
	endOnce  sync.Once
	err      error
}

// eofReader is a stderr that says (eof closed) once its reader has had
// everything: the agent and all it started have closed their ends.
type eofReader struct {
	f    *os.File
	once sync.Once
	eof  chan struct{}
}

func (r *eofReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil {
		r.once.Do(func() { close(r.eof) })
	}
	return n, err
}

func (t *execTransport) Dial(ctx context.Context) (Link, error) {
	t.dials.Add(1)
	if t.dialError != nil {
		return nil, t.dialError
	}
	path, args, env, err := fakeagent.Command(t.script)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	l := &execLink{cmd: cmd, promises: t.promises, done: make(chan struct{}), waited: make(chan struct{}), stopping: make(chan struct{})}
	if l.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close() // the agent holds its own copies now
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	l.stdout, l.stderr = outR, &eofReader{f: errR, eof: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		select {
		case <-l.stderr.eof: // the client drains stderr from Dial on,
		case <-l.stopping: // unless it stops the link before it began
		}
		l.end(&ExitError{ExitCode: code, Err: err})
		close(l.waited)
	}()
	t.mu.Lock()
	t.last = l
	t.mu.Unlock()
	return l, nil
}

func (l *execLink) end(err error) {
	l.endOnce.Do(func() {
		l.err = err
		close(l.done)
	})
}

// sever closes the host's ends, as a dropped connection would: the agent
// is left running until Stop.
func (l *execLink) sever() {
	l.end(&LinkError{Op: "read", Err: io.ErrUnexpectedEOF})
	l.stdout.Close()
	l.stdin.Close()
}

func (l *execLink) Read(p []byte) (int, error)  { return l.stdout.Read(p) }
func (l *execLink) Write(p []byte) (int, error) { return l.stdin.Write(p) }
func (l *execLink) Stderr() io.Reader           { return l.stderr }
func (l *execLink) Done() <-chan struct{}       { return l.done }
func (l *execLink) Err() error                  { return l.err }
func (l *execLink) Promises() Promises          { return l.promises }

// Stop kills the agent and releases the pipes once it is reaped and its
// stderr read to the end (the kill closes the agent's ends).
func (l *execLink) Stop(time.Duration) {
	close(l.stopping)
	l.stdin.Close()
	l.cmd.Process.Kill()
	<-l.waited
	l.stdout.Close()
	l.stderr.f.Close()
}

func (t *execTransport) link() *execLink {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func newExecTransport(script fakeagent.Script) *execTransport {
	return &execTransport{script: script, promises: Promises{Transport: "test-exec", Stderr: true, ExitStatus: true, Redial: true}}
}

func TestTransportCarriesTurnsAndRecoversACrash(t *testing.T) {
	t.Parallel()
	tr := newExecTransport(crashing(`{}`, ""))
	var stderr testutil.SyncBuffer
	c, err := Start(context.Background(), ACPOptions{Transport: tr, Dir: t.TempDir(), Recover: &RecoverOptions{Backoff: time.Millisecond}, Process: ProcessOptions{Stderr: &stderr}})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, "test-exec", c.Promises().Transport)
	assert.Zero(t, c.PID(), "a transport's agent has no local pid to report")

	_, err = c.Generate(Request{Prompt: "crash"})
	var ee *ExitError
	require.ErrorAs(t, err, &ee, "the link's exit is the turn's error")
	assert.Equal(t, 9, ee.ExitCode)
	assert.True(t, ee.DuringTurn)
	assert.Contains(t, ee.Stderr, "panic: boom", "the link's stderr makes the tail")
	assert.Contains(t, stderr.String(), "panic: boom", "and is forwarded")

	_, err = c.Generate(Request{Prompt: "after"})
	require.ErrorIs(t, err, ErrContextLost, "recovery dialled again and said the context is gone")
	assert.EqualValues(t, 2, tr.dials.Load())
	resp, err := c.Generate(Request{Prompt: "after"})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Text)
}

func TestTransportLinkLossIsTypedAtOnce(t *testing.T) {
	t.Parallel()
	tr := newExecTransport(fakeagent.Script{IgnoreEOF: true, Turns: []fakeagent.Turn{
		{Prompt: "hang", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {WaitCancel: true}}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}},
	}})
	started := make(chan struct{}, 1)
	c, err := Start(context.Background(), ACPOptions{Transport: tr, Dir: t.TempDir(), Recover: &RecoverOptions{Backoff: time.Millisecond},
		OnUpdate: func(acp.Update) {
			select {
			case started <- struct{}{}:
			default:
			}
		}})
	require.NoError(t, err)
	defer c.Close()
	first := tr.link()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Generate(Request{Prompt: "hang"})
		errc <- err
	}()
	<-started
	first.sever()
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("a lost link left the turn waiting")
	}
	var le *LinkError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, ErrLinkLost)
	assert.NotErrorIs(t, err, ErrAgentExited, "the link failed, not the agent")
	assert.Equal(t, "test-exec", le.Transport, "the client names the link's transport")
	assert.True(t, le.DuringTurn)

	_, err = c.Generate(Request{Prompt: "again"})
	require.ErrorIs(t, err, ErrContextLost)
	resp, err := c.Generate(Request{Prompt: "again"})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Text)
	select {
	case <-first.done:
	default:
		t.Fatal("the severed link was not stopped when its agent was replaced")
	}
	assert.False(t, processRunning(first.cmd.Process.Pid), "its agent was ended")
}

func TestTransportWithoutRedialFailsRestartTyped(t *testing.T) {
	t.Parallel()
	tr := newExecTransport(crashing(`{}`, ""))
	c, err := Start(context.Background(), ACPOptions{Transport: tr, Dir: t.TempDir(), Recover: &RecoverOptions{Backoff: time.Millisecond}})
	require.NoError(t, err)
	defer c.Close()
	tr.dialError = errors.Join(errors.New("no second agent"), ErrUnsupported)
	_, err = c.Generate(Request{Prompt: "crash"})
	require.ErrorIs(t, err, ErrAgentExited)
	_, err = c.Generate(Request{Prompt: "after"})
	require.ErrorIs(t, err, ErrUnsupported, "the dial's error is the restart's")
}

func TestTransportRefusesWhatOnlyALocalProcessHonours(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := newExecTransport(fakeagent.Script{})
	for name, opts := range map[string]ACPOptions{
		"command":  {Transport: tr, Dir: dir, Command: "agent"},
		"env":      {Transport: tr, Dir: dir, Process: ProcessOptions{Env: []string{"A=b"}}},
		"confine":  {Transport: tr, Dir: dir, Process: ProcessOptions{Confine: &Confinement{}}},
		"contain":  {Transport: tr, Dir: dir, Process: ProcessOptions{Contain: ContainCgroup}},
		"no dir":   {Transport: tr},
		"relative": {Transport: tr, Dir: "work"},
	} {
		_, err := Start(context.Background(), opts)
		assert.Error(t, err, name)
	}
	assert.Zero(t, tr.dials.Load(), "refused before dialling")

	_, err := Start(context.Background(), ACPOptions{Transport: tr, Dir: dir, FS: &FSOptions{}})
	require.ErrorIs(t, err, ErrUnsupported, "host files are not served to an agent that does not see them")
	require.NotNil(t, tr.link())
	select {
	case <-tr.link().done:
	default:
		t.Fatal("the refused link was not stopped")
	}

	tr.promises.HostFiles = true
	c, err := Start(context.Background(), ACPOptions{Transport: tr, Dir: dir, FS: &FSOptions{}})
	require.NoError(t, err, "a link that promises the host's files may serve them")
	c.Close()
	_, err = Start(context.Background(), ACPOptions{Transport: &StreamTransport{}, Command: "agent", Dir: filepath.Join(dir)})
	assert.Error(t, err, "a StreamTransport has its agent running")
}

func TestPoolSpreadsOverTransportsAndSkipsAFailedHost(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("done"))}}}}
	a, b, down := newExecTransport(script), newExecTransport(script), newExecTransport(script)
	down.dialError = &LinkError{Transport: "test-exec", Op: "dial", Err: errors.New("connection refused")}
	p, err := NewPool(context.Background(), PoolOptions{Min: 3, Max: 6, Agent: ACPOptions{Dir: t.TempDir()}, Transports: []Transport{a, down, b}, HostRetry: time.Hour})
	require.NoError(t, err, "a host that is down does not fail the pool while others can take its share")
	defer p.Close()
	hosts := p.Hosts()
	assert.Equal(t, 0, hosts[1], "nothing runs on the host that is down")
	assert.Equal(t, 3, hosts[0]+hosts[2])
	assert.LessOrEqual(t, hosts[0]-hosts[2], 1, "spread evenly: %v", hosts)
	assert.GreaterOrEqual(t, hosts[0]-hosts[2], -1, "spread evenly: %v", hosts)
	dialsDown := down.dials.Load()

	var sessions []*Session
	for range 5 {
		s, err := p.NewSession(context.Background(), SessionOptions{})
		require.NoError(t, err)
		sessions = append(sessions, s)
	}
	hosts = p.Hosts()
	assert.Equal(t, []int{3, 0, 2}, []int{max(hosts[0], hosts[2]), hosts[1], min(hosts[0], hosts[2])}, "grown over the live hosts only: %v", hosts)
	assert.Equal(t, dialsDown, down.dials.Load(), "the failed host is skipped for HostRetry")
	for _, s := range sessions {
		resp, err := s.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		assert.Equal(t, "done", resp.Text)
	}

	_, err = NewPool(context.Background(), PoolOptions{Agent: ACPOptions{Dir: t.TempDir()}, Transports: []Transport{down, down}})
	require.ErrorIs(t, err, ErrLinkLost, "every host failing fails the start, with the hosts' errors")
}

// TestStreamTransportConnectsOnce: a StreamTransport reaches one agent,
// once — a second Dial, or a second Start over it, fails with
// ErrUnsupported instead of speaking to a stream a client already owns.
func TestStreamTransportConnectsOnce(t *testing.T) {
	st := &StreamTransport{Reader: strings.NewReader(""), Writer: io.Discard}
	l, err := st.Dial(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "stream", l.Promises().Transport)
	_, err = st.Dial(context.Background())
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = Start(context.Background(), ACPOptions{Transport: st})
	require.ErrorIs(t, err, ErrUnsupported)
}

// podLink is a link whose agent its transport contains where it runs, as
// kube's pods are.
type podLink struct{ Link }

func (podLink) Containment() Containment {
	return Containment{Mode: ContainPod, Where: "pod agent-x in agents", Facts: []string{"non-root (uid 65532)", "no capabilities"}}
}

type podTransport struct{ *execTransport }

func (t podTransport) Dial(ctx context.Context) (Link, error) {
	l, err := t.execTransport.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return podLink{l}, nil
}

// TestContainedLinkReportsItsContainment: a link that says how its agent
// is contained is what Containment reports, and plan mode's kernel layer
// names it where it does not hold; another transport's agent reports none.
func TestContainedLinkReportsItsContainment(t *testing.T) {
	t.Parallel()
	c, err := Start(context.Background(), ACPOptions{Transport: podTransport{newExecTransport(fakeagent.Script{})}, Dir: "/", PlanMode: true})
	require.NoError(t, err)
	defer c.Close()
	got := c.Containment()
	assert.Equal(t, ContainPod, got.Mode)
	assert.Equal(t, "pod", got.Word())
	assert.Equal(t, "pod agent-x in agents", got.Where)
	e := c.Session().Enforcement()
	assert.False(t, e.Kernel)
	assert.Contains(t, e.KernelReason, "it runs in pod agent-x in agents, confined by it (non-root (uid 65532), no capabilities)")

	plain, err := Start(context.Background(), ACPOptions{Transport: newExecTransport(fakeagent.Script{}), Dir: "/"})
	require.NoError(t, err)
	defer plain.Close()
	assert.Zero(t, plain.Containment().Mode)
}
