package networkfabric

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// PreFilter finds or makes the plan of the pod's gang. Pods of no gang, and gangs
// that ask for no co-location, are skipped. The pod is restricted to the plan's
// domains: for a required plan always (a gang that no domain of its required level
// holds is refused, saying which level, what the gang needs and what the best domain
// holds); for a preferred plan until a member finds no node there, after which the
// gang's plans only score (PostFilter). Scoring alone would not do: kube-scheduler
// scores a sample of the feasible nodes in large clusters
// (percentageOfNodesToScore), which need not include the plan's.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	m, ok, err := pl.members.Of(pod)
	if err != nil || !ok {
		return nil, fwk.NewStatus(fwk.Skip) // malformed labels are Coscheduling's to refuse
	}
	pg := pl.pgs.PodGroup(m.Key)
	policy, ok, err := topology.PolicyOf(pod, pg, pl.levels)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if policy.Native && cs.GetPlacementCycleState() != nil {
		// kube-scheduler's own pod group cycle (GenericWorkload on) is trying one of
		// the domains its placement plugins made for this constraint: the candidate's
		// nodes are the domain, and a plan made again for every candidate and member
		// would only repeat it.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	key, quorum := m.Key, int(m.MinMember)
	if quorum == 0 && pg != nil {
		quorum = int(pg.Spec.MinMember)
	}
	if part, size, ok := workload.SubgroupOf(pod); ok && m.NeedsPodGroupObject() {
		// A LeaderWorkerSet group inside a PodGroup that spans several (a serving
		// deployment's prefill and decode sets) is planned on its own: the policy's
		// domain holds each group, as LWS's own topology annotation means it.
		key, quorum = m.Key.Part(part), size
	}
	pl.writeAnchored(cs, key, policy)
	ap, status := pl.planFor(key, pod, policy, quorum, nodes)
	if status != nil {
		return nil, status
	}
	// A preferred plan that does not hold the whole gang (the cluster lacks room, or the
	// snapshot does not show all nodes yet) only scores: the gang needs other nodes too.
	if len(policy.SliceLayers()) > 0 {
		// Slices hold whatever the mode: only the nodes the plan claims keep every
		// domain of every layer to whole slices; a ranked member only those of its
		// slice.
		cs.Write(stateKey, &stateData{key: key, plan: ap, restricted: true})
		return &fwk.PreFilterResult{NodeNames: pl.claimedNodes(ap, pod)}, nil
	}
	if ap.groupNodes != nil {
		// Sub-groups too: each member on the nodes claimed for its role.
		cs.Write(stateKey, &stateData{key: key, plan: ap, restricted: true})
		return &fwk.PreFilterResult{NodeNames: pl.groupedNodes(ap, pod)}, nil
	}
	restrict := policy.Required || (ap.fits && !pl.isRelaxed(key))
	cs.Write(stateKey, &stateData{key: key, plan: ap, restricted: restrict})
	if !restrict || len(ap.rank) == 0 {
		return nil, nil
	}
	return &fwk.PreFilterResult{NodeNames: sets.KeySet(ap.rank)}, nil
}

// PreFilterExtensions is nil: the plan does not change with a pod added to a node
// during preemption.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// planFor returns the gang's plan, making it when the gang has none, when no member
// has been placed by the current one yet (the snapshot may have changed since), or
// when it expired. quorum is the gang's minMember (0 when unknown).
func (pl *Plugin) planFor(key gang.Key, pod *corev1.Pod, policy topology.Policy, quorum int, nodes []fwk.NodeInfo) (*activePlan, *fwk.Status) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	now := pl.now()
	pl.expire(now)
	pl.planLevels = policy.LevelsWith(pl.levels)
	defer func() {
		pl.away, pl.kept, pl.planDRA, pl.cards, pl.cardsRead, pl.planLevels = nil, nil, false, nil, false, nil
	}()
	sliced, grouped := len(policy.SliceLayers()) > 0, len(policy.GroupLayers()) > 0
	if ap := pl.plans[key]; ap != nil && ap.reserved > 0 && ap.policy == policy && (!sliced && !grouped || len(ap.claims) > 0) && pl.stillHolds(ap) {
		return ap, nil
	}
	delete(pl.plans, key)
	pl.away = map[string]map[corev1.ResourceName]int64{}
	pl.kept, pl.keptLabel = pl.wholeDomains()

	members, anchors, placedMembers := pl.membersOf(key, pod)
	shapes, roles := shapesOf(members, pl.draAsks, grouped)
	pl.planDRA = asksDRA(shapes)
	if sliced {
		return pl.planSliced(key, policy, nodes, members, roles, shapes, anchors, placedMembers, now)
	}
	if grouped {
		return pl.planGrouped(key, policy, nodes, roles, shapes, anchors, now)
	}
	// Before planning node by node: a gang whose members are all needed for its
	// quorum and that asks more of some resource than all nodes have free together
	// fits nowhere, whatever the plan (the usual case of a gang that waits for
	// preemption or for pods to finish). Not for a required policy, whose refusal
	// says which domain holds most.
	pending := 0
	for _, s := range shapes {
		pending += s.Count
	}
	if !policy.Required && (quorum <= 0 || quorum-placedMembers >= pending) {
		if name, free, need, short := clusterShort(nodes, shapes, pl.freeOf); short {
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%s: gang %s: its %d pending members (%s) need %s and all nodes together have %s free, so some member fits no node",
				ErrReasonInsufficientCapacity, key, pending, placement.DescribeShapes(shapes), amount(name, need), amount(name, free)))
		}
	}
	var (
		plan  placement.Plan
		short *placement.Shortage
	)
	planned, windowed := nodes, false // the nodes the plan was made over
	if level, tracked := pl.nodeLabels.lowest(policy.Level); tracked && len(anchors) == 0 && len(nodes) > 0 {
		if window, next := pl.window(nodes, level, pl.nextStart%len(nodes)); window != nil {
			// Taken when it holds the gang in one domain of the window's level or
			// below (any plan, where the window is of single nodes), and breaks no
			// whole domain kept whole (a broken one may be outside the window).
			if plan, short = pl.plan(window, roles, shapes, policy, anchors); plan.Fits && plan.Stranded == 0 && (level < 0 || (plan.Level <= level && len(plan.Domains) == 1)) {
				pl.nextStart, planned, windowed = next, window, true
			}
		}
	}
	if !windowed {
		plan, short = pl.plan(nodes, roles, shapes, policy, anchors)
	}
	// An elastic gang (more members than minMember) whose quorum fits goes on: the
	// members beyond the room wait, as minMember allows.
	quorumFits := quorum > 0 && placedMembers+plan.Placed >= quorum
	if !policy.Required && !plan.Fits && !quorumFits {
		// The gang cannot be placed whole now: members that went on would only hold
		// nodes at Permit, away from gangs that can run, until the gang times out or
		// is rejected, and gangs planned meanwhile would plan around them. Refused
		// before any member is reserved; Coscheduling retries the gang after its
		// backoff, and node and pod-deletion events retry it sooner.
		need := 0
		for _, s := range shapes {
			need += s.Count
		}
		if pl.fitsWithoutClaims(nodes, roles, shapes, anchors) {
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%s: gang %s: %d of its %d pending members (%s) fit beside the capacity set aside for gangs being placed; it waits for them",
				ErrReasonInsufficientCapacity, key, plan.Placed, need, placement.DescribeShapes(shapes)))
		}
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%s: gang %s: %d of its %d pending members (%s) fit the nodes that may take them; the rest fits no node",
			ErrReasonInsufficientCapacity, key, plan.Placed, need, placement.DescribeShapes(shapes)))
	}
	if short != nil && policy.Required {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: gang %s %s (%s)",
			ErrReasonTopologyUnsatisfiable, key, short.Describe(pl.levelsNow()[short.Level].Name, shapes), policy.Source))
	}
	ap := pl.activate(plan, planned, shapes, policy, now)
	pl.plans[key] = ap
	klog.V(4).InfoS("Planned gang", "gang", key, "level", pl.levelsNow()[plan.Level].Name, "domains", plan.Domains, "fits", plan.Fits, "members", ap.need)
	return ap, nil
}

// expire drops the plans and relaxations older than planTTL (callers hold pl.mu).
func (pl *Plugin) expire(now time.Time) {
	for k, p := range pl.plans {
		if now.Sub(p.created) > planTTL {
			delete(pl.plans, k)
		}
	}
	for k, t := range pl.relaxed {
		if now.Sub(t) > planTTL {
			delete(pl.relaxed, k)
		}
	}
}

// membersOf returns the gang's members to plan for (the pending ones with pod among
// them), the nodes of the members already placed, which anchor the plan (the rest
// must join their domain), and how many those are.
func (pl *Plugin) membersOf(key gang.Key, pod *corev1.Pod) (members []*corev1.Pod, anchors sets.Set[string], placed int) {
	members = []*corev1.Pod{pod}
	if pl.members != nil {
		members = withPod(pl.members.Pending(key), pod)
		on := pl.members.PlacedNodes(key)
		anchors, placed = sets.New(on...), len(on)
	}
	// A group created leader first (LeaderWorkerSet with exclusive placement) is
	// planned whole: the members not created yet are counted in the shape of the pod,
	// so that its leader goes only where the group fits, and the room the plan claims
	// for them is set aside until they come.
	if size := workload.LeaderFirstGroupSize(pod); size > len(members)+placed {
		for range size - len(members) - placed {
			members = append(members, pod)
		}
	}
	return members, anchors, placed
}

// activate makes the active plan of plan, made over the nodes planned: its claims
// and the rank of each node for scoring.
func (pl *Plugin) activate(plan placement.Plan, planned []fwk.NodeInfo, shapes []placement.Shape, policy topology.Policy, now time.Time) *activePlan {
	ap := &activePlan{policy: policy, rank: map[string]int{}, claimed: map[string]bool{}, claims: plan.Claims, fits: plan.Fits, created: now, released: map[string]bool{}}
	for n := range plan.Claims {
		ap.claimed[n] = true
	}
	for _, s := range shapes {
		ap.need += s.Count
	}
	// The plan's domains are "<level>/<label value>", or "node/<name>" for a node
	// without the level's label: ranked by label value and by node name, so that
	// ranking every node of the plan names none.
	byValue, byNode := map[string]int{}, map[string]int{}
	label, prefix := "", "node/"
	if levels := pl.levelsNow(); plan.Level < len(levels) {
		label, prefix = levels[plan.Level].NodeLabel, levels[plan.Level].Name+"/"
	}
	for i, d := range plan.Domains {
		if v, ok := strings.CutPrefix(d, prefix); ok && label != "" {
			byValue[v] = i
		} else if name, ok := strings.CutPrefix(d, "node/"); ok {
			byNode[name] = i
		}
	}
	for _, ni := range planned {
		node := ni.Node()
		r, ok := byNode[node.Name]
		if v := node.Labels[label]; v != "" && label != "" {
			r, ok = byValue[v]
		}
		if ok {
			ap.rank[node.Name] = r
		}
	}
	return ap
}

// withPod returns the gang's pending members with the pod being scheduled among them.
// Coscheduling's index and the scheduling queue are fed by separate handlers of the
// pod informer: the member whose arrival completes the quorum is often scheduled
// first, before the index has counted it. A plan made without it covers one member
// too few, and the gang's last member finds no room in the plan's domain.
func withPod(pending []*corev1.Pod, pod *corev1.Pod) []*corev1.Pod {
	for _, p := range pending {
		if p.UID == pod.UID {
			return pending
		}
	}
	return append(pending, pod)
}

// stillHolds reports whether the capacity a plan still sets aside is free on its
// nodes in the current snapshot: pods placed outside the plan (bound by another
// scheduler, or members of no gang) can take it while the gang is half placed.
// Cost: O(nodes the plan still claims on).
func (pl *Plugin) stillHolds(ap *activePlan) bool {
	lister := pl.handle.SnapshotSharedLister()
	if lister == nil {
		return true
	}
	for name, claim := range ap.claims {
		ni, err := lister.NodeInfos().Get(name)
		if err != nil {
			return false
		}
		for r, v := range claim {
			if v <= 0 {
				continue
			}
			free := pl.freeOf(ni, r)
			if free < v {
				return false
			}
		}
	}
	return true
}
