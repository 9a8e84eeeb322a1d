// Package profileclassifier computes each pod's workload profile (class, role,
// framework, tenant tier, gang) once per scheduling cycle and stores it in the cycle
// state for the other KubeNexus plugins. It uses the same api/workload code as the
// webhook, so a pod the webhook never saw is classified the same way.
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
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin; namespaces come from the scheduler's shared informers,
// Kueue's Workloads and ClusterQueues from the shared KubeNexus cache.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, tenants *tenant.Provider) (fwk.Plugin, error) {
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
	return &Plugin{defaultTier: args.DefaultTier, tenants: r}, nil
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

// EventsToRegister is empty: the plugin never rejects a pod.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{}, nil
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
