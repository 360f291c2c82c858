package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	fakeagent.Main() // when re-executed as a fake agent, this never returns
	if os.Getenv(testHostEnv) != "" {
		testHostMain()
	}
	os.Exit(m.Run())
}

// testHostEnv makes the test binary a host process that starts a fake
// agent, prints its PID and waits to be killed (see testHostMain).
const testHostEnv = "ACPHOST_TEST_HOST"

func testHostMain() {
	// An agent that ignores EOF on stdin: only a signal ends it.
	path, args, env, err := fakeagent.Command(fakeagent.Script{IgnoreEOF: true})
	if err != nil {
		panic(err)
	}
	contain := ContainMode(strings.TrimSuffix(os.Getenv(testHostEnv), "_"))
	if contain == "1" {
		contain = ContainAuto
	}
	c, err := Start(context.Background(), ACPOptions{Command: path, Args: args, Process: ProcessOptions{Env: env, Contain: contain}})
	if err != nil {
		panic(err)
	}
	fmt.Println(c.PID())
	time.Sleep(time.Hour) // until killed
	os.Exit(1)
}

// pipeAgent is a fake agent served in-process over two pipes.
type pipeAgent struct {
	*fakeagent.Agent
	done chan error
}

// connectFake starts a fake agent in-process and connects a client to it.
// It works inside a synctest bubble. Close of the client ends the agent.
func connectFake(t *testing.T, script fakeagent.Script, opts ACPOptions) (*ACPClient, *pipeAgent) {
	t.Helper()
	c, pa, err := tryConnectFake(t, script, opts)
	require.NoError(t, err)
	return c, pa
}

func tryConnectFake(t testing.TB, script fakeagent.Script, opts ACPOptions) (*ACPClient, *pipeAgent, error) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	pa := &pipeAgent{Agent: fakeagent.New(script), done: make(chan error, 1)}
	serveCtx, stopServe := context.WithCancel(context.Background())
	go func() {
		err := pa.Serve(serveCtx, toAgentR, toClientW)
		toClientW.Close()
		toAgentR.Close()
		pa.done <- err
	}()
	closer := closerFunc(func() error {
		toAgentW.Close()
		toClientR.Close()
		return nil
	})
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	opts.Transport = &StreamTransport{Reader: toClientR, Writer: toAgentW, Closer: closer}
	c, err := Start(context.Background(), opts)
	if err != nil {
		closer.Close()
		stopServe()
		<-pa.done
		return nil, nil, err
	}
	t.Cleanup(func() {
		c.Close()
		stopServe() // for an agent that stopped reading and so never sees EOF
		<-pa.done
	})
	return c, pa, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// startFake runs the fake agent as a real subprocess (this test binary).
func startFake(t *testing.T, script fakeagent.Script, opts ACPOptions) (*ACPClient, error) {
	t.Helper()
	path, args, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	opts.Command, opts.Args, opts.Process.Env = path, args, append(env, opts.Process.Env...)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Start(ctx, opts)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// recorder collects updates delivered to OnUpdate.
type recorder struct {
	mu      sync.Mutex
	updates []acp.Update
}

func (r *recorder) onUpdate(u acp.Update) {
	r.mu.Lock()
	r.updates = append(r.updates, u)
	r.mu.Unlock()
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.updates))
	for i, u := range r.updates {
		out[i] = string(u.Kind())
	}
	return out
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.updates)
}

// received returns the params of every message the agent got for method.
func received(a *fakeagent.Agent, method string) []json.RawMessage {
	var out []json.RawMessage
	for _, m := range a.Received() {
		if m.Method == method {
			out = append(out, m.Params)
		}
	}
	return out
}

// responses returns the agent's recorded responses from the client.
func responses(a *fakeagent.Agent) []fakeagent.Message {
	var out []fakeagent.Message
	for _, m := range a.Received() {
		if m.Method == "" {
			out = append(out, m)
		}
	}
	return out
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func errorsAs[T error](err error, target *T) bool { return errors.As(err, target) }

// eventually polls cond until it holds or ten seconds pass.
var eventually = testutil.Eventually

// autoContainment is the mode ContainAuto picks on this machine.
func autoContainment(t *testing.T) ContainMode {
	t.Helper()
	plan, err := newContainment(ContainAuto, nil)
	require.NoError(t, err)
	if plan.group != nil {
		require.NoError(t, plan.group.Remove(time.Second))
		return ContainCgroup
	}
	if plan.namespace {
		return ContainPIDNamespace
	}
	return ContainProcessGroup
}
