// Package plugins is the one list of KubeNexus scheduler plugins. cmd/scheduler and
// the integration tests build the scheduler from it, so the scheduler under test is
// the scheduler that ships.
package plugins

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/backfill"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/bindingbackpressure"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/numatopology"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/topologyaware"
)

// What kubenexus-scheduler needs beyond kube-scheduler's (system:kube-scheduler less
// the default scheduler's lease: kubenexus-kube-scheduler) and system:volume-scheduler
// (generated into config/rbac/scheduler by hack/schedulerroles):
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=podgroups;hardwaretiers;resourcereservations,verbs=get;list;watch
// ResourceReservation places reservations and records their node and consumption,
// and creates the accumulating reservation of a gang that asks for one.
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=resourcereservations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=resourcereservations,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;update;patch,resourceNames=kubenexus-scheduler
// TenantHardware verifies the DaemonSet a pod claims as its controller; Coscheduling
// orders gangs by their PodGroup's PriorityClass.
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// ResourceFragmentation reads the GPU requests of a pod's ResourceClaimTemplates
// before its claims are made.
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;list;watch
// Coscheduling honours Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1) where
// the API server serves them, and scheduler-plugins', Volcano's and KAI's when their
// CRDs are installed.
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.run.ai,resources=podgroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses;podgroups;compositepodgroups,verbs=get;list;watch
// TenantHardware reads which Kueue ClusterQueue admitted a pod, and ProfileClassifier
// its tier label, when Kueue is installed.
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads;clusterqueues,verbs=get;list;watch
// NUMATopology reads the kubelet's per-NUMA-cell reports when their CRD is installed.
// +kubebuilder:rbac:groups=topology.node.k8s.io,resources=noderesourcetopologies,verbs=get;list;watch
// GangPreemption evicts its victims through the Eviction API, so that
// PodDisruptionBudgets hold.
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// DefaultFeatureGates are kubenexus-scheduler's defaults where they differ from
// kube-scheduler's. Flags (--feature-gates) still override them.
//
// NominatedNodeNameForExpectation (beta, on since 1.35; still in 1.37) makes the scheduler write
// status.nominatedNodeName for every pod that will wait at Permit: one more API write
// per gang member, which costs gang throughput (test/bench measures it), while a
// KubeNexus gang waits at Permit only until its last member is reserved. Clusters whose autoscaler should see the nomination can turn it
// back on.
var DefaultFeatureGates = map[string]bool{"NominatedNodeNameForExpectation": false}

// SetDefaultFeatureGates applies DefaultFeatureGates to the process's feature gate.
// Call it before flags are parsed.
func SetDefaultFeatureGates() error {
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(DefaultFeatureGates)
}

// RegistryOptions returns the app options that register every KubeNexus plugin.
// Plugins share one KubeNexus object cache that lives as long as runCtx, and the
// services of services.go.
func RegistryOptions(runCtx context.Context) []app.Option {
	s := newServices(runCtx)
	return []app.Option{
		app.WithPlugin(names.ProfileClassifier, s.profileClassifier),
		app.WithPlugin(names.Coscheduling, s.coscheduling),
		app.WithPlugin(names.WorkloadAware, s.workloadAware),
		app.WithPlugin(names.TopologyAware, topologyaware.New),
		app.WithPlugin(names.NetworkFabric, s.networkFabric),
		app.WithPlugin(names.ResourceFragmentation, s.resourceFragmentation),
		app.WithPlugin(names.TenantHardware, s.tenantHardware),
		app.WithPlugin(names.NUMATopology, func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return numatopology.New(ctx, obj, h, s.crds)
		}),
		app.WithPlugin(names.VRAM, s.vram),
		app.WithPlugin(names.ResourceReservation, s.resourceReservation),
		app.WithPlugin(names.Backfill, func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return backfill.New(ctx, obj, h, s.reservations)
		}),
		app.WithPlugin(names.GangPreemption, s.gangPreemption),
		app.WithPlugin(names.BindingBackpressure, func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return bindingbackpressure.New(ctx, obj, h)
		}),
	}
}
