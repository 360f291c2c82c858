package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/remote"
)

// The agent-sandbox resources, reached through the dynamic client: the
// typed module (sigs.k8s.io/agent-sandbox) would bring controller-runtime
// and a second k8s.io minor into every program that imports this package,
// for three fields.
var (
	// ClaimResource is agent-sandbox's SandboxClaim.
	ClaimResource = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	// SandboxResource is agent-sandbox's Sandbox, which names a claim's pod.
	SandboxResource = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}
)

// podNameAnnotation, on a Sandbox, names its pod when that differs from
// the Sandbox's own name (a pod adopted from a warm pool by an older
// controller).
const podNameAnnotation = "agents.x-k8s.io/pod-name"

// claimFor is the SandboxClaim Dial creates: from pool, owned by the host
// instance's Lease, labelled, and expiring (deleted by the controller,
// policy Delete) at shutdown unless the host renews it.
func claimFor(pool, instance string, owner *metav1.OwnerReference, shutdown time.Time) *unstructured.Unstructured {
	meta := map[string]any{
		"generateName": "acphost-",
		"labels": map[string]any{
			ManagedByLabel: ManagedBy,
			InstanceLabel:  instance,
		},
	}
	if owner != nil {
		meta["ownerReferences"] = []any{map[string]any{
			"apiVersion": owner.APIVersion,
			"kind":       owner.Kind,
			"name":       owner.Name,
			"uid":        string(owner.UID),
		}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ClaimResource.GroupVersion().String(),
		"kind":       "SandboxClaim",
		"metadata":   meta,
		"spec": map[string]any{
			"warmPoolRef": map[string]any{"name": pool},
			"lifecycle": map[string]any{
				"shutdownTime":   shutdown.UTC().Format(time.RFC3339),
				"shutdownPolicy": "Delete",
			},
		},
	}}
}

// dialClaim claims a pod from the warm pool, waits for the claim to be
// Ready and bound, and starts the watchdog and the agent in its pod.
func (h *host) dialClaim(ctx context.Context, t *Transport) (acphost.Link, error) {
	if t.ReadOnlyRootFilesystem || len(t.ReadOnlyMounts) > 0 || len(t.Template.Spec.Containers) > 0 {
		return nil, dialError(fmt.Errorf("kube: with WarmPool the pool's SandboxTemplate is the pod: set the template, read-only root and mounts there"))
	}
	argv, err := t.agentArgv()
	if err != nil {
		return nil, dialError(err)
	}
	cmds, err := remote.NewCommands(argv, t.Env, t.Dir)
	if err != nil {
		return nil, dialError(err)
	}
	ctx, done := h.dialCtx(ctx, t.startTimeout())
	defer done()
	h.startHeartbeat()
	claims := h.dyn.Resource(ClaimResource).Namespace(h.namespace)
	made, err := claims.Create(ctx, claimFor(t.WarmPool, h.instance, nil, time.Now().Add(h.lease)), metav1.CreateOptions{})
	if err != nil {
		return nil, dialError(fmt.Errorf("creating a SandboxClaim on pool %s: %w", t.WarmPool, err))
	}
	l := &link{h: h, claim: made.GetName()}
	if !h.track(l) {
		l.Stop(0)
		return nil, dialError(errClosed)
	}
	sandbox, err := h.waitClaim(ctx, made)
	if err != nil {
		l.Stop(0)
		return nil, dialError(err)
	}
	pod, err := h.claimedPod(ctx, sandbox)
	if err != nil {
		l.Stop(0)
		return nil, dialError(err)
	}
	ci, err := containerIndex(pod.Spec.Containers, t.Container)
	if err != nil {
		l.Stop(0)
		return nil, dialError(err)
	}
	l.mu.Lock()
	l.pod, l.container = pod.Name, pod.Spec.Containers[ci].Name
	stopping := l.stopping
	l.mu.Unlock()
	if stopping { // Close ran meanwhile, before the pod was known: it deleted the claim
		return nil, dialError(errClosed)
	}
	if err := h.waitReady(ctx, pod); err != nil {
		l.Stop(0)
		return nil, dialError(err)
	}
	if err := h.start(ctx, l, cmds, t.Protocol); err != nil {
		l.Stop(0)
		return nil, err
	}
	t.setWhere(fmt.Sprintf("pod %s from warm pool %s in %s%s", pod.Name, t.WarmPool, h.namespace, t.contextWord()))
	t.setContainment(Describe(pod, l.container))
	return l, nil
}

// waitClaim watches the claim until its Ready condition is True and it
// names its Sandbox.
func (h *host) waitClaim(ctx context.Context, claim *unstructured.Unstructured) (string, error) {
	claims := h.dyn.Resource(ClaimResource).Namespace(h.namespace)
	w, err := claims.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", claim.GetName()).String(),
		ResourceVersion: claim.GetResourceVersion(),
	})
	if err != nil {
		return "", fmt.Errorf("watching claim %s: %w", claim.GetName(), err)
	}
	defer w.Stop()
	if name, ok := claimBound(claim); ok {
		return name, nil
	}
	for {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("claim %s on pool not ready: %w", claim.GetName(), context.Cause(ctx))
		case ev, open := <-w.ResultChan():
			if !open {
				c, err := claims.Get(ctx, claim.GetName(), metav1.GetOptions{})
				if err != nil {
					return "", fmt.Errorf("claim %s: %w", claim.GetName(), err)
				}
				return h.waitClaim(ctx, c)
			}
			switch ev.Type {
			case watch.Deleted:
				return "", fmt.Errorf("claim %s was deleted before it was ready", claim.GetName())
			case watch.Error:
				return "", fmt.Errorf("watching claim %s: %v", claim.GetName(), apierrors.FromObject(ev.Object))
			}
			c, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if name, ok := claimBound(c); ok {
				return name, nil
			}
		}
	}
}

// claimBound is the claim's Sandbox once it is Ready.
func claimBound(c *unstructured.Unstructured) (string, bool) {
	name, _, _ := unstructured.NestedString(c.Object, "status", "sandbox", "name")
	conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" && name != "" {
			return name, true
		}
	}
	return "", false
}

// claimedPod is the pod of a Sandbox: the one its annotation names, else
// the Sandbox's own name.
func (h *host) claimedPod(ctx context.Context, sandbox string) (*corev1.Pod, error) {
	name := sandbox
	sb, err := h.dyn.Resource(SandboxResource).Namespace(h.namespace).Get(ctx, sandbox, metav1.GetOptions{})
	if err == nil {
		if n := sb.GetAnnotations()[podNameAnnotation]; n != "" {
			name = n
		}
	}
	pod, err := h.cs.CoreV1().Pods(h.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the pod of sandbox %s: %w", sandbox, err)
	}
	return pod, nil
}

// renewClaim moves the claim's shutdown time a lease ahead of now.
func (h *host) renewClaim(ctx context.Context, claim string, now time.Time) {
	patch := fmt.Appendf(nil, `{"spec":{"lifecycle":{"shutdownTime":%q}}}`, now.Add(h.lease).UTC().Format(time.RFC3339))
	_, _ = h.dyn.Resource(ClaimResource).Namespace(h.namespace).Patch(ctx, claim, types.MergePatchType, patch, metav1.PatchOptions{})
}

// deleteClaim deletes the claim and waits until it is gone: in the
// foreground, so that its Sandbox and pod go first. The pool makes a new
// one.
func (h *host) deleteClaim(ctx context.Context, claim string) {
	claims := h.dyn.Resource(ClaimResource).Namespace(h.namespace)
	err := claims.Delete(ctx, claim, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationForeground)})
	for err == nil && ctx.Err() == nil {
		var c *unstructured.Unstructured
		c, err = claims.Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return
		}
		var w watch.Interface
		w, err = claims.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", claim).String(),
			ResourceVersion: c.GetResourceVersion(),
		})
		if err != nil {
			return
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				w.Stop()
				return
			}
		}
		w.Stop()
	}
}
