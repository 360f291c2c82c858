package kube_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// A Pool over the transport: 24 sessions at once, two per agent over 12
// pods, each running a turn, with a spare kept warm; closing the pool and
// the transport leaves no pod.
func TestKubePoolSessionsAcrossPods(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	const pods, perPod = 12, 2
	turns := make([]fakeagent.Turn, perPod)
	for i := range turns {
		turns[i] = fakeagent.Turn{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("pooled"))}}
	}
	tr, m := c.transport(t, fakeagent.Script{Turns: turns})
	start := time.Now()
	p, err := acphost.NewPool(context.Background(), acphost.PoolOptions{
		Agent: acphost.ACPOptions{Transport: tr, Dir: "/"},
		Min:   pods, Max: pods + 1, SessionsPerProcess: perPod, Spare: 1,
	})
	require.NoError(t, err)
	t.Logf("%d agents in pods started at once: %v", pods, time.Since(start).Round(time.Millisecond))
	var wg sync.WaitGroup
	errs := make(chan error, pods*perPod)
	start = time.Now()
	for i := range pods * perPod {
		wg.Go(func() {
			s, err := p.NewSession(context.Background(), acphost.SessionOptions{})
			if err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
				return
			}
			resp, err := s.Generate(acphost.Request{Prompt: "go"})
			if err == nil && resp.Text != "pooled" {
				err = fmt.Errorf("answered %q", resp.Text)
			}
			if err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d sessions opened and ran a turn at once: %v", pods*perPod, time.Since(start).Round(time.Millisecond))
	assert.GreaterOrEqual(t, len(c.running(t, tr.Instance(), nil)), pods)
	testutil.Returns(t, 2*time.Minute, "the pool's Close", func() { require.NoError(t, p.Close()) })
	require.NoError(t, tr.Close())
	c.noneLeft(t, tr.Instance())
	testutil.NoneLeft(t, m, 20*time.Second)
}
