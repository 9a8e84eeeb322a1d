// Package resourcereservation makes ResourceReservations hold capacity: pods that
// are not the owner's cannot use what a reservation holds on its node, the owner's
// pods are drawn to it and consume it slot by slot, and reservations that name no
// node are placed by the scheduler. The manager's controller ends reservations (TTL,
// owner gone); the scheduler frees their capacity at the expiry instant itself.
package resourcereservation

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/refused"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.ResourceReservation

const stateKey fwk.StateKey = "PreFilter" + Name

// Plugin is the ResourceReservation plugin of one scheduler profile.
type Plugin struct {
	handle fwk.Handle
	shared *Shared
	// gangs gives the members a gang has placed and those still pending, for
	// accumulating reservations (nil in unit tests).
	gangs *gangs.Service
	// refused are the pending pods Filter refused a node to; they are activated when
	// reservations stop holding (an expiry is no API event, and the scheduler's own
	// reservation event may reach the queue before this plugin's cache has the
	// change).
	refused *refused.Pods
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin on the process's Shared reservation state, starting it on
// first use.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, shared *Shared, members *gangs.Service, devices nodeDevices) (*Plugin, error) {
	args, err := config.DecodeResourceReservationArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := shared.start(ctx, h, c, time.Duration(*args.PlacementRetrySeconds)*time.Second, args.GPUResources, devices); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	refusedPods, err := refused.New(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pl := &Plugin{handle: h, shared: shared, gangs: members, refused: refusedPods}
	if members != nil {
		shared.sizedBy(members.WholeSize)
	}
	shared.whenReleased(func() { pl.refused.Activate(klog.FromContext(ctx), "Reserved capacity was released") })
	if err := pl.watchNodesBack(klog.FromContext(ctx)); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

type stateData struct {
	idx *index
	now time.Time
	// mine are the held reservations the pod may consume.
	mine []*reservation
	// requests are the pod's requests in milli-units.
	requests map[corev1.ResourceName]int64
	// borrower: a preemptible pod Backfill lends reserved capacity to.
	borrower bool
	// accumulated is the room accumulating reservations of other owners hold on
	// each node this cycle, and accumulators names them per node.
	accumulated  nodefree.Tally[string]
	accumulators map[string][]string
	// lent are the accumulating reservations whose room this bounded pod may use,
	// with the slots each holds per node.
	lent     map[types.NamespacedName]map[string]int
	recorded atomic.Bool
}

func (s *stateData) Clone() fwk.StateData { return s }

func readState(cs fwk.CycleState) *stateData { return cyclestate.Read[*stateData](cs, stateKey) }

// isMine reports whether r is one the pod may consume.
func (s *stateData) isMine(r *reservation) bool {
	for _, m := range s.mine {
		if m == r {
			return true
		}
	}
	return false
}

// never is the start of a gang that waits for pods whose runtime is not bounded.
var never = time.Unix(1<<62, 0)

// SignPod: the verdict depends on the owners the pod may consume reservations of;
// pods that own none (nearly all) add nothing.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	idx := pl.shared.index()
	if len(idx.byOwner) == 0 {
		return nil, nil
	}
	var keys []string
	if pl.shared.Lends(pod) {
		keys = append(keys, "borrower")
	}
	for _, o := range ownersOf(pod) {
		if len(idx.byOwner[o]) > 0 {
			keys = append(keys, string(o))
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return []fwk.SignFragment{{Key: "kubenexus.io/reservation-owners", Value: keys}}, nil
}
