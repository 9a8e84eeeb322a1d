// Package schedulertest runs kubenexus-scheduler in-process for integration tests and benchmarks.
package schedulertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/kube-nexus/kubenexus/scheduler/plugins"
)

// SchedulerName is the profile name test pods use.
const SchedulerName = "kubenexus-scheduler"

// CoschedulingProfile is the profiles section of a KubeSchedulerConfiguration with
// one KubeNexus profile (see KubeNexusProfile).
func CoschedulingProfile(backoffSeconds, timeoutSeconds int) string {
	return "profiles:\n" + KubeNexusProfile(SchedulerName, backoffSeconds, timeoutSeconds)
}

// KubeNexusProfile is one profile entry with ProfileClassifier and Coscheduling
// enabled wherever they apply (Coscheduling replacing the default queue sort).
func KubeNexusProfile(schedulerName string, backoffSeconds, timeoutSeconds int) string {
	return fmt.Sprintf(`- schedulerName: %s
  plugins:
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
    multiPoint:
      enabled: [{name: ProfileClassifier}, {name: Coscheduling}]
  pluginConfig:
  - name: Coscheduling
    args:
      backoffSeconds: %d
      defaultScheduleTimeoutSeconds: %d
`, schedulerName, backoffSeconds, timeoutSeconds)
}

// StartScheduler runs kubenexus-scheduler in this process through the same code
// path as cmd/scheduler (app.Setup with plugins.RegistryOptions, then app.Run),
// against the API server in kubeconfig. The profiles YAML is appended to a
// KubeSchedulerConfiguration without leader election. It returns when the scheduler
// has been set up; cancel ctx to stop it (the returned channel closes when it has).
func StartScheduler(ctx context.Context, dir string, kubeconfig []byte, profiles string) (<-chan struct{}, error) {
	kcPath := filepath.Join(dir, "scheduler.kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "scheduler-config.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: %s
  qps: 5000
  burst: 5000
%s`, kcPath, profiles)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	if err := plugins.SetDefaultFeatureGates(); err != nil {
		return nil, err
	}
	opts := options.NewOptions()
	opts.ConfigFile = cfgPath
	opts.SecureServing.BindPort = 0
	cc, sched, err := app.Setup(ctx, opts, plugins.RegistryOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("setting up the scheduler: %w", err)
	}
	configz.Delete("componentconfig") // app.Run registers it once per process
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = app.Run(ctx, cc, sched)
	}()
	return done, nil
}
