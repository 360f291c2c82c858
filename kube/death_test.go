package kube_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/acphost/acphost/kube"
)

// The child host: the test binary re-executed with these set dials
// agents, says what it made on stdout and waits to be killed.
const (
	envChildHost   = "ACPHOST_KUBE_TEST_CHILD_HOST" // the number of agents
	envChildMark   = "ACPHOST_KUBE_TEST_CHILD_MARK"
	envChildPool   = "ACPHOST_KUBE_TEST_CHILD_POOL" // a warm pool to claim from
	childLease     = 3 * time.Second
	childReadyWord = "child-host-ready"
)

func TestMain(m *testing.M) {
	if n := os.Getenv(envChildHost); n != "" {
		os.Exit(childHost(n))
	}
	os.Exit(m.Run())
}

// childHost dials n agents that ignore EOF and SIGTERM and leave a
// grandchild, each in a client that has run initialize, then waits.
func childHost(n string) int {
	count, _ := strconv.Atoi(n)
	_, _, env, err := fakeagent.Command(fakeagent.Script{IgnoreEOF: true, IgnoreSIGTERM: true, Grandchild: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tr := &kube.Transport{Image: agentImage, PullPolicy: corev1.PullNever, Command: agentCommand,
		Env: append(env, os.Getenv(envChildMark)), Lease: childLease, WarmPool: os.Getenv(envChildPool)}
	var where []string
	for range count {
		c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/"})
		if err != nil {
			fmt.Fprintln(os.Stderr, "child host:", err)
			return 1
		}
		defer c.Close()
		where = append(where, tr.Where())
	}
	fmt.Println(childReadyWord, tr.Instance(), strings.Join(where, "; "))
	select {} // until killed
}

// The host is SIGKILLed with agents running that ignore EOF and SIGTERM
// and left a grandchild: no agent process runs on within seconds (the
// watchdog's stream ends with the host's connection: it kills the
// agent's marked processes and asks the keeper to end the pod), no pod of
// the dead host stays Running, and the next host's sweep, once the Lease
// has expired, leaves nothing of it.
func TestKubeHostDeathLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	hostDeath(t, c, "", 3)
}

func hostDeath(t *testing.T, c *cluster, pool string, agents int) {
	m := mark()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildHost+"="+strconv.Itoa(agents), envChildMark+"="+m, envChildPool+"="+pool)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the child host did not get its agents running")
	fields := strings.Fields(line)
	require.GreaterOrEqual(t, len(fields), 2)
	require.Equal(t, childReadyWord, fields[0])
	instance := fields[1]
	t.Logf("child host %s: %s", instance, strings.Join(fields[2:], " "))
	require.GreaterOrEqual(t, len(testutil.WithEnv(m)), 2*agents, "each agent and its grandchild run on this node")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	cmd.Wait()

	testutil.NoneLeft(t, m, 30*time.Second)
	processesGone := time.Since(killed)
	var pods []string // by name: a pool's pods carry the pool's labels, not ours
	for _, w := range strings.Split(strings.Join(fields[2:], " "), "; ") {
		if f := strings.Fields(w); len(f) > 1 && f[0] == "pod" {
			pods = append(pods, f[1])
		}
	}
	require.Len(t, pods, agents)
	testutil.Until(t, 60*time.Second, func() (bool, string) {
		running := c.running(t, instance, pods)
		return len(running) == 0, fmt.Sprintf("still running: %v", running)
	})
	podsEnded := time.Since(killed)
	// The next host: any Transport sweeps at its first Dial and with each
	// heartbeat; here Sweep is called directly. The claims need none: the
	// controller deletes them at their shutdown time.
	testutil.Until(t, 60*time.Second, func() (bool, string) {
		if pool == "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			kube.Sweep(ctx, c.cs, c.ns)
			cancel()
		}
		left := c.left(t, instance)
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	})
	t.Logf("host SIGKILLed: no agent process after %v, no pod running after %v, nothing left after %v (lease %v)",
		processesGone.Round(time.Millisecond), podsEnded.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), childLease)
}

// running lists the pods of instance, and those named, that are not over.
func (c *cluster) running(t testing.TB, instance string, names []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := c.cs.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var out []string
	for _, p := range pods.Items {
		if p.Labels[kube.InstanceLabel] != instance && !slices.Contains(names, p.Name) {
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p.Name+" "+string(p.Status.Phase))
		}
	}
	return out
}
