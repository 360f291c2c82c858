package kube_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/acphost/acphost/kube"
)

// agentImage is what kube/testdata/image.sh builds and imports.
const agentImage = "localhost/acphost-kube/agent:test"

// agentCommand runs the test agent in the image.
var agentCommand = []string{"/bin/acphost-testagent"}

type cluster struct {
	cfg *rest.Config
	cs  kubernetes.Interface
	dyn dynamic.Interface
	ns  string
}

// needCluster returns the cluster KUBECONFIG names when the tests are
// asked to use it (ACPHOST_KUBE_TEST=1, or ACPHOST_REQUIRE_KUBE=1, under
// which a missing cluster fails), and skips the test otherwise: a
// person's KUBECONFIG alone never has pods made in their cluster.
func needCluster(t testing.TB) *cluster {
	t.Helper()
	required := os.Getenv("ACPHOST_REQUIRE_KUBE") == "1"
	switch {
	case required && os.Getenv("KUBECONFIG") == "":
		t.Fatal("a cluster is required by ACPHOST_REQUIRE_KUBE=1, and KUBECONFIG is unset")
	case !required && (os.Getenv("ACPHOST_KUBE_TEST") != "1" || os.Getenv("KUBECONFIG") == ""):
		t.Skip("SKIPPED, NOT PASSED: needs a test cluster: ACPHOST_KUBE_TEST=1 with KUBECONFIG naming it, and the test image (kube/testdata/image.sh); CI sets ACPHOST_REQUIRE_KUBE=1")
	}
	cfg, ns, err := kube.Load("", "")
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("KUBECONFIG is set but the cluster does not answer: %v", err)
	}
	return &cluster{cfg: cfg, cs: cs, dyn: dyn, ns: ns}
}

func mark() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "ACPHOST_TEST_MARK=" + hex.EncodeToString(b)
}

// transport is a Transport running the test agent playing script, its
// processes marked with the returned entry.
func (c *cluster) transport(t testing.TB, script fakeagent.Script) (*kube.Transport, string) {
	t.Helper()
	_, _, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	m := mark()
	tr := &kube.Transport{
		Config:     c.cfg,
		Namespace:  c.ns,
		Image:      agentImage,
		PullPolicy: corev1.PullNever,
		Command:    agentCommand,
		Env:        append(env, m),
		Lease:      6 * time.Second,
	}
	t.Cleanup(func() { tr.Close() })
	return tr, m
}

// left lists the pods, claims and Leases of a host instance.
func (c *cluster) left(t testing.TB, instance string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: kube.InstanceLabel + "=" + instance}
	var out []string
	pods, err := c.cs.CoreV1().Pods(c.ns).List(ctx, sel)
	require.NoError(t, err)
	for _, p := range pods.Items {
		out = append(out, fmt.Sprintf("pod %s (%s)", p.Name, p.Status.Phase))
	}
	leases, err := c.cs.CoordinationV1().Leases(c.ns).List(ctx, sel)
	require.NoError(t, err)
	for _, l := range leases.Items {
		out = append(out, "lease "+l.Name)
	}
	if claims, err := c.dyn.Resource(kube.ClaimResource).Namespace(c.ns).List(ctx, sel); err == nil {
		for _, cl := range claims.Items {
			out = append(out, "claim "+cl.GetName())
		}
	}
	return out
}

// noneLeft fails t unless nothing of instance is left in the cluster.
func (c *cluster) noneLeft(t testing.TB, instance string) {
	t.Helper()
	require.NotEmpty(t, instance)
	assert.Empty(t, c.left(t, instance), "left in the cluster by %s", instance)
}

func allow(_ context.Context, req *acp.PermissionRequest) (string, error) {
	return acphost.AllowOption(req), nil
}

var askAndSay = fakeagent.Script{StderrLines: []string{"agent in the pod"}, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
	fakeagent.Ask(fakeagent.PermissionParams("t1", "edit main.go", "edit")),
	fakeagent.Say(fakeagent.Text("done in the pod, {{answer}}")),
}}}}

// Turns and a permission answered through OnPermission run in a pod; the
// header's words name it; Close leaves no pod, Lease or process.
func TestKubeTurnsAndPermissionAndCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	tr, m := c.transport(t, askAndSay)
	var stderr testutil.SyncBuffer
	var asked int
	cl, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/", OnPermission: func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		asked++
		return allow(ctx, req)
	}, Process: acphost.ProcessOptions{Stderr: &stderr}})
	require.NoError(t, err)
	p := cl.Promises()
	assert.Equal(t, acphost.Promises{Transport: "kube", Stderr: true, ExitStatus: true, GroupKill: true, Redial: true}, p)
	for range 2 {
		resp, err := cl.Generate(acphost.Request{Prompt: "go"})
		require.NoError(t, err)
		assert.Contains(t, resp.Text, "done in the pod")
	}
	assert.Equal(t, 2, asked)
	assert.Regexp(t, `^pod acphost-\w+ in `+c.ns, tr.Where())
	assert.Regexp(t, `^kube pod acphost-\w+: non-root uid 65532, no capabilities, no privilege escalation, seccomp RuntimeDefault$`, tr.Containment())
	ct := cl.Containment()
	assert.Equal(t, acphost.ContainPod, ct.Mode, "the client reports the pod's containment")
	assert.Equal(t, tr.Where(), ct.Where)
	assert.Equal(t, []string{"non-root uid 65532", "no capabilities", "no privilege escalation", "seccomp RuntimeDefault"}, ct.Facts)
	require.NotEmpty(t, testutil.WithEnv(m), "the agent runs on this node, its mark in its environment")
	testutil.Until(t, 5*time.Second, func() (bool, string) {
		return strings.Contains(stderr.String(), "agent in the pod"), "stderr: " + stderr.String()
	})
	require.NoError(t, cl.Close())
	require.NotEmpty(t, c.left(t, tr.Instance()), "the Lease stays until the transport's Close")
	require.NoError(t, tr.Close())
	c.noneLeft(t, tr.Instance())
	testutil.NoneLeft(t, m, 10*time.Second)
}

// A turn cancelled through its ctx sends session/cancel, and the agent's
// answer ends it.
func TestKubeCancel(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	tr, _ := c.transport(t, fakeagent.Script{Turns: []fakeagent.Turn{
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {WaitCancel: true}}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("next"))}},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	// The turn runs once the agent says so: cancel then.
	cl, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/", OnUpdate: func(acp.Update) { cancel() }})
	require.NoError(t, err)
	defer cl.Close()
	testutil.Returns(t, 30*time.Second, "the cancelled turn", func() {
		resp, err := cl.GenerateCtx(ctx, acphost.Request{Prompt: "slow"})
		if err != nil {
			assert.ErrorIs(t, err, context.Canceled)
		} else {
			assert.Equal(t, acp.StopCancelled, resp.StopReason)
		}
	})
	// The same agent takes the next turn: the cancel was confirmed, no restart.
	resp, err := cl.Generate(acphost.Request{Prompt: "next"})
	require.NoError(t, err)
	assert.Equal(t, "next", resp.Text)
	require.NoError(t, cl.Close())
}

// The agent's own exit status comes back as an *acphost.ExitError over
// both exec protocols.
func TestKubeCrashExitStatus(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	for _, proto := range []string{"websocket", "spdy"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			tr, _ := c.transport(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Exit: new(7)}}}}})
			tr.Protocol = proto
			cl, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/"})
			require.NoError(t, err)
			defer cl.Close()
			_, err = cl.Generate(acphost.Request{Prompt: "crash"})
			var exit *acphost.ExitError
			require.ErrorAs(t, err, &exit)
			assert.Equal(t, 7, exit.ExitCode)
			assert.True(t, exit.DuringTurn)
		})
	}
}

// Half-close: Stop closes the agent's stdin and the agent's clean exit
// (status 0) arrives, over both protocols, well within the grace.
func TestKubeHalfCloseOverBothProtocols(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	for _, proto := range []string{"websocket", "spdy"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			tr, m := c.transport(t, fakeagent.Script{})
			tr.Protocol = proto
			l, err := tr.Dial(context.Background())
			require.NoError(t, err)
			_, err = l.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n"))
			require.NoError(t, err)
			buf := make([]byte, 4096)
			n, err := l.Read(buf)
			require.NoError(t, err)
			require.Contains(t, string(buf[:n]), `"id":1`)
			start := time.Now()
			l.Stop(20 * time.Second)
			assert.Less(t, time.Since(start), 15*time.Second, "the agent ended at EOF, not at the grace")
			<-l.Done()
			var exit *acphost.ExitError
			require.ErrorAs(t, l.Err(), &exit)
			assert.Equal(t, 0, exit.ExitCode)
			_, err = l.Write([]byte("{}\n"))
			assert.Error(t, err, "a write after Stop fails")
			require.NoError(t, tr.Close())
			c.noneLeft(t, tr.Instance())
			testutil.NoneLeft(t, m, 10*time.Second)
		})
	}
}

// A Write blocked on an agent that stopped reading ends once Stop is
// called, and Stop ends the agent that ignores EOF and SIGTERM.
func TestKubeStopEndsABlockedWrite(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	tr, m := c.transport(t, fakeagent.Script{IgnoreEOF: true, IgnoreSIGTERM: true, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{StopReading: true}}}}})
	l, err := tr.Dial(context.Background())
	require.NoError(t, err)
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"x"}]}}`,
	}
	for _, line := range lines {
		_, err := l.Write([]byte(line + "\n"))
		require.NoError(t, err)
	}
	blocked := make(chan error, 1)
	go func() {
		big := []byte(`{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", 1<<20) + `"}` + "\n")
		for {
			if _, err := l.Write(big); err != nil {
				blocked <- err
				return
			}
		}
	}()
	// The writes fill the stream's windows and block; nothing is read.
	select {
	case err := <-blocked:
		t.Fatalf("a write failed before Stop: %v", err)
	case <-time.After(2 * time.Second):
	}
	testutil.Returns(t, 40*time.Second, "Stop", func() { l.Stop(time.Second) })
	select {
	case err := <-blocked:
		assert.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked Write did not end at Stop")
	}
	require.NoError(t, tr.Close())
	c.noneLeft(t, tr.Instance())
	testutil.NoneLeft(t, m, 10*time.Second)
}

// Host tools live on the host's loopback, which a pod does not share: the
// session's open fails with ErrUnsupported, not with a server the agent
// cannot reach.
func TestKubeRefusesHostTools(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	tr, _ := c.transport(t, fakeagent.Script{})
	cl, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/", HostTools: noTools{}})
	if err == nil {
		defer cl.Close()
		_, err = cl.Generate(acphost.Request{Prompt: "x"})
	}
	require.ErrorIs(t, err, acphost.ErrUnsupported)
}

type noTools struct{}

func (noTools) ServeSession(*acphost.Session) ([]acp.MCPServer, func(), error) {
	return nil, func() {}, errors.New("never served")
}
