package kube

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/remote"
)

// Transport runs each agent in a pod of its own, or in a pod claimed from
// an agent-sandbox warm pool, as an acphost.Transport. Its fields are read
// at the first Dial; do not change them once a client uses it. Dial, Where
// and Close are safe to call concurrently.
type Transport struct {
	// Config reaches the cluster. Nil: Load(Kubeconfig, Context).
	Config *rest.Config
	// Kubeconfig is the kubeconfig file used when Config is nil. "": the
	// files $KUBECONFIG names, else ~/.kube/config, else the in-cluster
	// service account.
	Kubeconfig string
	// Context is the kubeconfig context used when Config is nil. "": the
	// kubeconfig's current context.
	Context string
	// Namespace is where the pods and claims are made. "": the kubeconfig
	// context's namespace, else "default".
	Namespace string

	// Template is the caller's pod: image, resources, RuntimeClass,
	// security context, labels, volumes, node selection …. Each Dial
	// makes a pod from it with safe defaults merged in where the template
	// says nothing (see the package doc), its name generated, restartPolicy
	// Never and its main process replaced by the keeper that holds the
	// pod for the agent. Not used with WarmPool (the pool's
	// SandboxTemplate is the pod).
	Template corev1.PodTemplateSpec
	// Container names the template's container the agent runs in. "": the
	// first. With WarmPool: the container exec'd into ("": the first).
	Container string
	// Image is the agent's image when the template's container names none.
	Image string
	// PullPolicy is the image pull policy when the template's container
	// has none (a cluster without a registry wants corev1.PullNever).
	PullPolicy corev1.PullPolicy

	// Command is the agent's command line inside the pod. Empty: the
	// template container's Command and Args. The agent is exec'd into the
	// pod, so the image's own entrypoint cannot stand for it: with neither
	// set, Dial fails.
	Command []string
	// Env is set for the agent ("KEY=value"). It travels on the exec's
	// stdin, so it shows neither in the pod spec nor in the apiserver's
	// audit records of the exec.
	Env []string
	// Dir is the agent's working directory in the pod. "": the
	// container's own.
	Dir string

	// WarmPool, when set, claims a pod from this agent-sandbox
	// SandboxWarmPool (a SandboxClaim in Namespace) for each Dial instead
	// of creating one, and deletes the claim at Stop; the pool refills.
	WarmPool string

	// ReadOnlyRootFilesystem makes the agent container's root file system
	// read-only (the kernel layer of plan mode, as far as a pod has one).
	ReadOnlyRootFilesystem bool
	// ReadOnlyMounts names volume mounts of the agent's container (by
	// mount path or volume name) to mount read-only: the project, for plan
	// mode. A name the template does not mount fails Dial.
	ReadOnlyMounts []string

	// Lease is how long the cluster keeps what this transport made once
	// the host stops renewing it: a claim's spec.lifecycle.shutdownTime is
	// set this far ahead and renewed every third of it, and the host
	// instance's Lease object (the owner of its pods) expires after it. 0:
	// 30 s.
	Lease time.Duration
	// MaxLifetime, when set, is each pod's activeDeadlineSeconds: a hard
	// cap after which the kubelet ends it whatever the host does. 0: none.
	MaxLifetime time.Duration
	// StartTimeout bounds the wait for a pod or a claim to be Ready,
	// within the Dial's ctx. 0: 2 minutes.
	StartTimeout time.Duration
	// Protocol chooses the exec stream: "" (WebSocket v5, falling back to
	// SPDY when the server refuses it, as kubectl does), "websocket" or
	// "spdy".
	Protocol string

	once    sync.Once
	initErr error
	h       *host // the clients, the host instance and its heartbeat

	mu      sync.Mutex
	last    acphost.Containment // the last Dial's agent, as its link reports it
	lastPod string              // its pod's name
	closed  bool
}

// Load reads a kubeconfig as kubectl does: kubeconfig "" means the files
// $KUBECONFIG names, else ~/.kube/config, and without either the pod's
// in-cluster service account; context "" the current context. It returns
// the client config and the context's namespace ("default" when it names
// none, or the service account's namespace in a cluster).
func Load(kubeconfig, context string) (*rest.Config, string, error) {
	return load(kubeconfig, context)
}

// Dial makes (or claims) a pod, waits for it to be Ready, starts the
// watchdog and the agent in it over exec and returns the agent's link.
// ctx ends the dial: a pod or claim made for it is deleted. Failures are a
// *acphost.LinkError (Op "dial"), or an *acphost.ExitError when the agent
// could not be started in the pod (its command missing: status 126/127).
func (t *Transport) Dial(ctx context.Context) (acphost.Link, error) {
	h, err := t.init()
	if err != nil {
		return nil, dialError(err)
	}
	if t.WarmPool != "" {
		return h.dialClaim(ctx, t)
	}
	return h.dialPod(ctx, t)
}

// Where says in one line where the last Dial's agent runs: "pod NAME in
// NAMESPACE on CONTEXT", or for a claim "pod NAME from warm pool POOL in
// NAMESPACE on CONTEXT"; before any Dial, where the next one will go.
func (t *Transport) Where() string {
	t.mu.Lock()
	w := t.last.Where
	t.mu.Unlock()
	if w != "" {
		return w
	}
	if t.WarmPool != "" {
		return fmt.Sprintf("warm pool %s in %s%s", t.WarmPool, t.namespaceWord(), t.contextWord())
	}
	return fmt.Sprintf("a new pod in %s%s", t.namespaceWord(), t.contextWord())
}

// Instance is this transport's host-instance id: the value of the
// InstanceLabel on its pods and claims, and the name of its Lease. ""
// before the first Dial.
func (t *Transport) Instance() string {
	if h := t.host(); h != nil {
		return h.instance
	}
	return ""
}

// host is the host instance, nil before the first Dial.
func (t *Transport) host() *host {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.h
}

// Close deletes every pod and claim this transport still holds (their
// links are stopped without grace), deletes its host-instance Lease and
// stops its heartbeat. It waits until they are gone, bounded by a minute.
// Dial fails once Close has been called.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.once.Do(func() { t.initErr = errClosed })
	if h := t.host(); h != nil {
		return h.close()
	}
	return nil
}

var errClosed = errors.New("kube: the transport is closed")

// Containment says how the last Dial's pod holds its agent, for a header
// or Enforcement to show: "kube pod NAME: non-root uid 65532, no
// capabilities, no privilege escalation, seccomp RuntimeDefault, read-only
// root fs, read-only /work" — read from the pod as created (for a claim,
// as its pool made it). "" before any Dial.
func (t *Transport) Containment() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last.Where == "" {
		return ""
	}
	return describe(t.last.Facts, t.lastPod)
}

// placed records the last Dial's agent.
func (t *Transport) placed(c acphost.Containment, pod string) {
	t.mu.Lock()
	t.last, t.lastPod = c, pod
	t.mu.Unlock()
}

func (t *Transport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

func (t *Transport) namespaceWord() string {
	if h := t.host(); h != nil {
		return h.namespace
	}
	if t.Namespace != "" {
		return t.Namespace
	}
	return "the context's namespace"
}

func (t *Transport) contextWord() string {
	if h := t.host(); h != nil && h.context != "" {
		return " on " + h.context
	}
	if t.Context != "" {
		return " on " + t.Context
	}
	return ""
}

// init makes the clients and the host instance once.
func (t *Transport) init() (*host, error) {
	t.once.Do(func() {
		cfg, ns, kctx := t.Config, t.Namespace, t.Context
		if cfg == nil {
			var loadedNS string
			var err error
			cfg, loadedNS, err = load(t.Kubeconfig, t.Context)
			if err != nil {
				t.initErr = err
				return
			}
			if ns == "" {
				ns = loadedNS
			}
			if kctx == "" {
				kctx = currentContext(t.Kubeconfig, t.Context)
			}
		}
		if ns == "" {
			ns = "default"
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.initErr = err
			return
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.initErr = err
			return
		}
		h := newHost(cfg, cs, dyn, ns, kctx, t.lease())
		t.mu.Lock()
		t.h = h
		t.mu.Unlock()
	})
	if t.initErr != nil {
		return nil, t.initErr
	}
	if t.isClosed() {
		return nil, errClosed
	}
	return t.host(), nil
}

func (t *Transport) lease() time.Duration {
	if t.Lease > 0 {
		return t.Lease
	}
	return 30 * time.Second
}

func (t *Transport) startTimeout() time.Duration {
	if t.StartTimeout > 0 {
		return t.StartTimeout
	}
	return 2 * time.Minute
}

func dialError(err error) error {
	return &acphost.LinkError{Transport: transportName, Op: "dial", Err: err}
}

// transportName is the links' Promises.Transport.
const transportName = "kube"

// podFor is the pod Dial creates: the template with the agent's
// container chosen, the keeper as its main process, the shorthands and
// the safe defaults applied where the template says nothing, the labels
// and the owner (the host instance's Lease) set.
func (t *Transport) podFor(instance string, owner *metav1.OwnerReference) (*corev1.Pod, int, error) {
	tpl := t.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	// Named here, not by the server: a create whose answer is lost (its
	// ctx ended by Close) leaves a pod the dial can still name to delete.
	pod.Name = objectName()
	pod.GenerateName = ""
	pod.Namespace = ""
	pod.ResourceVersion = ""
	pod.UID = ""
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[ManagedByLabel] = ManagedBy
	pod.Labels[InstanceLabel] = instance
	if owner != nil {
		pod.OwnerReferences = append(pod.OwnerReferences, *owner)
	}

	spec := &pod.Spec
	if len(spec.Containers) == 0 {
		spec.Containers = []corev1.Container{{Name: "agent"}}
	}
	i, err := containerIndex(spec.Containers, t.Container)
	if err != nil {
		return nil, 0, err
	}
	c := &spec.Containers[i]
	if c.Image == "" {
		c.Image = t.Image
	}
	if c.Image == "" {
		return nil, 0, fmt.Errorf("kube: no image: set Transport.Image or the template container %q's image", c.Name)
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = t.PullPolicy
	}
	c.Command = keeperArgv(t.startTimeout()+time.Minute, keeperGrace)
	c.Args = nil
	c.Stdin, c.StdinOnce, c.TTY = false, false, false
	for _, m := range t.ReadOnlyMounts {
		found := false
		for j := range c.VolumeMounts {
			if c.VolumeMounts[j].MountPath == m || c.VolumeMounts[j].Name == m {
				c.VolumeMounts[j].ReadOnly = true
				found = true
			}
		}
		if !found {
			return nil, 0, fmt.Errorf("kube: Transport.ReadOnlyMounts names %q, which container %q does not mount", m, c.Name)
		}
	}

	spec.RestartPolicy = corev1.RestartPolicyNever
	if spec.AutomountServiceAccountToken == nil {
		spec.AutomountServiceAccountToken = new(false)
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = new(false)
	}
	if t.MaxLifetime > 0 && spec.ActiveDeadlineSeconds == nil {
		spec.ActiveDeadlineSeconds = new(int64(math.Ceil(t.MaxLifetime.Seconds())))
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	psc := spec.SecurityContext
	if psc.SeccompProfile == nil {
		psc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	for j := range spec.Containers {
		hardenContainer(&spec.Containers[j], psc)
	}
	for j := range spec.InitContainers {
		hardenContainer(&spec.InitContainers[j], psc)
	}
	if t.ReadOnlyRootFilesystem {
		c.SecurityContext.ReadOnlyRootFilesystem = new(true)
	}
	return pod, i, nil
}

// commands are the agent's command line and its watchdog's, as the pod
// runs them.
func (t *Transport) commands() (remote.Commands, error) {
	argv, err := t.agentArgv()
	if err != nil {
		return remote.Commands{}, err
	}
	return remote.NewCommands(argv, t.Env, t.Dir)
}

// agentArgv is the agent's command line: Command, else the template
// container's command and args.
func (t *Transport) agentArgv() ([]string, error) {
	if len(t.Command) > 0 {
		return t.Command, nil
	}
	if t.WarmPool == "" && len(t.Template.Spec.Containers) > 0 {
		if i, err := containerIndex(t.Template.Spec.Containers, t.Container); err == nil {
			c := t.Template.Spec.Containers[i]
			if argv := append(append([]string(nil), c.Command...), c.Args...); len(argv) > 0 {
				return argv, nil
			}
		}
	}
	return nil, fmt.Errorf("kube: no agent command: set Transport.Command (the agent is exec'd into the pod, so the image's own entrypoint cannot be used)")
}
