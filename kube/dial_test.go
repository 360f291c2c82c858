package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// A pod that never gets Ready: the dial's ctx ends it, and the pod goes.
func TestKubeDialEndsWithItsCtxAndLeavesNoPod(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	tr, _ := c.transport(t, fakeagent.Script{})
	tr.Template.Spec.Containers = []corev1.Container{{Name: "agent", ReadinessProbe: &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		PeriodSeconds: 1,
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := tr.Dial(ctx)
	require.ErrorIs(t, err, acphost.ErrLinkLost)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	testutil.Until(t, 30*time.Second, func() (bool, string) {
		pods := c.running(t, tr.Instance(), nil)
		return len(pods) == 0, "pods left"
	})
	require.NoError(t, tr.Close())
	c.noneLeft(t, tr.Instance())
}

// An image the node does not have (and may not pull) fails the dial at
// once with the kubelet's reason, and leaves no pod.
func TestKubeDialFailsOnAMissingImage(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	tr, _ := c.transport(t, fakeagent.Script{})
	tr.Image = "localhost/acphost-kube/missing:1"
	start := time.Now()
	_, err := tr.Dial(context.Background())
	require.ErrorIs(t, err, acphost.ErrLinkLost)
	assert.ErrorContains(t, err, "ErrImageNeverPull")
	assert.Less(t, time.Since(start), 30*time.Second)
	require.NoError(t, tr.Close())
	c.noneLeft(t, tr.Instance())
}

// Close while a Dial waits for its pod: the Dial fails, and the pod, the
// Lease and everything else of the transport are gone when Close returns.
func TestKubeCloseDuringDialLeavesNothing(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	tr, _ := c.transport(t, fakeagent.Script{})
	tr.Template.Spec.Containers = []corev1.Container{{Name: "agent", ReadinessProbe: &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		PeriodSeconds: 1,
	}}}
	dialed := make(chan error, 1)
	go func() {
		_, err := tr.Dial(context.Background())
		dialed <- err
	}()
	testutil.Until(t, 30*time.Second, func() (bool, string) {
		return tr.Instance() != "" && len(c.running(t, tr.Instance(), nil)) == 1, "no pod made yet"
	})
	testutil.Returns(t, time.Minute, "Close", func() { require.NoError(t, tr.Close()) })
	c.noneLeft(t, tr.Instance())
	select {
	case err := <-dialed:
		require.ErrorIs(t, err, acphost.ErrLinkLost)
	case <-time.After(10 * time.Second):
		t.Fatal("the Dial did not end with Close")
	}
}
