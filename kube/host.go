package kube

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/acphost/acphost"
)

// host is one Transport's host instance: its clients, its Lease and
// heartbeat, and the links it holds.
type host struct {
	cfg       *rest.Config
	cs        kubernetes.Interface
	dyn       dynamic.Interface
	namespace string
	context   string
	instance  string
	lease     time.Duration
}

func newHost(cfg *rest.Config, cs kubernetes.Interface, dyn dynamic.Interface, ns, kctx string, lease time.Duration) *host {
	return &host{cfg: cfg, cs: cs, dyn: dyn, namespace: ns, context: kctx, instance: newInstance(), lease: lease}
}

func (h *host) dialPod(ctx context.Context, t *Transport) (acphost.Link, error) {
	return nil, dialError(errors.New("not yet"))
}

func (h *host) dialClaim(ctx context.Context, t *Transport) (acphost.Link, error) {
	return nil, dialError(errors.New("not yet"))
}

func (h *host) close() error { return nil }

var _ sync.Locker
