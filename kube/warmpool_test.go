package kube_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/testutil"
)

var (
	templateResource = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	poolResource     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
)

// needSandbox skips the test (fails under ACPHOST_REQUIRE_KUBE=1) unless
// agent-sandbox's CRDs are installed.
func (c *cluster) needSandbox(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.dyn.Resource(poolResource).Namespace(c.ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err == nil {
		return
	}
	if os.Getenv("ACPHOST_REQUIRE_KUBE") == "1" {
		t.Fatalf("agent-sandbox (its CRDs and controller with --extensions) is required by ACPHOST_REQUIRE_KUBE=1: %v", err)
	}
	t.Skipf("SKIPPED, NOT PASSED: agent-sandbox is not installed: %v", err)
}

// warmPool makes a SandboxTemplate of the test image and a SandboxWarmPool
// of replicas from it, waits until they are ready, and deletes both when
// the test ends.
func (c *cluster) warmPool(t testing.TB, replicas int) string {
	t.Helper()
	c.needSandbox(t)
	name := "acphost-test-" + mark()[len("ACPHOST_TEST_MARK="):]
	ctx := context.Background()
	tpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
		"kind":       "SandboxTemplate",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"networkPolicyManagement": "Unmanaged",
			"podTemplate": map[string]any{
				"metadata": map[string]any{},
				"spec": map[string]any{
					"automountServiceAccountToken": false,
					"enableServiceLinks":           false,
					"securityContext": map[string]any{
						"runAsNonRoot": true, "runAsUser": int64(65532), "runAsGroup": int64(65532),
						"seccompProfile": map[string]any{"type": "RuntimeDefault"},
					},
					"containers": []any{map[string]any{
						"name":            "agent",
						"image":           agentImage,
						"imagePullPolicy": "Never",
						// The pod's main process holds it; the agent is exec'd.
						"command": []any{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"},
						"securityContext": map[string]any{
							"allowPrivilegeEscalation": false,
							"capabilities":             map[string]any{"drop": []any{"ALL"}},
						},
					}},
				},
			},
		},
	}}
	_, err := c.dyn.Resource(templateResource).Namespace(c.ns).Create(ctx, tpl, metav1.CreateOptions{})
	require.NoError(t, err)
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
		"kind":       "SandboxWarmPool",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"replicas":           int64(replicas),
			"sandboxTemplateRef": map[string]any{"name": name},
		},
	}}
	_, err = c.dyn.Resource(poolResource).Namespace(c.ns).Create(ctx, pool, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c.dyn.Resource(poolResource).Namespace(c.ns).Delete(ctx, name, metav1.DeleteOptions{})
		c.dyn.Resource(templateResource).Namespace(c.ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
	c.waitPoolReady(t, name, replicas)
	return name
}

func (c *cluster) poolReady(t testing.TB, name string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := c.dyn.Resource(poolResource).Namespace(c.ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	n, _, _ := unstructured.NestedInt64(p.Object, "status", "readyReplicas")
	return n
}

func (c *cluster) waitPoolReady(t testing.TB, name string, replicas int) {
	t.Helper()
	testutil.Until(t, 90*time.Second, func() (bool, string) {
		n := c.poolReady(t, name)
		return n >= int64(replicas), fmt.Sprintf("pool %s: %d of %d ready", name, n, replicas)
	})
}

// A warm-pool claim runs a turn in the pod it adopted; Close deletes the
// claim, and the pool refills.
func TestKubeWarmPoolClaim(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	pool := c.warmPool(t, 2)
	tr, m := c.transport(t, askAndSay)
	tr.Image, tr.PullPolicy = "", ""
	tr.WarmPool = pool
	start := time.Now()
	cl, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/", OnPermission: allow})
	require.NoError(t, err)
	t.Logf("warm claim → initialize answered: %v", time.Since(start).Round(time.Millisecond))
	resp, err := cl.Generate(acphost.Request{Prompt: "go"})
	require.NoError(t, err)
	assert.Contains(t, resp.Text, "done in the pod")
	assert.Regexp(t, `^pod \S+ from warm pool `+pool+` in `+c.ns, tr.Where())
	assert.Regexp(t, `^kube pod \S+: non-root uid 65532, no capabilities, no privilege escalation, seccomp RuntimeDefault$`, tr.Containment())
	require.NotEmpty(t, c.left(t, tr.Instance()), "the claim is held")
	require.NoError(t, cl.Close())
	require.NoError(t, tr.Close())
	c.noneLeft(t, tr.Instance())
	testutil.NoneLeft(t, m, 10*time.Second)
	c.waitPoolReady(t, pool, 2)
}

// A host holding claims is SIGKILLed: its agents end within seconds (the
// watchdog), and the controller deletes the claims once their shutdown
// time, no longer renewed, has passed — no other host needed.
func TestKubeWarmPoolHostDeath(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	pool := c.warmPool(t, 2)
	hostDeath(t, c, pool, 2)
}
