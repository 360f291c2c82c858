package kube

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// loader is the kubeconfig loading kubectl does: explicit file, else
// $KUBECONFIG's files, else ~/.kube/config, else in-cluster.
func loader(kubeconfig, context string) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
}

func load(kubeconfig, context string) (*rest.Config, string, error) {
	cc := loader(kubeconfig, context)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return cfg, ns, nil
}

// currentContext names the context a kubeconfig load uses ("" in-cluster).
func currentContext(kubeconfig, context string) string {
	if context != "" {
		return context
	}
	raw, err := loader(kubeconfig, "").RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}
