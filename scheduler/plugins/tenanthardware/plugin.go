// Package tenanthardware matches tenant tiers to HardwareTiers: a pod runs only on
// nodes whose HardwareTier admits its namespace's tenant tier (or lends to it, when
// the pod is preemptible), and among those it prefers the ranks that suit its tier —
// gold the most premium hardware, bronze the least. Nodes no HardwareTier selects
// are open to every tenant.
package tenanthardware

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangview"
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
	tiers  atomic.Pointer[tierSet]
	// loaded is closed once the first tier snapshot is taken (New takes it in the
	// background, once the shared cache has synced); nil in unit tests.
	loaded chan struct{}
	// exemption verifies DaemonSet pods against the DaemonSets in the cache.
	exemption daemonSetExemption
	// tenants gives queueing hints and the out-of-cycle checks the tenant tier, as
	// ProfileClassifier reads it (never from the pod's own labels).
	tenants *tenant.Resolver
	// refused are the pending pods Filter refused a node to. When a tier's spec
	// changes they are activated, from this plugin's own cache once it has the change
	// (a retry the scheduler queued on its own HardwareTier event could come first and
	// see the old tiers); the plugin registers no HardwareTier event, so
	// kube-scheduler runs no informer of its own for them.
	refused *refused.Pods
	// devices are the nodes' DRA devices, for tiers that select by them.
	devices deviceLister
	// queues reads which Kueue ClusterQueue admitted a pod, for tiers limited to
	// some.
	queues clusterQueues
}

// clusterQueues says through which Kueue ClusterQueue a pod was admitted (the
// shared cache's Workloads).
type clusterQueues interface {
	ClusterQueueOf(pod *corev1.Pod) (string, bool)
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin. It reads HardwareTiers from the shared KubeNexus cache and
// rebuilds its snapshot whenever one changes.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, views *gangview.Registry, index *devices.Index, tenants *tenant.Provider) (*Plugin, error) {
	args, err := config.DecodeTenantHardwareArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	informers := h.SharedInformerFactory()
	refusedPods, err := refused.New(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pl := &Plugin{
		args:      args,
		handle:    h,
		exemption: daemonSetExemption{daemonSets: informers.Apps().V1().DaemonSets().Lister()},
		tenants:   tenants.Get(h, c),
		refused:   refusedPods,
		queues:    c,
	}
	if index != nil {
		pl.devices = index
	}
	logger := klog.FromContext(ctx)
	// Refreshes run one at a time, so that the last to list is the last to store.
	var refreshing sync.Mutex
	refresh := func() {
		refreshing.Lock()
		defer refreshing.Unlock()
		hwts, err := c.HardwareTiers()
		if err != nil {
			logger.Error(err, "Listing HardwareTiers from the cache")
			return
		}
		set, errs := newTierSet(hwts)
		for _, e := range errs {
			logger.Error(e, "Ignoring a HardwareTier")
		}
		pl.tiers.Store(set)
		pl.refused.Activate(logger, "HardwareTiers changed")
	}
	// The first snapshot waits for the cache to sync, off the start-up path; a
	// cycle that needs it waits for it (currentTiers).
	pl.loaded = make(chan struct{})
	go func() {
		refresh()
		close(pl.loaded)
	}()
	if views != nil {
		views.SetNodePreference(h.ProfileName(), pl.nodePreference)
		views.SetTierBorrow(h.ProfileName(), pl.borrowsFrom)
	}
	// A node's devices can move it into or out of a tier that selects by them.
	if index != nil {
		index.OnChange(func() {
			if t := pl.tiers.Load(); t != nil && t.usesDevices {
				pl.refused.Activate(logger, "ResourceSlices changed")
			}
		})
	}
	if err := c.OnHardwareTierChange(refresh); err != nil {
		return nil, fmt.Errorf("%s: watching HardwareTiers: %w", Name, err)
	}
	// A pod Kueue admitted can reach the scheduler before its Workload's admission
	// reaches the cache: the pods Filter refused for it are retried when it does.
	if err := c.OnWorkloadAdmitted(func() { pl.refused.Activate(logger, "A Kueue Workload was admitted") }); err != nil {
		return nil, fmt.Errorf("%s: watching Kueue Workloads: %w", Name, err)
	}
	// A DaemonSet's pod can reach the scheduler before the DaemonSet reaches its
	// cache; once the DaemonSet arrives, the pods Filter refused are retried.
	if _, err := informers.Apps().V1().DaemonSets().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { pl.refused.Activate(logger, "A DaemonSet arrived") },
	}); err != nil {
		return nil, fmt.Errorf("%s: watching DaemonSets: %w", Name, err)
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

type stateData struct {
	tiers       *tierSet
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

// currentTiers is the tier snapshot, once the first has been taken.
func (pl *Plugin) currentTiers() *tierSet {
	if t := pl.tiers.Load(); t != nil || pl.loaded == nil {
		return t
	}
	<-pl.loaded
	return pl.tiers.Load()
}

func readState(cs fwk.CycleState) *stateData { return cyclestate.Read[*stateData](cs, stateKey) }

// SignPod: the verdict depends on the pod's namespace (its tenant tier), the
// preemptible label and, for the DaemonSet exemption, the controller it claims and
// whether it asks for devices, so pods that differ in any are not batched together.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	uidIfQueues := ""
	if t := pl.currentTiers(); t != nil && t.usesClusterQueues {
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
		{Key: "v1.Pod.RequestsDevices()", Value: requestsDevices(pod)},
		// Tiers limited to Kueue ClusterQueues read the pod's Workload (owned by the
		// pod or its controller): then no two pods share a verdict.
		{Key: "v1.Pod.UID (tiers limited to ClusterQueues)", Value: uidIfQueues},
	}, nil
}

// nodePreference rates a node for a pod outside a scheduling cycle (for
// NetworkFabric's gang plans): whether the pod's tenant may use it and its score. The
// tenant tier is read from the namespace label; a namespace without one, a verified
// DaemonSet pod and a cluster without HardwareTiers give every node the same rating.
// borrowsFrom reports whether victim is on node only by borrowing its HardwareTier
// while preemptor's tenant tier is admitted there (gangview.TierBorrowFunc). Tenant
// tiers come from the pods' namespaces (or admitting ClusterQueues, see tenant).
func (pl *Plugin) borrowsFrom(victim, preemptor *corev1.Pod, node *corev1.Node) bool {
	tiers := pl.currentTiers()
	if tiers == nil || len(tiers.tiers) == 0 || victim.Labels[v1alpha1.LabelPreemptible] != "true" {
		return false
	}
	t := tiers.of(node.Name, node.Labels, pl.devices)
	if t == nil {
		return false
	}
	tenantOf := func(p *corev1.Pod) (v1alpha1.TenantTier, bool) {
		src, ok := pl.tenants.Source(p)
		if !ok {
			return "", false
		}
		return workload.TierOf(workload.Namespace{Labels: src}, ""), true
	}
	vt, ok1 := tenantOf(victim)
	pt, ok2 := tenantOf(preemptor)
	return ok1 && ok2 && t.accessFor(vt, true) == borrowed && t.accessFor(pt, false) == allowed
}

func (pl *Plugin) nodePreference(pod *corev1.Pod, node *corev1.Node) (int64, bool) {
	tiers := pl.currentTiers()
	if tiers == nil || len(tiers.tiers) == 0 || pl.exemption.exempt(pod) {
		return 0, true
	}
	src, ok := pl.tenants.Source(pod)
	if !ok || src[v1alpha1.LabelTenantTier] == "" {
		return 0, true
	}
	tenant := workload.TierOf(workload.Namespace{Labels: src}, "")
	preemptible := pod.Labels[v1alpha1.LabelPreemptible] == "true"
	t := tiers.of(node.Name, node.Labels, pl.devices)
	if t != nil && (t.accessFor(tenant, preemptible) == denied || !t.admitsClusterQueue(pl.clusterQueueOf(tiers, pod))) {
		return 0, false
	}
	return tiers.score(t, tenant, preemptible, int64(*pl.args.UntieredNodeScore), int64(*pl.args.BorrowedNodeScore)), true
}
