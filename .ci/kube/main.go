// Command kube is the test cluster's one binary. It runs the component named
// by the name it was started under (a symlink: kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet, kubectl, etcd) or, when
// started as itself, by its first argument:
//
//	kube kubectl get nodes
//
// Built by build.sh with the version linker flags; see README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

var components = map[string]func() int{
	"kube-apiserver": func() int { return cli.Run(apiserver.NewAPIServerCommand()) },
	"kube-controller-manager": func() int {
		return cli.Run(controllermanager.NewControllerManagerCommand())
	},
	"kube-scheduler": func() int { return cli.Run(scheduler.NewSchedulerCommand()) },
	"kubelet": func() int {
		return cli.Run(kubelet.NewKubeletCommand(context.Background()))
	},
	"kubectl": func() int {
		// As cmd/kubectl does: errors are printed by CheckErr, which exits.
		if err := cli.RunNoErrOutput(kubectlcmd.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
		return 0
	},
	"etcd": func() int {
		etcdmain.Main(os.Args)
		return 0
	},
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := components[name]; !ok && len(os.Args) > 1 {
		// Started as itself: the component is the first argument. The
		// components read os.Args, so it is rewritten to what the
		// component's own binary would have seen.
		name = os.Args[1]
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	run, ok := components[name]
	if !ok {
		names := make([]string, 0, len(components))
		for n := range components {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: kube COMPONENT [ARGS...], or a symlink named after one\ncomponents: %v\n", names)
		os.Exit(2)
	}
	os.Exit(run())
}
