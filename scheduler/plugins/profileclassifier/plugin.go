// Package profileclassifier computes each pod's workload profile (class, role,
// framework, tenant tier, gang) once per scheduling cycle and stores it in the cycle
// state for the other KubeNexus plugins. It uses the same api/workload code as the
// webhook, so a pod the webhook never saw is classified the same way.
//
// It also runs the gang Service's admission of gang members to the queue
// (PreEnqueue) under its own name; see Plugin.PreEnqueue.
package profileclassifier

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
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
	// gangs is the profile's gang Service, which admits gang members (nil in unit
	// tests: every pod is let in).
	gangs *gangs.Service
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin; namespaces come from the scheduler's shared informers,
// Kueue's Workloads and ClusterQueues from the shared KubeNexus cache.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, tenants *tenant.Provider, members *gangs.Service) (fwk.Plugin, error) {
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
	return &Plugin{defaultTier: args.DefaultTier, tenants: r, gangs: members}, nil
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
	prof := workload.Classify(pod, ns, pl.defaultTier)
	pl.gangs.FileProfile(&prof, pod)
	cs.Write(stateKey, &stateData{profile: prof})
	return nil, fwk.NewStatus(fwk.Skip)
}

// PreFilterExtensions is nil: the profile does not depend on other pods.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PreEnqueue holds a gang member out of the active queue until its gang's quorum
// exists, by the gang Service's admission (which Coscheduling runs too, after
// this plugin). Run under this plugin's name, the member it holds is re-examined
// only for the events this plugin registers (another member's arrival), not for the
// node events Coscheduling registers for the members it rejects (see the package
// comment of gangs, admission.go). The members it holds are let in by the Service's
// activations: the quorum reached, the PodGroup created or changed, its caches
// synced.
func (pl *Plugin) PreEnqueue(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	if pl.gangs == nil {
		return nil
	}
	return pl.gangs.Admit(ctx, pod)
}

// EventsToRegister lists another member's arrival (or the lifting of its
// scheduling gates), with the Service's hint: the only events PreEnqueue's
// refusals wait for besides the Service's activations. PreFilter never rejects.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	if pl.gangs == nil {
		return []fwk.ClusterEventWithHint{}, nil
	}
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Add | fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: pl.gangs.IsSchedulableAfterMemberAdded},
		{Event: fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: pl.gangs.IsSchedulableAfterMemberAdded},
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
