// Package gangpreemption is the PostFilter that makes room for a pod or a gang that
// fits nowhere: it evicts whole lower-priority gangs (every member, never part of
// one) and lower-priority pods, through the Eviction API so that
// PodDisruptionBudgets hold, choosing the cheapest set (least GPU time thrown away,
// then lowest priority, then fewest pods), and nominates the preemptor. It replaces
// DefaultPreemption in a KubeNexus profile, with the same guarantees for plain pods.
package gangpreemption

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	policylisters "k8s.io/client-go/listers/policy/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/tenant"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
)

// Name is the plugin's registered name.
const Name = names.GangPreemption

// Plugin is the GangPreemption plugin.
type Plugin struct {
	args   *config.GangPreemptionArgs
	handle fwk.Handle
	crds   *crdcache.Cache
	// tiers are the tier rules the profile applies (TenantHardware's; nil in unit
	// tests): preemptible pods that borrow a tier give it back to its tenants.
	tiers *tenant.Tiers
	// gangs is the profile's gang record: a gang's members and queue priority (nil in
	// unit tests).
	gangs    *gangs.Service
	pdbs     policylisters.PodDisruptionBudgetLister
	classes  schedulinglisters.PriorityClassLister
	evictor  *evictor
	gpuNames []corev1.ResourceName

	// reserved are the ResourceReservations: capacity Backfill lent to preemptible
	// pods on an owner's reservation is taken back for the owner.
	reserved *resourcereservation.Shared

	// profiles: the running pods' classification, kept between PostFilters.
	profiles profiles

	mu sync.Mutex
	// inflight are the preemptions whose victims may still be running, by
	// preemptor (its gang, or the pod): further members do not evict more until
	// those are gone or the grace passed.
	inflight map[string]*preemption
	// moves counts the pods consolidation moved in the last hour.
	moves moveLog
}

type preemption struct {
	victims []*corev1.Pod
	// claims are the members the room was made for, each with its node: until they
	// are bound, other preemptors count that room as taken.
	claims []claim
	until  time.Time
}

type claim struct {
	pod  *corev1.Pod
	node string
	req  map[corev1.ResourceName]int64
}

var _ fwk.PostFilterPlugin = &Plugin{}

// New builds the plugin and starts its evictor, which also finishes evictions a
// previous scheduler process began (see evictor).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, members *gangs.Service, tiers *tenant.Tiers, reservations *resourcereservation.Shared) (*Plugin, error) {
	args, err := config.DecodeGangPreemptionArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	informers := h.SharedInformerFactory()
	ev, err := startEvictor(ctx, h, members)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	RegisterMetrics()
	return &Plugin{
		args:     args,
		handle:   h,
		crds:     c,
		tiers:    tiers,
		gangs:    members,
		pdbs:     informers.Policy().V1().PodDisruptionBudgets().Lister(),
		classes:  informers.Scheduling().V1().PriorityClasses().Lister(),
		evictor:  ev,
		gpuNames: args.GPUResources,
		inflight: map[string]*preemption{},
		reserved: reservations,
		profiles: profiles{gangs: members},
	}, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }
