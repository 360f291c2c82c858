package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/remote"
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

	ctx    context.Context // ended by close: ends dials in progress
	cancel context.CancelFunc

	mu        sync.Mutex
	leaseUID  types.UID // "" until the Lease is made
	links     map[*link]struct{}
	dials     sync.WaitGroup // dials in progress: close waits for them to clean up
	beating   bool
	heartbeat sync.WaitGroup
}

func newHost(cfg *rest.Config, cs kubernetes.Interface, dyn dynamic.Interface, ns, kctx string, lease time.Duration) *host {
	ctx, cancel := context.WithCancel(context.Background())
	return &host{cfg: cfg, cs: cs, dyn: dyn, namespace: ns, context: kctx, instance: newInstance(), lease: lease,
		ctx: ctx, cancel: cancel, links: map[*link]struct{}{}}
}

// dialCtx is ctx ended by the host's close too.
func (h *host) dialCtx(ctx context.Context, timeout time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	stop := context.AfterFunc(h.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// beginDial counts a dial in progress, so that close waits for what it
// made to be gone; false once the host is closed. The caller calls
// h.dials.Done when the dial returns.
func (h *host) beginDial() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx.Err() != nil {
		return false
	}
	h.dials.Add(1)
	return true
}

// openDial begins a dial for t: the commands it runs, and its ctx, ended
// by t's start timeout and by close, which waits for the dial (see
// beginDial). The caller calls end once the dial returns.
func (h *host) openDial(ctx context.Context, t *Transport) (cmds remote.Commands, dctx context.Context, end func(), err error) {
	if cmds, err = t.commands(); err != nil {
		return cmds, nil, nil, dialError(err)
	}
	if !h.beginDial() {
		return cmds, nil, nil, dialError(errClosed)
	}
	dctx, done := h.dialCtx(ctx, t.startTimeout())
	return cmds, dctx, func() { done(); h.dials.Done() }, nil
}

// track records l so that close finds it; false once the host is closed.
func (h *host) track(l *link) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx.Err() != nil {
		return false
	}
	h.links[l] = struct{}{}
	return true
}

func (h *host) forget(l *link) {
	h.mu.Lock()
	delete(h.links, l)
	h.mu.Unlock()
}

// labels are the labels of everything this host makes.
func (h *host) labels() map[string]string {
	return map[string]string{ManagedByLabel: ManagedBy, InstanceLabel: h.instance}
}

// ownerRef makes the host instance's Lease once (and starts its
// heartbeat) and returns an owner reference to it: what this host makes
// is garbage-collected with the Lease, which a later host deletes once it
// has expired (sweep).
func (h *host) ownerRef(ctx context.Context) (*metav1.OwnerReference, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.leaseUID == "" {
		uid, err := h.makeLease(ctx)
		if err != nil {
			return nil, err
		}
		h.leaseUID = uid
	}
	h.startBeatLocked()
	return &metav1.OwnerReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Name: h.instance, UID: h.leaseUID}, nil
}

// startHeartbeat starts the heartbeat once (claims need it, not the
// Lease: their shutdown time is the cluster's own clock on them).
func (h *host) startHeartbeat() {
	h.mu.Lock()
	h.startBeatLocked()
	h.mu.Unlock()
}

func (h *host) startBeatLocked() {
	if !h.beating && h.ctx.Err() == nil {
		h.beating = true
		h.heartbeat.Add(1)
		go h.beat()
	}
}

func (h *host) makeLease(ctx context.Context) (types.UID, error) {
	now := metav1.NewMicroTime(time.Now())
	who, _ := os.Hostname()
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: h.instance, Labels: h.labels()},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       new(fmt.Sprintf("%s/%d", who, os.Getpid())),
			LeaseDurationSeconds: new(int32(math.Ceil(h.lease.Seconds()))),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
	made, err := h.cs.CoordinationV1().Leases(h.namespace).Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("kube: making the host's Lease: %w", err)
	}
	return made.UID, nil
}

// beat renews the Lease and the claims' shutdown times every third of the
// lease, and sweeps what expired hosts left, until close.
func (h *host) beat() {
	defer h.heartbeat.Done()
	h.sweep()
	tick := time.NewTicker(h.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-tick.C:
		}
		h.renew()
		h.sweep()
	}
}

func (h *host) renew() {
	ctx, cancel := context.WithTimeout(h.ctx, h.lease/3)
	defer cancel()
	now := time.Now().UTC()
	h.mu.Lock()
	leased := h.leaseUID != ""
	h.mu.Unlock()
	if leased {
		patch := fmt.Appendf(nil, `{"spec":{"renewTime":%q}}`, now.Format(metav1.RFC3339Micro))
		_, err := h.cs.CoordinationV1().Leases(h.namespace).Patch(ctx, h.instance, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			// Swept (the host was stopped past its lease): what it owned
			// is gone; new pods get a new Lease.
			h.mu.Lock()
			h.leaseUID = ""
			h.mu.Unlock()
		}
	}
	h.mu.Lock()
	var claims []string
	for l := range h.links {
		if l.claim != "" {
			claims = append(claims, l.claim)
		}
	}
	h.mu.Unlock()
	for _, c := range claims {
		h.renewClaim(ctx, c, now)
	}
}

// sweep deletes the Leases of hosts that stopped renewing them (a lease
// and as much again for clocks that differ); the garbage collector then
// deletes their pods and claims.
func (h *host) sweep() {
	ctx, cancel := context.WithTimeout(h.ctx, h.lease/3)
	defer cancel()
	_, _ = Sweep(ctx, h.cs, h.namespace)
}

// Sweep deletes, in namespace, the host-instance Leases of acphost hosts
// that stopped renewing them for twice their duration (hosts that died);
// the cluster's garbage collector then deletes the pods and claims they
// own. It returns the instances swept. Every Transport sweeps its
// namespace at its first Dial and with each heartbeat; call Sweep to clean
// up where no host runs any more.
func Sweep(ctx context.Context, cs kubernetes.Interface, namespace string) ([]string, error) {
	list, err := cs.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + ManagedBy})
	if err != nil {
		return nil, err
	}
	var swept []string
	var errs []error
	for _, l := range list.Items {
		if !expired(&l, time.Now()) {
			continue
		}
		err := cs.CoordinationV1().Leases(namespace).Delete(ctx, l.Name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion},
			PropagationPolicy: new(metav1.DeletePropagationBackground),
		})
		switch {
		case err == nil:
			swept = append(swept, l.Name)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			errs = append(errs, err)
		}
	}
	return swept, errors.Join(errs...)
}

func expired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	return now.After(l.Spec.RenewTime.Add(2 * d))
}

// dialPod creates a pod for one agent, waits for it to be Ready and
// starts the watchdog and the agent in it.
func (h *host) dialPod(ctx context.Context, t *Transport) (acphost.Link, error) {
	cmds, ctx, end, err := h.openDial(ctx, t)
	if err != nil {
		return nil, err
	}
	defer end()
	owner, err := h.ownerRef(ctx)
	if err != nil {
		return nil, dialError(err)
	}
	pod, ci, err := t.podFor(h.instance, owner)
	if err != nil {
		return nil, dialError(err)
	}
	made, err := h.cs.CoreV1().Pods(h.namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		h.releaseLost(pod.Name, "")
		return nil, dialError(fmt.Errorf("creating the pod: %w", err))
	}
	l := &link{h: h, pod: made.Name, container: made.Spec.Containers[ci].Name}
	if !h.track(l) {
		l.Stop(0)
		return nil, dialError(errClosed)
	}
	if err := h.waitReady(ctx, made); err != nil {
		l.Stop(0)
		return nil, dialError(err)
	}
	if err := h.start(ctx, l, cmds, t.Protocol); err != nil {
		l.Stop(0)
		return nil, err
	}
	l.placed(t, fmt.Sprintf("pod %s in %s%s", made.Name, h.namespace, t.contextWord()), made)
	return l, nil
}

// start runs the watchdog in the pod, waits for it to say it waits, then
// starts the agent behind its environment header.
func (h *host) start(ctx context.Context, l *link, cmds remote.Commands, protocol string) error {
	wd := append([]string(nil), cmds.Watchdog...)
	wd[2] += watchdogTail
	wdEx, err := h.executor(l.pod, l.container, wd, protocol)
	if err != nil {
		return dialError(err)
	}
	agentEx, err := h.executor(l.pod, l.container, cmds.Agent, protocol)
	if err != nil {
		return dialError(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	wdIn, wdInW := io.Pipe()
	wdOut, wdOutW := io.Pipe()
	l.mu.Lock()
	if l.stopping {
		l.mu.Unlock()
		cancel()
		return dialError(errClosed)
	}
	l.cancel = cancel
	l.done = make(chan struct{})
	l.wdDone = make(chan struct{})
	l.wdStdin = wdInW
	l.mu.Unlock()
	go func() {
		defer close(l.wdDone)
		err := stream(sctx, wdEx, wdIn, wdOutW, &l.wdTail)
		wdOutW.CloseWithError(fmt.Errorf("the watchdog's stream ended: %w", errOr(err, io.EOF)))
		wdInW.Close() // the executor's stdin copy may still read: EOF, not an error it logs
	}()
	if err := remote.AwaitReady(ctx, wdOut); err != nil {
		// Its stdout is not read any more: unblock its writer.
		wdOut.CloseWithError(err)
		close(l.done) // no agent stream was started
		if tail := strings.TrimSpace(l.wdTail.String()); tail != "" {
			err = fmt.Errorf("%w: %s", err, tail)
		}
		return dialError(err)
	}
	go io.Copy(io.Discard, wdOut) // anything more it says

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	stderrR, stderrW := io.Pipe()
	l.mu.Lock()
	if l.stopping {
		l.mu.Unlock()
		close(l.done) // no agent stream was started
		return dialError(errClosed)
	}
	l.stdinW, l.stdoutR, l.stderrR = stdinW, stdoutR, stderrR
	l.mu.Unlock()
	go func() {
		err := stream(sctx, agentEx, stdinWith(cmds.Header, stdinR), stdoutW, stderrW)
		l.err = exitOf(err)
		stdoutW.CloseWithError(io.EOF)
		stderrW.CloseWithError(io.EOF)
		stdinW.Close() // the executor's stdin copy may still read: EOF, not an error it logs
		close(l.done)
	}()
	return nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// waitReady watches the pod until it is Ready, fails at once on what will
// not pass by itself (an image that cannot be had, a config error, the
// pod ended).
func (h *host) waitReady(ctx context.Context, pod *corev1.Pod) error {
	w, err := h.cs.CoreV1().Pods(h.namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		return fmt.Errorf("watching pod %s: %w", pod.Name, err)
	}
	defer w.Stop()
	if ok, err := podReady(pod); ok || err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s not ready: %w", pod.Name, context.Cause(ctx))
		case ev, open := <-w.ResultChan():
			if !open {
				// The watch ended (a timeout server-side): look again.
				p, err := h.cs.CoreV1().Pods(h.namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("pod %s: %w", pod.Name, err)
				}
				return h.waitReady(ctx, p)
			}
			switch ev.Type {
			case watch.Deleted:
				return fmt.Errorf("pod %s was deleted before it was ready", pod.Name)
			case watch.Error:
				return fmt.Errorf("watching pod %s: %v", pod.Name, apierrors.FromObject(ev.Object))
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ok, err := podReady(p); ok || err != nil {
				return err
			}
		}
	}
}

// podReady says whether p is Ready, or why it never will be.
func podReady(p *corev1.Pod) (bool, error) {
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false, fmt.Errorf("pod %s ended (%s) before it was ready: %s", p.Name, p.Status.Phase, p.Status.Message)
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "ImagePullBackOff", "ErrImagePull", "RunContainerError":
				return false, fmt.Errorf("pod %s container %s: %s: %s", p.Name, s.Name, w.Reason, w.Message)
			}
		}
		if t := s.State.Terminated; t != nil {
			return false, fmt.Errorf("pod %s container %s ended before it was ready: %s (exit %d) %s", p.Name, s.Name, t.Reason, t.ExitCode, t.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true, nil
		}
	}
	return false, nil
}

// release deletes what l holds — its pod, or its claim — and waits until
// the pod is gone.
func (h *host) release(ctx context.Context, pod, claim string, grace time.Duration) {
	if claim != "" {
		h.deleteClaim(ctx, claim)
	}
	if pod == "" {
		return
	}
	if claim == "" {
		// At least a second: 0 would delete the object before the kubelet
		// has ended the processes.
		secs := max(1, int64(math.Ceil(grace.Seconds())))
		err := h.cs.CoreV1().Pods(h.namespace).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &secs})
		if apierrors.IsNotFound(err) {
			return
		}
	}
	h.waitPodGone(ctx, pod)
}

// releaseLost releases a pod or claim whose create failed: the server may
// have made it though the answer was lost (the dial's ctx ended by
// Close). Bounded; nothing to find is fine.
func (h *host) releaseLost(pod, claim string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.release(ctx, pod, claim, 0)
}

// waitPodGone watches until pod name is gone or ctx ends.
func (h *host) waitPodGone(ctx context.Context, name string) {
	for ctx.Err() == nil {
		p, err := h.cs.CoreV1().Pods(h.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			return
		}
		w, err := h.cs.CoreV1().Pods(h.namespace).Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: p.ResourceVersion,
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

// close stops every link (without grace), the heartbeat, and deletes the
// Lease.
func (h *host) close() error {
	h.mu.Lock()
	h.cancel()
	links := make([]*link, 0, len(h.links))
	for l := range h.links {
		links = append(links, l)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range links {
		wg.Go(func() { l.Stop(0) })
	}
	wg.Wait()
	h.dials.Wait() // a dial that made a pod or claim after the snapshot deletes it
	h.heartbeat.Wait()
	h.mu.Lock()
	made := h.leaseUID != ""
	h.mu.Unlock()
	if !made {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := h.cs.CoordinationV1().Leases(h.namespace).Delete(ctx, h.instance, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kube: deleting the host's Lease: %w", err)
	}
	return nil
}

// dialClaim claims a pod from the warm pool, waits for the claim to be
// Ready and bound, and starts the watchdog and the agent in its pod.
func (h *host) dialClaim(ctx context.Context, t *Transport) (acphost.Link, error) {
	if t.ReadOnlyRootFilesystem || len(t.ReadOnlyMounts) > 0 || len(t.Template.Spec.Containers) > 0 {
		return nil, dialError(fmt.Errorf("kube: with WarmPool the pool's SandboxTemplate is the pod: set the template, read-only root and mounts there"))
	}
	cmds, ctx, end, err := h.openDial(ctx, t)
	if err != nil {
		return nil, err
	}
	defer end()
	h.startHeartbeat()
	claims := h.dyn.Resource(ClaimResource).Namespace(h.namespace)
	claim := claimFor(t.WarmPool, h.instance, nil, time.Now().Add(h.lease))
	made, err := claims.Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		h.releaseLost("", claim.GetName())
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
	l.placed(t, fmt.Sprintf("pod %s from warm pool %s in %s%s", pod.Name, t.WarmPool, h.namespace, t.contextWord()), pod)
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

// executor makes the exec stream that runs argv in the pod's container:
// WebSocket (subprotocol v5.channel.k8s.io) first, SPDY when the server
// refuses the upgrade, as kubectl does; or the one protocol asked for.
// Both can half-close stdin and both carry the exit status.
func (h *host) executor(pod, container string, argv []string, protocol string) (remotecommand.Executor, error) {
	u := h.cs.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(h.namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   argv,
			Stdin:     true,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec).URL()
	switch protocol {
	case "spdy":
		return remotecommand.NewSPDYExecutor(h.cfg, "POST", u)
	case "websocket":
		return remotecommand.NewWebSocketExecutor(h.cfg, "GET", u.String())
	case "":
	default:
		return nil, fmt.Errorf("kube: Transport.Protocol %q is none of websocket and spdy", protocol)
	}
	ws, err := remotecommand.NewWebSocketExecutor(h.cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(h.cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}
