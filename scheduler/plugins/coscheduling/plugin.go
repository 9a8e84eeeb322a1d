// Package coscheduling schedules gangs all-or-nothing: members are held until the
// gang's quorum exists (PreEnqueue), checked against the gang's minResources
// (PreFilter), and released together once enough of them are reserved (Permit). A
// gang that cannot be completed is rejected and backs off as a unit.
package coscheduling

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
)

// Name is the plugin's registered name.
const Name = names.Coscheduling

// Reasons shown in `kubectl describe pod` and on PodGroup events.
const (
	ErrReasonInvalidGangLabels       = "invalid gang membership"
	ErrReasonWaitingForQuorum        = gangs.ErrReasonWaitingForQuorum
	ErrReasonPodGroupMissing         = "waiting for PodGroup"
	ErrReasonPodGroupUnreadable      = "PodGroup cannot be read as a gang"
	ErrReasonBackoff                 = "gang is backing off after a failed attempt"
	ErrReasonYield                   = "room freed: the gangs queued ahead that wait for room are tried first"
	ErrReasonMinResources            = "cluster lacks the gang's minResources"
	ErrReasonGangRejected            = "gang rejected"
	ErrReasonWaitingForPriorityClass = gangs.ErrReasonWaitingForPriorityClass
	ErrReasonWaitingForCache         = gangs.ErrReasonWaitingForCache
)

// Plugin is the Coscheduling plugin.
type Plugin struct {
	handle fwk.Handle
	args   *config.CoschedulingArgs
	// aging is args.StarvationAgingSeconds (0: none), read once for the queue sort.
	aging int32
	pgs   *crdcache.Cache
	// index is the profile's gang record (members, progress, priority).
	index *gangs.Service
	now   func() time.Time
	// reservations creates the accumulating ResourceReservation of a gang that asks
	// for one (spec.reserveCapacity) when it lacks room (nil in unit tests; a no-op
	// while the ResourceReservation plugin is off).
	reservations *resourcereservation.Shared
}

var (
	_ fwk.QueueSortPlugin   = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin on the profile's gang Service (svc) and the PodGroups of
// the shared KubeNexus cache.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, svc *gangs.Service, reservations *resourcereservation.Shared) (*Plugin, error) {
	args, err := config.DecodeCoschedulingArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pgs, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	RegisterMetrics()
	pl := &Plugin{handle: h, args: args, pgs: pgs, now: time.Now, reservations: reservations, index: svc}
	if args != nil && args.StarvationAgingSeconds != nil {
		pl.aging = *args.StarvationAgingSeconds
	}
	svc.ScheduleWhole()
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// scheduleTimeout is how long members wait at Permit for the rest of the gang.
func (pl *Plugin) scheduleTimeout(pg *v1alpha1.PodGroup) time.Duration {
	if pg != nil && pg.Spec.ScheduleTimeoutSeconds != nil {
		return time.Duration(*pg.Spec.ScheduleTimeoutSeconds) * time.Second
	}
	return pl.args.ScheduleTimeout()
}

// SignPod keeps pods of different gangs apart in the scheduler's opportunistic
// batching; Coscheduling filters no node, so plain pods add nothing.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	m, ok, err := pl.index.Of(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, "invalid gang labels")
	}
	if !ok {
		return nil, nil
	}
	return []fwk.SignFragment{{Key: "kubenexus.io/gang", Value: m.Key.String()}}, nil
}
