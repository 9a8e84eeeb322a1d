// Command kubenexus-scheduler is kube-scheduler with the KubeNexus plugins registered.
package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-nexus/kubenexus/scheduler/plugins"
)

func main() {
	if err := plugins.SetDefaultFeatureGates(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The KubeNexus object cache is controller-runtime's: its log goes through klog,
	// with the scheduler's logging flags, not into controller-runtime's "SetLogger was
	// never called" warning.
	ctrllog.SetLogger(klog.NewKlogr())
	cmd := app.NewSchedulerCommand(plugins.RegistryOptions(context.Background())...)
	os.Exit(cli.Run(cmd))
}
