package kube_test

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
)

// Measurements, reported and never judged (the machine is shared):
// start latency of an agent in a new pod, in a warm-pool claim and from a
// Pool spare; host memory and goroutines per live link; what one node
// holds.
func TestKubeMeasurements(t *testing.T) {
	c := needCluster(t)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hi"))}}}}

	// Start → initialize answered, one at a time.
	startOne := func(tr acphost.Transport) time.Duration {
		start := time.Now()
		cl, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/"})
		require.NoError(t, err)
		d := time.Since(start)
		require.NoError(t, cl.Close())
		return d
	}
	tr, _ := c.transport(t, script)
	startOne(tr) // the first makes the Lease
	var cold []time.Duration
	for range 5 {
		cold = append(cold, startOne(tr))
	}
	t.Logf("new pod → initialize answered: %s", spread(cold))

	if c.sandbox() {
		pool := c.warmPool(t, 3)
		wtr, _ := c.transport(t, script)
		wtr.Image, wtr.PullPolicy, wtr.WarmPool = "", "", pool
		var warm []time.Duration
		for range 5 {
			c.waitPoolReady(t, pool, 3)
			warm = append(warm, startOne(wtr))
		}
		t.Logf("warm-pool claim → initialize answered: %s", spread(warm))
	}

	// A Pool's warm processes each hold their session already open.
	p, err := acphost.NewPool(context.Background(), acphost.PoolOptions{Agent: acphost.ACPOptions{Transport: tr, Dir: "/"}, Min: 3, Max: 3})
	require.NoError(t, err)
	var spare []time.Duration
	for range 3 {
		start := time.Now()
		_, err := p.NewSession(context.Background(), acphost.SessionOptions{})
		require.NoError(t, err)
		spare = append(spare, time.Since(start))
	}
	require.NoError(t, p.Close())
	t.Logf("Pool warm process → session: %s", spread(spare))

	// Host memory per live link: heap and goroutines, 10 links held.
	const n = 10
	heap0, g0 := heap()
	avail0 := memAvailable()
	var links []acphost.Link
	for range n {
		l, err := tr.Dial(context.Background())
		require.NoError(t, err)
		_, err = l.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n"))
		require.NoError(t, err)
		buf := make([]byte, 4096)
		_, err = l.Read(buf)
		require.NoError(t, err)
		links = append(links, l)
	}
	heap1, g1 := heap()
	avail1 := memAvailable()
	t.Logf("host per live link: %.0f KiB heap, %.1f goroutines (container.Transport: two kubectl processes, ~25 MiB each)",
		float64(heap1-heap0)/n/1024, float64(g1-g0)/n)
	if avail0 > 0 && avail1 > 0 {
		t.Logf("node memory per idle agent pod (MemAvailable, noisy on a shared machine): %.1f MiB", float64(avail0-avail1)/n/1024/1024)
	}
	for _, l := range links {
		l.Stop(0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, node := range nodes.Items {
		t.Logf("node %s allocatable: %s pods, %s memory, %s cpu", node.Name,
			node.Status.Allocatable.Pods(), node.Status.Allocatable.Memory(), node.Status.Allocatable.Cpu())
	}
}

func (c *cluster) sandbox() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.dyn.Resource(poolResource).Namespace(c.ns).List(ctx, metav1.ListOptions{Limit: 1})
	return err == nil || os.Getenv("ACPHOST_REQUIRE_KUBE") == "1"
}

func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[0].Round(10*time.Microsecond).String() + " min, " + s[len(s)/2].Round(10*time.Microsecond).String() + " median, " + s[len(s)-1].Round(10*time.Microsecond).String() + " max"
}

func heap() (uint64, int) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, runtime.NumGoroutine()
}

// memAvailable is the machine's MemAvailable in bytes (0 if unknown).
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
