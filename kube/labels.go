package kube

import (
	"crypto/rand"
	"encoding/hex"
)

const (
	// ManagedByLabel is set to ManagedBy on every pod, claim and Lease a
	// Transport makes.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedBy is ManagedByLabel's value.
	ManagedBy = "acphost"
	// InstanceLabel names the host instance (Transport.Instance) that made
	// a pod, claim or Lease.
	InstanceLabel = "acphost.dev/instance"
)

// newInstance is a fresh host-instance id, a DNS label.
func newInstance() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "acphost-" + hex.EncodeToString(b)
}

// objectName is a new name for a pod or claim: "acphost-" and ten random
// hex digits.
func objectName() string {
	b := make([]byte, 5)
	rand.Read(b)
	return "acphost-" + hex.EncodeToString(b)
}
