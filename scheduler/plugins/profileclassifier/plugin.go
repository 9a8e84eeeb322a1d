// Package profileclassifier computes each pod's workload profile (class, role,
// framework, tenant tier, gang) once per scheduling cycle and stores it in the cycle
// state for the other KubeNexus plugins. It uses the same api/workload code as the
// webhook, so a pod the webhook never saw is classified the same way.
//
// It also runs Coscheduling's admission of gang members to the queue (PreEnqueue)
// under its own name; see Plugin.PreEnqueue.
package profileclassifier

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangview"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/tenant"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.ProfileClassifier

const stateKey fwk.StateKey = "PreFilter" + Name

// Plugin is the ProfileClassifier plugin.
type Plugin struct {
	defaultTier v1alpha1.TenantTier
	// tenants reads the tenant tier's source: the namespace, or the Kueue
	// ClusterQueue that admitted the pod (args.tenantTierFrom).
	tenants *tenant.Resolver
	// gangs holds Coscheduling's admission of the profile's gang members; profile
	// is the profile's name.
	gangs   *gangview.Registry
	profile string
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin; namespaces come from the scheduler's shared informers,
// Kueue's Workloads and ClusterQueues from the shared KubeNexus cache.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, tenants *tenant.Provider, gangs *gangview.Registry) (fwk.Plugin, error) {
	args, err := config.DecodeProfileClassifierArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	r := tenants.Get(h, c)
	r.SetFromClusterQueue(args.TenantTierFrom == v1alpha1.TenantTierFromClusterQueue)
	if gangs != nil {
		gangs.TakeGate(h.ProfileName())
	}
	return &Plugin{defaultTier: args.DefaultTier, tenants: r, gangs: gangs, profile: h.ProfileName()}, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

type stateData struct{ profile workload.Profile }

func (s *stateData) Clone() fwk.StateData { return s }

// PreFilter classifies the pod. It never rejects: a malformed gang label is
// Coscheduling's to refuse.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	var ns workload.Namespace
	ns.Labels, _ = pl.tenants.Source(pod)
	cs.Write(stateKey, &stateData{profile: workload.Classify(pod, ns, pl.defaultTier)})
	return nil, fwk.NewStatus(fwk.Skip)
}

// PreFilterExtensions is nil: the profile does not depend on other pods.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PreEnqueue holds a gang member out of the active queue until its gang's quorum
// exists, by Coscheduling's check (nil when Coscheduling is not in the profile;
// Coscheduling's own PreEnqueue then passes every pod). Run under this
// plugin's name, the member it holds is re-examined only for the events this
// plugin registers (another member's arrival), not for the node events Coscheduling
// registers for the members it rejects: kube-scheduler walked every held member at
// every node event, which at start-up, with the members listed before the nodes,
// was nodes × members hint evaluations (39% of kubenexus-scheduler's first five
// seconds for a gang of 1000 on 1000 nodes, W4 of make bench). The members it
// holds are let in by Coscheduling's activations: the quorum reached, the PodGroup
// created or changed, its caches synced.
func (pl *Plugin) PreEnqueue(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	if pl.gangs == nil {
		return nil
	}
	g, ok := pl.gangs.GateOf(pl.profile)
	if !ok {
		return nil
	}
	return g.Admit(ctx, pod)
}

// EventsToRegister lists another member's arrival (or the lifting of its
// scheduling gates), with Coscheduling's hint: the only events PreEnqueue's
// refusals wait for besides Coscheduling's activations. PreFilter never rejects.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	hint := func(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
		g, ok := pl.gangs.GateOf(pl.profile)
		if !ok {
			return fwk.QueueSkip, nil
		}
		return g.MemberAdded(logger, pod, oldObj, newObj)
	}
	if pl.gangs == nil {
		return []fwk.ClusterEventWithHint{}, nil
	}
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Add | fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: hint},
		{Event: fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: hint},
	}, nil
}

// SignPod contributes nothing to the pod signature: the profile only feeds plugins
// that sign their own inputs.
func (pl *Plugin) SignPod(context.Context, *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}

// ProfileOf returns the profile PreFilter stored, if the plugin ran.
func ProfileOf(cs fwk.CycleState) (workload.Profile, bool) {
	s := cyclestate.Read[*stateData](cs, stateKey)
	if s == nil {
		return workload.Profile{}, false
	}
	return s.profile, true
}
