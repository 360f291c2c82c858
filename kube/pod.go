package kube

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NonRootUID is the user (and group) a pod runs as when its template names
// none: the "nonroot" user of distroless images.
const NonRootUID = 65532

// keeperScript is the pod's main process, PID 1 of its container: it holds
// the pod for the agent, which is exec'd into it. $1: seconds to wait for
// the first watchdog; $2: the grace, in tenths of a second, between SIGTERM
// and SIGKILL for the rest of the container.
//
// It ends the pod — every process in the container gets SIGTERM, SIGKILL
// after the grace, and PID 1's exit takes whatever is left with the PID
// namespace — when it is sent SIGTERM (the kubelet deleting the pod, or
// the watchdog whose stream ended with the host), when no watchdog came
// in time (a host that died between creating the pod and reaching it), or
// when the watchdog is gone without having sent it (killed). The
// watchdog is found by its argv; the pattern's brackets keep grep from
// finding itself.
const keeperScript = `s=$1 g=$2
w() { grep -qs 'acphost-watchdo[g]' /proc/[0-9]*/cmdline; }
e() {
	trap '' TERM INT
	kill -TERM -1 2>/dev/null
	n=0
	while kill -0 -1 2>/dev/null && [ "$n" -lt "$g" ]; do sleep 0.1; n=$((n + 1)); done
	kill -KILL -1 2>/dev/null
	exit 0
}
trap e TERM INT
n=0
until w; do
	n=$((n + 1))
	if [ "$n" -gt "$s" ]; then e; fi
	sleep 1 & wait $!
done
while w; do sleep 1 & wait $!; done
e`

// watchdogTail runs after the remote watchdog's rounds: it asks PID 1 to
// end the pod (the keeper's trap; a warm pool pod's own main process
// without a handler ignores it).
const watchdogTail = "\nkill -TERM 1 2>/dev/null\nexit 0"

// keeperArgv is the main process of a pod made for one agent.
func keeperArgv(firstWatchdog, grace time.Duration) []string {
	s := max(1, int(math.Ceil(firstWatchdog.Seconds())))
	g := max(10, int(math.Ceil(grace.Seconds()*10)))
	return []string{"sh", "-c", keeperScript, "acphost-keeper", strconv.Itoa(s), strconv.Itoa(g)}
}

// keeperGrace is the keeper's wait between SIGTERM and SIGKILL when it
// ends the pod itself (the host gone); a Stop's own grace rules the
// kubelet's when the host deletes the pod.
const keeperGrace = 2 * time.Second

// hardenContainer applies the safe defaults the template leaves open:
// non-root (a non-root uid when neither the pod nor the container names
// one), no privilege escalation, every capability dropped.
func hardenContainer(c *corev1.Container, psc *corev1.PodSecurityContext) {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	sc := c.SecurityContext
	if sc.RunAsNonRoot == nil && psc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = new(true)
	}
	if sc.RunAsUser == nil && psc.RunAsUser == nil {
		sc.RunAsUser = new(int64(NonRootUID))
		if sc.RunAsGroup == nil && psc.RunAsGroup == nil {
			sc.RunAsGroup = new(int64(NonRootUID))
		}
	}
	if sc.AllowPrivilegeEscalation == nil {
		sc.AllowPrivilegeEscalation = new(false)
	}
	if sc.Capabilities == nil {
		sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	}
}

// containerIndex finds the container named name ("" the first).
func containerIndex(cs []corev1.Container, name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	for i := range cs {
		if cs[i].Name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("kube: the pod has no container %q", name)
}

// Describe says how pod holds its container c, for a header: the pod,
// then what the security settings in force give ("non-root uid 65532, no
// capabilities, no privilege escalation, seccomp RuntimeDefault, read-only
// root fs, read-only /work"). It reports the pod's spec as created (or,
// for a claim, as the pool made it), not wishes.
func Describe(pod *corev1.Pod, container string) string {
	return describe(facts(pod, container), pod.Name)
}

// describe is Describe's line from the facts and the pod's name.
func describe(facts []string, pod string) string {
	if len(facts) == 0 {
		return "kube pod " + pod
	}
	return "kube pod " + pod + ": " + strings.Join(facts, ", ")
}

// facts are Describe's words after the pod's name.
func facts(pod *corev1.Pod, container string) []string {
	var words []string
	i, err := containerIndex(pod.Spec.Containers, container)
	if err != nil || len(pod.Spec.Containers) == 0 {
		return nil
	}
	c := pod.Spec.Containers[i]
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	uid := first(sc.RunAsUser, psc.RunAsUser)
	nonRoot := first(sc.RunAsNonRoot, psc.RunAsNonRoot)
	switch {
	case uid != nil && *uid != 0:
		words = append(words, fmt.Sprintf("non-root uid %d", *uid))
	case uid != nil:
		words = append(words, "root")
	case nonRoot != nil && *nonRoot:
		words = append(words, "non-root")
	default:
		words = append(words, "the image's user")
	}
	if sc.Privileged != nil && *sc.Privileged {
		words = append(words, "privileged")
	}
	if sc.Capabilities != nil && dropsAll(sc.Capabilities) && len(sc.Capabilities.Add) == 0 {
		words = append(words, "no capabilities")
	} else {
		words = append(words, "default capabilities")
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		words = append(words, "no privilege escalation")
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = psc.SeccompProfile
	}
	if seccomp != nil {
		words = append(words, "seccomp "+string(seccomp.Type))
	}
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		words = append(words, "read-only root fs")
	}
	for _, m := range c.VolumeMounts {
		if m.ReadOnly {
			words = append(words, "read-only "+m.MountPath)
		}
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		words = append(words, "service account token mounted")
	}
	if pod.Spec.RuntimeClassName != nil {
		words = append(words, "runtime class "+*pod.Spec.RuntimeClassName)
	}
	return words
}

func first[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func dropsAll(c *corev1.Capabilities) bool {
	for _, d := range c.Drop {
		if strings.EqualFold(string(d), "ALL") {
			return true
		}
	}
	return false
}
