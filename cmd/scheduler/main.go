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
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/kube-nexus/kubenexus/scheduler/plugins"
)

func main() {
	if err := plugins.SetDefaultFeatureGates(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := app.NewSchedulerCommand(plugins.RegistryOptions(context.Background())...)
	os.Exit(cli.Run(cmd))
}
