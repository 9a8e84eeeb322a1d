// Package networkfabric places each gang by one plan: when a gang's first member
// reaches PreFilter, it counts from the scheduler snapshot how many members of each
// shape fit in each domain of each topology level (NVLink domain, ToR, rack, zone)
// and picks the smallest level whose best domain holds the whole gang, best fit
// first. Members are then filtered to that domain (required policies) or scored
// toward it (preferred). The plan sets the capacity it counted aside, so two gangs
// planned at the same time do not count the same free capacity; it is dropped when
// the gang is rejected or when all its members are placed. A gang with members
// already placed (a half-placed gang whose plan lost its nodes, members that
// arrive after the quorum) is planned again around them: the rest must join their
// domain. Members that keep one another off a node (required hostname
// anti-affinity, host ports) are planned one per node.
package networkfabric

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/accelerators"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/dragpus"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/tenant"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
)

// Name is the plugin's registered name.
const Name = names.NetworkFabric

const stateKey fwk.StateKey = "PreFilter" + Name

// ErrReasonTopologyUnsatisfiable prefixes the rejection of a gang whose required
// topology no domain can hold; the PodGroup controller turns it into the
// TopologyUnsatisfiable condition reason.
const ErrReasonTopologyUnsatisfiable = v1alpha1.ReasonTopologyUnsatisfiable

// ErrReasonInsufficientCapacity prefixes the refusal of a gang that does not fit the
// cluster at all.
const ErrReasonInsufficientCapacity = v1alpha1.ReasonInsufficientCapacity

// planTTL bounds how long a plan whose gang never completes keeps its claims.
const planTTL = 10 * time.Minute

// Plugin is the NetworkFabric plugin.
type Plugin struct {
	handle fwk.Handle
	levels []topology.Level
	pgs    *crdcache.Cache
	// tiers and accelerators are the profile's tier rules (TenantHardware's) and
	// accelerator rule (WorkloadAware's), by which plans rate and keep off nodes
	// (nil: not applied).
	tiers        *tenant.Tiers
	accelerators *accelerators.Rules
	// gpus reads what pods' claims ask of DRA GPUs and the nodes' free cards (nil:
	// none are read).
	gpus draGPUs
	// members is the profile's gang record: a gang's pending and placed members.
	members *gangs.Service
	// reservations gives what ResourceReservations of other owners hold: room a
	// plan must not count as free (nil in unit tests).
	reservations *resourcereservation.Shared
	now          func() time.Time

	mu    sync.Mutex
	plans map[gang.Key]*activePlan
	// relaxed holds the gangs whose preferred plan, enforced as a filter, left a
	// member without a node: their next plans only score (until planTTL).
	relaxed map[gang.Key]time.Time
	// away is the room nominated away from the gang being planned, per node, for
	// the planFor call under way (nominatedAway): a plan reads a node up to three
	// times (window, cluster, without claims), the nominator copies pods per read.
	away map[string]map[corev1.ResourceName]int64
	// nodeLabels tells which topology levels nodes are labelled with (window.go);
	// nextStart is where the next plan's window of the nodes begins.
	nodeLabels *labelled
	nextStart  int
	// keep is the index of the level kept whole (-1: none); use follows which of
	// its domains are broken (keepwhole.go).
	keep int
	use  nodeUse
	// kept is the use of the domains kept whole for the planFor call under way
	// (under mu), keptLabel their level's node label.
	kept      map[string]domainUse
	keptLabel string
	// planDRA is set while the gang planned asks for DRA GPUs; cards are the nodes'
	// free DRA GPU cards for the planFor call under way, read on first use
	// (cardsRead; dra.go).
	planDRA   bool
	cards     func(node string) (whole, milli int64, ok bool)
	cardsRead bool
	// planLevels are the levels of the planFor call under way (levelsNow).
	planLevels []topology.Level
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin. Gang members come from the profile's gang Service, what
// reservations hold from their shared state, PodGroups from the shared KubeNexus
// cache, GPUs published through DRA from gpus, and the tier and accelerator rules
// the profile applies from tiers and rules.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, members *gangs.Service, reservations *resourcereservation.Shared, gpus *dragpus.View, tiers *tenant.Tiers, rules *accelerators.Rules) (*Plugin, error) {
	args, err := config.DecodeNetworkFabricArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pgs, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	levels := config.Levels(args.Levels)
	pl := &Plugin{handle: h, levels: levels, pgs: pgs, tiers: tiers, accelerators: rules, members: members, reservations: reservations, now: time.Now, plans: map[gang.Key]*activePlan{}, relaxed: map[gang.Key]time.Time{},
		keep: topology.KeptWhole(levels)}
	if gpus != nil {
		pl.gpus = gpus
	}
	if f := h.SharedInformerFactory(); f != nil {
		if pl.nodeLabels, err = trackLabels(f.Core().V1().Nodes().Informer(), levels); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// activePlan is a gang's plan and the capacity it still sets aside.
type activePlan struct {
	policy topology.Policy
	// rank orders nodes for scoring: 0 for the best domain, 1 the next, ...; nodes
	// outside the plan are absent. For required plans it is the filter set.
	rank map[string]int
	// claimed are the nodes the plan assigned members to when it was made (its
	// claims shrink as members are placed; this set does not).
	claimed map[string]bool
	// claims are the resources set aside per node for the members not placed yet.
	claims map[string]map[corev1.ResourceName]int64
	// groupNodes are, for a plan of sub-groups, the nodes claimed for each role
	// (grouped.go); nil otherwise.
	groupNodes map[string]sets.Set[string]
	// rankNodes are, for a sliced plan of ranked members, the nodes of each member's
	// innermost slice domain (sliced.go); nil otherwise.
	rankNodes map[types.UID]sets.Set[string]
	// released are the claims whose DRA GPUs members' Reserve took off the
	// claims: a claim members share is released once, as the plan counted it.
	released map[string]bool
	// fits: every member found a node in the plan's domains.
	fits     bool
	need     int
	reserved int
	created  time.Time
}

// stateData carries the pod's gang plan from PreFilter to Score and Reserve.
type stateData struct {
	key  gang.Key
	plan *activePlan
	// restricted: PreFilter limited the pod to the plan's nodes.
	restricted bool
}

func (s *stateData) Clone() fwk.StateData { return s }

func readState(cs fwk.CycleState) *stateData { return cyclestate.Read[*stateData](cs, stateKey) }

// SignPod refuses the members of gangs it plans: PreFilter restricts each one to
// the nodes its plan set aside for the members not placed yet, a set the previous
// member's placement shrinks, so the previous member's ranking never holds a node
// the next may take (opportunistic batching finds none for planned members) and
// signing them only costs time. Pods of no gang, and
// members whose co-locate annotation says none, are signed: the latter by their
// gang (its PodGroup, which this does not read under the queue's lock, may still
// ask for a plan, whose members must not share a ranking with another gang's) —
// unless domains are kept whole (signsKeepWhole).
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	m, ok, err := pl.members.Of(pod)
	if err != nil || !ok {
		if !pl.signsKeepWhole(pod) {
			return nil, fwk.NewStatus(fwk.Unschedulable, "pods are kept off whole domains of the level kept whole, which the previous pod's placement can break")
		}
		return nil, nil
	}
	if pod.Annotations[v1alpha1.AnnotationCoLocate] == string(v1alpha1.CoLocationNone) {
		if !pl.signsKeepWhole(pod) {
			return nil, fwk.NewStatus(fwk.Unschedulable, "pods are kept off whole domains of the level kept whole, which the previous pod's placement can break")
		}
		return []fwk.SignFragment{{Key: "kubenexus.io/network-plan", Value: m.Key.String()}}, nil
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, "gang members are placed from their gang's plan, not from the previous pod's ranking")
}

// EventsToRegister: a gang refused for its topology can fit once nodes are added or
// gain capacity or labels, once a bound pod goes away, or once its PodGroup's
// policy changes.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: isSchedulableAfterPodDeleted},
		// The gang's PodGroup spec changed (spec.networkTopology); status updates re-queue nobody.
		{Event: fwk.ClusterEvent{Resource: gangs.PodGroupResource, ActionType: fwk.Update}, QueueingHintFn: gangs.IsSchedulableAfterPodGroupChange},
	}, nil
}
