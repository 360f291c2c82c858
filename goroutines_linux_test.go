//go:build linux

package acphost_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/require"
)

// An idle warm agent holds three goroutines: its stderr pump, its read
// loop and its dispatcher. Nothing waits for its exit or supervises it
// (the host's one exit watcher waits for every agent's pidfd), and after
// Close none of them is left, the watcher's included.
func TestWarmAgentsHoldThreeGoroutinesEach(t *testing.T) {
	c, err := acphost.StartFake(t, fakeagent.Script{}, acphost.ACPOptions{})
	require.NoError(t, err)
	if c.Containment().Mode != acphost.ContainCgroup {
		t.Skipf("LOUD: no cgroups here, so each agent keeps a locked thread, and the goroutine waiting on it, for its parent-death signal: %v", c.Containment().Reason)
	}
	require.NoError(t, c.Close())
	settle := func(want func(int) bool) int {
		n := runtime.NumGoroutine()
		for deadline := time.Now().Add(5 * time.Second); !want(n) && time.Now().Before(deadline); n = runtime.NumGoroutine() {
			time.Sleep(10 * time.Millisecond)
		}
		return n
	}
	const hostWide = 2                                 // the exit watcher, and the cgroup watcher's waiter
	base := settle(func(g int) bool { return g <= 2 }) // the test and its main: the first agent left nothing
	const n = 16
	cs := make([]*acphost.ACPClient, n)
	for i := range cs {
		cs[i], err = acphost.StartFake(t, fakeagent.Script{}, acphost.ACPOptions{})
		require.NoError(t, err)
	}
	grown := settle(func(g int) bool { return g <= base+3*n+hostWide }) - base
	require.LessOrEqual(t, grown, 3*n+hostWide, "goroutines for %d idle warm agents (the exit watcher is one for all)", n)
	for _, c := range cs {
		require.NoError(t, c.Close())
	}
	require.LessOrEqual(t, settle(func(g int) bool { return g <= base }), base, "goroutines left after Close")
}
