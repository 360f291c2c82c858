package kube

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		"name": objectName(), // as podFor's: a lost answer leaves a claim the dial can name
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
