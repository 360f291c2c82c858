package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/usage"
	"github.com/acphost/acphost/kube"
)

// kubePulls maps --kube-pull's words to the pull policies.
var kubePulls = map[string]corev1.PullPolicy{
	"never":          corev1.PullNever,
	"always":         corev1.PullAlways,
	"if-not-present": corev1.PullIfNotPresent,
}

// kubeFlags defines the --kube-* flags into k.
func kubeFlags(fs *flag.FlagSet, k *state.KubePlace) {
	fs.StringVar(&k.Image, "kube-image", "", usage.FlagHelp("kube-image"))
	fs.StringVar(&k.WarmPool, "kube-warm-pool", "", usage.FlagHelp("kube-warm-pool"))
	fs.StringVar(&k.Namespace, "kube-namespace", "", usage.FlagHelp("kube-namespace"))
	fs.StringVar(&k.Context, "kube-context", "", usage.FlagHelp("kube-context"))
	fs.StringVar(&k.Pull, "kube-pull", "", usage.FlagHelp("kube-pull"))
}

// checkKube refuses what an agent in a pod cannot have: this machine's
// files (--fs, --writable), the built-in agent (this executable, which is
// not in the image), and a second way to reach an agent.
func checkKube(cfg *config) error {
	k := cfg.remote.kube
	switch {
	case cfg.remote.ssh != "":
		return errors.New("--kube-image/--kube-warm-pool and --ssh reach an agent two different ways; pick one")
	case k.Image != "" && k.WarmPool != "":
		return errors.New("--kube-image makes a pod of its own and --kube-warm-pool claims one from a pool; pick one")
	case k.Image == "" && k.WarmPool == "":
		return errors.New("--kube-namespace, --kube-context and --kube-pull go with --kube-image IMAGE or --kube-warm-pool NAME")
	case k.WarmPool != "" && k.Pull != "":
		return errors.New("--kube-pull sets the image pull policy of a pod of its own; a warm pool's pods are its template's")
	case len(cfg.agent) == 0:
		return errors.New("give the agent's command in the pod after --: --kube-image IMAGE -- AGENT [ARGS...]")
	case len(cfg.writable) > 0:
		return errors.New("--writable confines a local agent with Landlock; an agent in a pod is confined by its pod (acphost makes it non-root, with no capabilities)")
	case cfg.fs:
		return errors.New("--fs serves this machine's files, which an agent in a pod does not see")
	case cfg.cwd != "" && !strings.HasPrefix(cfg.cwd, "/"):
		return fmt.Errorf("--cwd %s: with --kube-image or --kube-warm-pool, an absolute directory in the pod", cfg.cwd)
	}
	if _, ok := kubePulls[k.Pull]; k.Pull != "" && !ok {
		return fmt.Errorf("--kube-pull %q: want never, always or if-not-present", k.Pull)
	}
	return nil
}

// kubeTransport is the --kube-* flags as a transport: the agent command
// after -- runs in a pod of its own from the image, or in one claimed
// from the warm pool; $KUBECONFIG (else ~/.kube/config) reaches the
// cluster.
func kubeTransport(cfg config) *kube.Transport {
	k := cfg.remote.kube
	return &kube.Transport{
		Context:    k.Context,
		Namespace:  k.Namespace,
		Image:      k.Image,
		PullPolicy: kubePulls[k.Pull],
		WarmPool:   k.WarmPool,
		Command:    cfg.agent,
		Env:        cfg.agentEnv,
		Dir:        kubeDir(cfg.cwd),
	}
}

// kubeDir is the session's directory in the pod: --cwd, else the root
// (what an image's working directory is, the API does not say).
func kubeDir(cwd string) string {
	if cwd == "" {
		return "/"
	}
	return cwd
}
