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
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/scheduler/plugins"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	schedconfig "github.com/kube-nexus/kubenexus/scheduler/apis/config"
)

// SchedulerName is the profile name test pods use.
const SchedulerName = "kubenexus-scheduler"

// CoschedulingProfile is the profiles section of a KubeSchedulerConfiguration with
// one KubeNexus profile (see KubeNexusProfile).
func CoschedulingProfile(backoffSeconds, timeoutSeconds int) string {
	return "profiles:\n" + KubeNexusProfile(SchedulerName, backoffSeconds, timeoutSeconds)
}

// KubeNexusProfile is one profile entry with the plugins the operator renders by
// default — ProfileClassifier, Coscheduling (replacing the default queue sort),
// WorkloadAware at weight 2 (replacing NodeResourcesFit's score), TopologyAware at
// weight 2, NetworkFabric at weight 3, ResourceFragmentation at weight 2,
// TenantHardware at weight 3, NUMATopology at weight 1, VRAM at weight 3, ResourceReservation at weight 10, Backfill at
// weight 1, GangPreemption (replacing DefaultPreemption, and first among the
// PreFilters and the PostFilters), ResourceFragmentation first among the filters
// (before DynamicResources) and BindingBackpressure (first among the binders) — enabled
// wherever they apply — and PodTopologySpread without system default constraints
// (TopologyAware spreads replicas instead).
func KubeNexusProfile(schedulerName string, backoffSeconds, timeoutSeconds int) string {
	return fmt.Sprintf(`- schedulerName: %s
  plugins:
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
    multiPoint:
      enabled: [{name: ProfileClassifier}, {name: Coscheduling}, {name: WorkloadAware, weight: 2}, {name: TopologyAware, weight: 2}, {name: NetworkFabric, weight: 3}, {name: ResourceFragmentation, weight: 2}, {name: TenantHardware, weight: 3}, {name: NUMATopology, weight: 1}, {name: VRAM, weight: 3}, {name: ResourceReservation, weight: 10}, {name: Backfill, weight: 1}, {name: GangPreemption}, {name: BindingBackpressure}]
    score:
      disabled: [{name: NodeResourcesFit}]
    preFilter:
      enabled: [{name: GangPreemption}]
    filter:
      enabled: [{name: ResourceFragmentation}]
    postFilter:
      enabled: [{name: GangPreemption}]
      disabled: [{name: DefaultPreemption}]
    bind:
      enabled: [{name: BindingBackpressure}]
  pluginConfig:
  - name: Coscheduling
    args:
      backoffSeconds: %d
      defaultScheduleTimeoutSeconds: %d
  - name: PodTopologySpread
    args:
      defaultingType: List
`, schedulerName, backoffSeconds, timeoutSeconds)
}

// StartScheduler runs kubenexus-scheduler in this process through the same code
// path as cmd/scheduler (app.Setup with plugins.RegistryOptions, then app.Run),
// against the API server in kubeconfig. The profiles YAML is appended to a
// KubeSchedulerConfiguration without leader election. It returns when the scheduler
// has been set up; cancel ctx to stop it (the returned channel closes when it has).
func StartScheduler(ctx context.Context, dir string, kubeconfig []byte, profiles string) (<-chan struct{}, error) {
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  qps: 5000
  burst: 5000
%s`, profiles)
	return StartSchedulerWithConfig(ctx, dir, kubeconfig, []byte(cfg))
}

// StartSchedulerWithConfig runs kubenexus-scheduler like StartScheduler with a
// whole KubeSchedulerConfiguration (such as the one the operator renders into its
// ConfigMap). Two settings are overridden: clientConnection.kubeconfig, to reach the
// test API server from outside a pod, and leaderElection.leaderElect=false, because
// kube-scheduler exits the whole process when a leading scheduler is stopped.
// Everything else is used as given.
func StartSchedulerWithConfig(ctx context.Context, dir string, kubeconfig, config []byte) (<-chan struct{}, error) {
	kcPath := filepath.Join(dir, "scheduler.kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	var tree map[string]any
	if err := yaml.Unmarshal(config, &tree); err != nil {
		return nil, fmt.Errorf("parsing the scheduler configuration: %w", err)
	}
	cc, _ := tree["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = kcPath
	tree["clientConnection"] = cc
	le, _ := tree["leaderElection"].(map[string]any)
	if le == nil {
		le = map[string]any{}
	}
	le["leaderElect"] = false
	tree["leaderElection"] = le
	data, err := yaml.Marshal(tree)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		return nil, err
	}
	if err := plugins.SetDefaultFeatureGates(); err != nil {
		return nil, err
	}
	// The feature gates the operator gives the scheduler it deploys against this API
	// server's version (none from 1.37 on).
	rc, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	minor, err := schedconfig.APIServerMinor(dc)
	if err != nil {
		return nil, err
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(schedconfig.FeatureGatesForAPIServer(minor)); err != nil {
		return nil, err
	}
	opts := options.NewOptions()
	opts.ConfigFile = cfgPath
	opts.SecureServing.BindPort = 0
	ccfg, sched, err := app.Setup(ctx, opts, plugins.RegistryOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("setting up the scheduler: %w", err)
	}
	configz.Delete("componentconfig") // app.Run registers it once per process
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = app.Run(ctx, ccfg, sched)
	}()
	return done, nil
}
