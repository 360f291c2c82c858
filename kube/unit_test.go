package kube

import (
	"errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/acphost/acphost"
)

// The pod's safe defaults fill what the template leaves open, and only
// that; restartPolicy, the keeper, labels and owner are always ours.
func TestPodDefaultsFillOnlyWhatTheTemplateLeavesOpen(t *testing.T) {
	owner := &metav1.OwnerReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Name: "acphost-x", UID: "u1"}
	tr := &Transport{Image: "img:1", PullPolicy: corev1.PullNever, MaxLifetime: 90 * time.Second}
	pod, i, err := tr.podFor("acphost-x", owner)
	require.NoError(t, err)
	require.Equal(t, 0, i)
	c := pod.Spec.Containers[0]
	assert.Equal(t, "agent", c.Name)
	assert.Equal(t, "img:1", c.Image)
	assert.Equal(t, corev1.PullNever, c.ImagePullPolicy)
	assert.Equal(t, []string{"sh", "-c", keeperScript, "acphost-keeper", "180", "20"}, c.Command)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	assert.False(t, *pod.Spec.AutomountServiceAccountToken)
	assert.False(t, *pod.Spec.EnableServiceLinks)
	assert.Equal(t, int64(90), *pod.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.Spec.SecurityContext.SeccompProfile.Type)
	sc := c.SecurityContext
	assert.True(t, *sc.RunAsNonRoot)
	assert.Equal(t, int64(NonRootUID), *sc.RunAsUser)
	assert.Equal(t, int64(NonRootUID), *sc.RunAsGroup)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Nil(t, sc.ReadOnlyRootFilesystem)
	assert.Equal(t, map[string]string{ManagedByLabel: ManagedBy, InstanceLabel: "acphost-x"}, pod.Labels)
	assert.Equal(t, []metav1.OwnerReference{*owner}, pod.OwnerReferences)
	assert.Regexp(t, `^acphost-[0-9a-f]{10}$`, pod.Name, "named by the dial, not the server")
	assert.Empty(t, pod.GenerateName)
	assert.Equal(t, "kube pod "+pod.Name+": non-root uid 65532, no capabilities, no privilege escalation, seccomp RuntimeDefault", Describe(pod, ""))

	// The template's own choices stand.
	tr = &Transport{
		Container: "main", ReadOnlyRootFilesystem: true, ReadOnlyMounts: []string{"/work"},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Name: "ignored", Labels: map[string]string{"team": "a", InstanceLabel: "forged"}},
			Spec: corev1.PodSpec{
				AutomountServiceAccountToken: new(true),
				RestartPolicy:                corev1.RestartPolicyAlways,
				RuntimeClassName:             new("gvisor"),
				SecurityContext:              &corev1.PodSecurityContext{RunAsUser: new(int64(1000)), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
				Containers: []corev1.Container{
					{Name: "sidecar", Image: "side:1"},
					{Name: "main", Image: "own:2", Command: []string{"agent", "--acp"},
						SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}},
						VolumeMounts:    []corev1.VolumeMount{{Name: "project", MountPath: "/work"}, {Name: "cache", MountPath: "/cache"}}},
				},
			},
		},
	}
	argv, err := tr.agentArgv()
	require.NoError(t, err)
	assert.Equal(t, []string{"agent", "--acp"}, argv, "the template's command is the agent's when Command is empty")
	pod, i, err = tr.podFor("acphost-y", nil)
	require.NoError(t, err)
	require.Equal(t, 1, i)
	c = pod.Spec.Containers[1]
	assert.Equal(t, "own:2", c.Image)
	assert.NotEqual(t, "ignored", pod.Name, "the template's name is never the pod's")
	assert.Equal(t, "a", pod.Labels["team"])
	assert.Equal(t, "acphost-y", pod.Labels[InstanceLabel])
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	assert.True(t, *pod.Spec.AutomountServiceAccountToken, "asked for by the template")
	assert.Nil(t, c.SecurityContext.RunAsUser, "the pod's uid stands")
	assert.Equal(t, []corev1.Capability{"NET_ADMIN"}, c.SecurityContext.Capabilities.Add)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.True(t, c.VolumeMounts[0].ReadOnly)
	assert.False(t, c.VolumeMounts[1].ReadOnly)
	assert.Equal(t, "keeper", map[bool]string{true: "keeper"}[c.Command[3] == "acphost-keeper"])
	assert.Equal(t, "kube pod "+pod.Name+": non-root uid 1000, default capabilities, no privilege escalation, seccomp Unconfined, read-only root fs, read-only /work, service account token mounted, runtime class gvisor", Describe(pod, "main"))
	side := pod.Spec.Containers[0]
	assert.Equal(t, []corev1.Capability{"ALL"}, side.SecurityContext.Capabilities.Drop, "every container is hardened")
	assert.Nil(t, side.Command, "other containers keep their own command")

	_, _, err = (&Transport{ReadOnlyMounts: []string{"/nope"}, Image: "x"}).podFor("i", nil)
	assert.ErrorContains(t, err, `"/nope"`)
	_, _, err = (&Transport{}).podFor("i", nil)
	assert.ErrorContains(t, err, "no image")
	_, _, err = (&Transport{Image: "x", Container: "nope"}).podFor("i", nil)
	assert.ErrorContains(t, err, `no container "nope"`)
	_, err = (&Transport{}).agentArgv()
	assert.ErrorContains(t, err, "no agent command")
}

// The claim's shape is agent-sandbox v1beta1's: warmPoolRef, a lifecycle
// that deletes it at an RFC 3339 shutdown time, our labels.
func TestClaimShape(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	c := claimFor("pool-a", "acphost-x", nil, at)
	assert.Regexp(t, `^acphost-[0-9a-f]{10}$`, c.GetName(), "named by the dial, not the server")
	assert.NotEqual(t, c.GetName(), claimFor("pool-a", "acphost-x", nil, at).GetName())
	unstructured.RemoveNestedField(c.Object, "metadata", "name")
	assert.Equal(t, map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
		"kind":       "SandboxClaim",
		"metadata": map[string]any{
			"labels": map[string]any{ManagedByLabel: ManagedBy, InstanceLabel: "acphost-x"},
		},
		"spec": map[string]any{
			"warmPoolRef": map[string]any{"name": "pool-a"},
			"lifecycle":   map[string]any{"shutdownTime": "2026-12-06T10:00:00Z", "shutdownPolicy": "Delete"},
		},
	}, c.Object)
	_, err := c.MarshalJSON()
	require.NoError(t, err)

	_, ok := claimBound(c)
	assert.False(t, ok, "no status yet")
	c.Object["status"] = map[string]any{"sandbox": map[string]any{"name": "sb-1"}}
	_, ok = claimBound(c)
	assert.False(t, ok, "named but not Ready")
	c.Object["status"] = map[string]any{"sandbox": map[string]any{"name": "sb-1"}, "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	name, ok := claimBound(c)
	assert.True(t, ok)
	assert.Equal(t, "sb-1", name)
}

func TestWhereBeforeAnyDial(t *testing.T) {
	assert.Equal(t, "a new pod in ns1 on ctx1", (&Transport{Namespace: "ns1", Context: "ctx1"}).Where())
	assert.Equal(t, "a new pod in the context's namespace", (&Transport{}).Where())
	assert.Equal(t, "warm pool p in ns1", (&Transport{WarmPool: "p", Namespace: "ns1"}).Where())
	assert.Equal(t, "", (&Transport{}).Containment())
	assert.Equal(t, "", (&Transport{}).Instance())
}

// An exec's end: its exit status is the agent's (128+N a signal), any
// other error the stream's.
func TestExitOf(t *testing.T) {
	var exit *acphost.ExitError
	require.ErrorAs(t, exitOf(nil), &exit)
	assert.Equal(t, 0, exit.ExitCode)
	require.ErrorAs(t, exitOf(utilexec.CodeExitError{Err: errors.New("x"), Code: 7}), &exit)
	assert.Equal(t, 7, exit.ExitCode)
	require.ErrorAs(t, exitOf(utilexec.CodeExitError{Err: errors.New("x"), Code: 137}), &exit)
	assert.Equal(t, -1, exit.ExitCode)
	assert.Equal(t, "killed", exit.Signal)
	err := exitOf(errors.New("connection reset"))
	assert.ErrorIs(t, err, acphost.ErrLinkLost)
	var lost *acphost.LinkError
	require.ErrorAs(t, err, &lost)
	assert.Equal(t, "kube", lost.Transport)
}

func TestSweepJudgesExpiryWithSlack(t *testing.T) {
	now := time.Now()
	lease := func(renewed time.Time) *leaseT {
		return &leaseT{Spec: leaseSpec{RenewTime: new(metav1.NewMicroTime(renewed)), LeaseDurationSeconds: new(int32(10))}}
	}
	assert.False(t, expired(lease(now.Add(-15*time.Second)), now), "past its duration, within the slack")
	assert.True(t, expired(lease(now.Add(-21*time.Second)), now))
	assert.False(t, expired(&leaseT{}, now), "a Lease without times is not ours to judge")
}

type (
	leaseT    = coordinationv1.Lease
	leaseSpec = coordinationv1.LeaseSpec
)
