// Package kube runs agents on Kubernetes as an acphost.Transport: each
// Dial runs one agent in a pod of its own, or in a pod claimed from an
// agent-sandbox SandboxWarmPool, and reaches it over the pods/exec API in
// process — client-go's WebSocket stream (subprotocol v5.channel.k8s.io),
// SPDY when the server refuses the upgrade, as kubectl does. It is a
// module of its own so that a program importing only
// github.com/acphost/acphost links nothing of client-go.
//
//	t := &kube.Transport{Image: "ghcr.io/me/agent:1", Command: []string{"my-agent", "--acp"}}
//	defer t.Close()
//	c, err := acphost.Start(ctx, acphost.ACPOptions{Transport: t, Dir: "/work"})
//
// # The pod
//
// A pod is made from Template (image, resources, RuntimeClass, volumes,
// node selection, labels …) with safe defaults where the template says
// nothing: runAsNonRoot with uid and gid 65532, every capability dropped,
// allowPrivilegeEscalation false, seccomp RuntimeDefault, no
// service-account token, no service links; restartPolicy is always Never
// and the pod carries app.kubernetes.io/managed-by=acphost and
// acphost.dev/instance=INSTANCE (the host instance, Transport.Instance).
// ReadOnlyRootFilesystem and ReadOnlyMounts (the project, for plan mode)
// are the kernel layer a pod offers.
//
// The agent's container runs a keeper as its main process (PID 1 of the
// container), and the agent is exec'd into it: exec carries stdin EOF and
// the exit status over both protocols, and the same exec reaches a warm
// pool's pods, whose main process the pool chose. The agent's command is
// Command (or the template container's command): the image's entrypoint
// cannot be exec'd, since the API does not say what it is. The image needs
// sh, grep, tr, sleep and kill (busybox is enough), as for
// container.Transport.
//
// # Ending: Stop, Close, and a host that died
//
// Stop closes the agent's stdin and waits its grace for the agent's exit
// status; then it deletes the pod with the grace as its grace period (the
// keeper, sent SIGTERM by the kubelet, sends SIGTERM to every process in
// the container, and SIGKILL after its own two seconds) and returns once
// the pod is gone. A claim's Stop ends the agent's processes through the
// watchdog (below) and deletes the claim in the foreground; the pool makes
// a new pod. Close stops every link the transport holds, its heartbeat,
// and deletes its Lease.
//
// No pod of a host that died runs on, by three means, each measured by
// killing a host (SIGKILL) with agents running that ignore EOF and SIGTERM
// and left a grandchild:
//
//  1. The watchdog. Beside the agent, a second exec runs the watchdog of
//     internal/remote, reading a stdin the host never writes. The host's
//     death closes its connection, the apiserver and kubelet close the
//     exec's stdin, and the watchdog sends SIGTERM to every process
//     carrying the agent's mark (a random environment entry), SIGKILL two
//     seconds later, then SIGTERM to PID 1 — the keeper, which ends the
//     container: whatever is left dies with its PID namespace. Measured:
//     no agent process 1.5–2.3 s after the kill, the pod Succeeded after
//     2–4.5 s.
//  2. The keeper. It also ends the pod when no watchdog runs in it — none
//     came within StartTimeout and a minute (a host that died between
//     making the pod and reaching it), or the one that came is gone
//     without having ended it (an agent that killed it).
//  3. The Lease. Each transport holds a coordination.k8s.io Lease named
//     after its instance and renews it every third of Lease (30 s); its
//     pods name the Lease as their owner. Every transport sweeps its
//     namespace at its first Dial and with each heartbeat, deleting the
//     Leases not renewed for twice their duration, and the cluster's
//     garbage collector deletes the pods they own; Sweep does the same on
//     demand. Measured with a 3 s lease: nothing of the dead host left
//     5.7–5.9 s after the kill. A claim needs no other host: its
//     spec.lifecycle.shutdownTime (policy Delete) is set a lease ahead and
//     renewed by the heartbeat, and agent-sandbox's controller deletes the
//     claim, its Sandbox and pod once the host stops renewing it (measured:
//     gone 2–4 s after the kill with a 3 s lease).
//
// MaxLifetime adds activeDeadlineSeconds, a hard cap the kubelet enforces
// whatever the host does.
//
// # Promises
//
// Transport "kube"; Stderr (its own exec channel, no TTY); ExitStatus (the
// exec's status, 128+N read as signal N; a stream that fails otherwise is
// an *acphost.LinkError matching acphost.ErrLinkLost); GroupKill (the pod
// is the agent's whole tree); Redial. Not HostFiles: the pod's files are
// its own, so acphost refuses ACPOptions.FS and Terminal. The pod does not
// share the host's loopback and the link is no acphost.HostForwarder, so
// acphost refuses host tools (ACPOptions.HostTools) with ErrUnsupported.
//
// # Warm pools
//
// With WarmPool set, each Dial creates a SandboxClaim
// (extensions.agents.x-k8s.io/v1beta1) naming the pool, waits for its Ready
// condition and status.sandbox.name, finds the Sandbox's pod and execs the
// watchdog and agent into it. The agent-sandbox resources are reached
// through the dynamic client with unstructured objects: the typed module
// would bring controller-runtime and another k8s.io minor version into
// every program that imports this package, for three fields.
//
// # One agent per pod
//
// An agent holds many sessions (acphost.Pool's SessionsPerProcess), but
// each Dial makes its own pod: containerd 1.6's runc shim loses exec exits
// beyond a few dozen concurrent execs into one container, and a pod of its
// own is what lets the cluster place, limit and end each agent.
//
// # Permissions
//
// In Namespace: pods create, get, list, watch, delete; pods/exec create
// and get; leases (coordination.k8s.io) create, get, list, patch, delete;
// with WarmPool, sandboxclaims create, get, watch, patch, delete and
// sandboxes get.
//
// client-go reports some stream teardown errors through klog (to stderr
// unless the program configures klog); this package itself prints nothing.
package kube
