// Package tenanthardware matches tenant tiers to HardwareTiers: a pod runs only on
// nodes whose HardwareTier admits its namespace's tenant tier (or lends to it, when
// the pod is preemptible), and among those it prefers the ranks that suit its tier —
// gold the most premium hardware, bronze the least. Nodes no HardwareTier selects
// are open to every tenant.
package tenanthardware

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/refused"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/tenant"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.TenantHardware

const stateKey fwk.StateKey = "PreFilter" + Name

// ErrReasonNoProfile is the error when ProfileClassifier did not run before it.
const ErrReasonNoProfile = Name + " needs " + names.ProfileClassifier + " enabled in the same profile"

// Plugin is the TenantHardware plugin.
type Plugin struct {
	args   *config.TenantHardwareArgs
	handle fwk.Handle
	// tiers are the cluster's HardwareTiers, the DaemonSet exemption and the nodes'
	// devices, shared with the other plugins; rules are this profile's (Apply).
	tiers *tenant.Tiers
	rules *tenant.Rules
	// tenants gives queueing hints the tenant tier, as ProfileClassifier reads it
	// (never from the pod's own labels).
	tenants *tenant.Resolver
	// refused are the pending pods Filter refused a node to. When a tier's spec
	// changes they are activated, from the shared tier snapshot once it has the
	// change (a retry the scheduler queued on its own HardwareTier event could come
	// first and see the old tiers); the plugin registers no HardwareTier event, so
	// kube-scheduler runs no informer of its own for them.
	refused *refused.Pods
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin over the process's HardwareTier snapshot (tenant.Tiers)
// and applies its rules in the profile.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, index *devices.Index, tenants *tenant.Provider) (*Plugin, error) {
	args, err := config.DecodeTenantHardwareArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	refusedPods, err := refused.New(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	var devs tenant.DeviceLister
	if index != nil {
		devs = index
	}
	tiers, err := tenants.Tiers(ctx, h, c, devs)
	if err != nil {
		return nil, fmt.Errorf("%s: watching HardwareTiers: %w", Name, err)
	}
	pl := &Plugin{
		args:    args,
		handle:  h,
		tiers:   tiers,
		rules:   tiers.Apply(h.ProfileName(), int64(*args.UntieredNodeScore), int64(*args.BorrowedNodeScore)),
		tenants: tenants.Get(h, c),
		refused: refusedPods,
	}
	logger := klog.FromContext(ctx)
	tiers.OnChange(func() { pl.refused.Activate(logger, "HardwareTiers changed") })
	// A node's devices can move it into or out of a tier that selects by them.
	if index != nil {
		index.OnChange(func() {
			if tiers.Current().UsesDevices() {
				pl.refused.Activate(logger, "ResourceSlices changed")
			}
		})
	}
	// A pod Kueue admitted can reach the scheduler before its Workload's admission
	// reaches the cache: the pods Filter refused for it are retried when it does.
	if err := c.OnWorkloadAdmitted(func() { pl.refused.Activate(logger, "A Kueue Workload was admitted") }); err != nil {
		return nil, fmt.Errorf("%s: watching Kueue Workloads: %w", Name, err)
	}
	// A DaemonSet's pod can reach the scheduler before the DaemonSet reaches its
	// cache; once the DaemonSet arrives, the pods Filter refused are retried.
	if _, err := h.SharedInformerFactory().Apps().V1().DaemonSets().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { pl.refused.Activate(logger, "A DaemonSet arrived") },
	}); err != nil {
		return nil, fmt.Errorf("%s: watching DaemonSets: %w", Name, err)
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

type stateData struct {
	tiers       *hardware.TierSet
	tenant      v1alpha1.TenantTier
	preemptible bool
	// clusterQueue admitted the pod through Kueue ("": not through Kueue); read only
	// when some tier is limited to ClusterQueues.
	clusterQueue string
	// recorded: Filter has put the pod in Plugin.refused this cycle (Filter runs for
	// every node in parallel; the map is written once).
	recorded atomic.Bool
}

func (s *stateData) Clone() fwk.StateData { return s }

func readState(cs fwk.CycleState) *stateData { return cyclestate.Read[*stateData](cs, stateKey) }

// SignPod: the verdict depends on the pod's namespace (its tenant tier), the
// preemptible label and, for the DaemonSet exemption, the controller it claims and
// whether it asks for devices, so pods that differ in any are not batched together.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	uidIfQueues := ""
	if pl.tiers.Current().UsesClusterQueues() {
		uidIfQueues = string(pod.UID)
	}
	controller := ""
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		controller = ref.APIVersion + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
	}
	return []fwk.SignFragment{
		{Key: "v1.Pod.Namespace", Value: pod.Namespace},
		{Key: "v1.Pod.Labels[" + v1alpha1.LabelPreemptible + "]", Value: pod.Labels[v1alpha1.LabelPreemptible]},
		{Key: "v1.Pod.OwnerReferences.Controller()", Value: controller},
		{Key: "v1.Pod.RequestsDevices()", Value: tenant.RequestsDevices(pod)},
		// Tiers limited to Kueue ClusterQueues read the pod's Workload (owned by the
		// pod or its controller): then no two pods share a verdict.
		{Key: "v1.Pod.UID (tiers limited to ClusterQueues)", Value: uidIfQueues},
	}, nil
}
