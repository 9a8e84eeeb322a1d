package networkfabric

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangview"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
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
	m, ok, err := gang.Of(pod)
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
	ap, status := pl.planFor(key, pod, policy, quorum, nodes)
	if status != nil {
		return nil, status
	}
	// A preferred plan that does not hold the whole gang (the cluster lacks room, or the
	// snapshot does not show all nodes yet) only scores: the gang needs other nodes too.
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
	defer func() { pl.away, pl.kept, pl.planDRA, pl.cards, pl.cardsRead = nil, nil, false, nil, false }()
	if ap := pl.plans[key]; ap != nil && ap.reserved > 0 && ap.policy == policy && pl.stillHolds(ap) {
		return ap, nil
	}
	delete(pl.plans, key)
	pl.away = map[string]map[corev1.ResourceName]int64{}
	pl.kept, pl.keptLabel = pl.wholeDomains()

	members := []*corev1.Pod{pod}
	if pl.members != nil {
		members = withPod(pl.members.Pending(key), pod)
	}
	// Members already placed (by an earlier plan, or before the rest of the gang
	// arrived) anchor the plan: the rest must join their domain.
	var anchors sets.Set[string]
	placedMembers := 0
	if pl.members != nil {
		on := pl.members.PlacedNodes(key)
		anchors, placedMembers = sets.New(on...), len(on)
	}
	// A group created leader first (LeaderWorkerSet with exclusive placement) is
	// planned whole: the members not created yet are counted in the shape of the pod,
	// so that its leader goes only where the group fits, and the room the plan claims
	// for them is set aside until they come.
	if size := workload.LeaderFirstGroupSize(pod); size > len(members)+placedMembers {
		for range size - len(members) - placedMembers {
			members = append(members, pod)
		}
	}
	shapes, roles := shapesOf(members, pl.draAsks)
	pl.planDRA = asksDRA(shapes)
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
			ErrReasonTopologyUnsatisfiable, key, short.Describe(pl.levels[short.Level].Name, shapes), policy.Source))
	}
	ap := &activePlan{policy: policy, rank: map[string]int{}, claimed: map[string]bool{}, claims: plan.Claims, fits: plan.Fits, created: now}
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
	if plan.Level < len(pl.levels) {
		label, prefix = pl.levels[plan.Level].NodeLabel, pl.levels[plan.Level].Name+"/"
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
	pl.plans[key] = ap
	klog.V(4).InfoS("Planned gang", "gang", key, "level", pl.levels[plan.Level].Name, "domains", plan.Domains, "fits", plan.Fits, "members", ap.need)
	return ap, nil
}

// plan plans the gang over nodes (computeByPreference).
func (pl *Plugin) plan(nodes []fwk.NodeInfo, roles []role, shapes []placement.Shape, policy topology.Policy, anchors sets.Set[string]) (placement.Plan, *placement.Shortage) {
	planNodes, kept := pl.planNodes(nodes, roles, shapes, anchors, true)
	var keptOff []bool
	if off := pl.keepsOff(roles); off != nil {
		keptOff = make([]bool, len(kept))
		for i, ni := range kept {
			keptOff[i] = off(ni)
		}
	}
	return computeByPreference(planNodes, keptOff, shapes, policy)
}

// planNodes makes the plan nodes of the nodes that could take a member: a node
// whose free capacity (before other plans' claims) holds no member of any shape adds
// nothing to any domain's fit, so it is left out unless a member of the gang runs
// there (an anchor). In a full cluster, where gangs wait for preemption or for pods
// to finish, that is nearly every node, and making a plan node (domains, free
// capacity, eligibility, tier preference) is the plan's cost. It returns the nodes
// kept beside their plan nodes.
func (pl *Plugin) planNodes(nodes []fwk.NodeInfo, roles []role, shapes []placement.Shape, anchors sets.Set[string], lessClaims bool) ([]placement.PlanNode, []fwk.NodeInfo) {
	prefer := pl.gangs.NodePreference(pl.handle.ProfileName())
	planNodes := make([]placement.PlanNode, 0, len(nodes))
	kept := make([]fwk.NodeInfo, 0, len(nodes))
	for _, ni := range nodes {
		if !roomForAny(ni, shapes, pl.freeOf) && !anchors.Has(ni.Node().Name) {
			continue
		}
		n := pl.planNode(ni, roles, prefer, anchors, lessClaims)
		if len(roles) > 0 {
			for name, v := range pl.nominatedAway(ni.Node().Name, roles[0].pod) {
				n.Free[name] -= v
			}
		}
		planNodes = append(planNodes, n)
		kept = append(kept, ni)
	}
	return planNodes, kept
}

// nominatedAway is the room on the node nominated to pods outside pod's gang that
// pod does not outrank: kube-scheduler's Filter counts those pods on the node
// (room preemption made for them), so a plan that counted it free would send
// members where they fail. Cost: one look-up in the nominator per node kept, per
// planFor call (pl.away, under pl.mu).
func (pl *Plugin) nominatedAway(node string, pod *corev1.Pod) map[corev1.ResourceName]int64 {
	if away, ok := pl.away[node]; ok {
		return away
	}
	away := pl.nominatedAwayNow(node, pod)
	if pl.away != nil {
		pl.away[node] = away
	}
	return away
}

func (pl *Plugin) nominatedAwayNow(node string, pod *corev1.Pod) map[corev1.ResourceName]int64 {
	nominated := pl.handle.NominatedPodsForNode(node)
	if len(nominated) == 0 {
		return nil
	}
	own, _, _ := gang.Of(pod)
	prio := corev1helpers.PodPriority(pod)
	var away map[corev1.ResourceName]int64
	for _, pi := range nominated {
		np := pi.GetPod()
		if np.UID == pod.UID || corev1helpers.PodPriority(np) < prio {
			continue
		}
		if m, ok, err := gang.Of(np); err == nil && ok && m.Key == own.Key {
			continue
		}
		if away == nil {
			away = map[corev1.ResourceName]int64{}
		}
		for name, v := range nodefree.Requests(np) {
			away[name] += v
		}
		away[corev1.ResourcePods] += 1000
	}
	return away
}

// roomForAny reports whether the node's free capacity holds one member of some
// shape. Cost: O(shapes × resources), no allocation.
func roomForAny(ni fwk.NodeInfo, shapes []placement.Shape, freeOf func(fwk.NodeInfo, corev1.ResourceName) int64) bool {
	for _, s := range shapes {
		fits := true
		for name, v := range s.Requests {
			if v > 0 && freeOf(ni, name) < v {
				fits = false
				break
			}
		}
		if fits {
			return true
		}
	}
	return false
}

// clusterShort reports a resource the shapes need more of than all nodes have free
// together (free counted up to the need only: the common case, room enough, stops
// early), in milli-units. Cost: O(nodes) per resource the gang asks for.
func clusterShort(nodes []fwk.NodeInfo, shapes []placement.Shape, freeOf func(fwk.NodeInfo, corev1.ResourceName) int64) (corev1.ResourceName, int64, int64, bool) {
	need := map[corev1.ResourceName]int64{}
	for _, s := range shapes {
		for r, v := range s.Requests {
			need[r] = min(need[r]+nodefree.Times(v, s.Count), math.MaxInt64/2)
		}
	}
	names := make([]corev1.ResourceName, 0, len(need))
	for r := range need {
		names = append(names, r)
	}
	slices.Sort(names)
	for _, r := range names {
		var free int64
		for _, ni := range nodes {
			if f := freeOf(ni, r); f > 0 {
				if free += f; free >= need[r] {
					break
				}
			}
		}
		if free < need[r] {
			return r, free, need[r], true
		}
	}
	return "", 0, 0, false
}

// domainsOf names the node's domain at each level ("" where it has no label).
func (pl *Plugin) domainsOf(node *corev1.Node) []string {
	domains := make([]string, len(pl.levels))
	for i, l := range pl.levels {
		if v, ok := node.Labels[l.NodeLabel]; ok && v != "" {
			domains[i] = l.Name + "/" + v
		}
	}
	return domains
}

// amount writes a milli-unit amount of a resource for a message.
func amount(name corev1.ResourceName, v int64) string {
	switch name {
	case corev1.ResourceCPU:
		return fmt.Sprintf("%dm cpu", v)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return resource.NewQuantity(v/1000, resource.BinarySI).String() + " " + string(name)
	case placement.DRAGPUCapacity:
		return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64) + " GPUs of DRA GPU capacity"
	}
	return fmt.Sprintf("%d %s", v/1000, name)
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

// planNode is a node as the planner sees it: its domains, its free capacity less
// what other gangs' plans set aside and what reservations of other owners hold, whether each role may run on it, how much the
// gang's tenant prefers it (TenantHardware's rating, when that plugin runs), and
// whether a member of the gang is placed there already.
func (pl *Plugin) planNode(ni fwk.NodeInfo, roles []role, prefer gangview.NodePreferenceFunc, anchors sets.Set[string], lessClaims bool) placement.PlanNode {
	node := ni.Node()
	n := placement.PlanNode{Name: node.Name, Domains: pl.domainsOf(node), Free: nodefree.All(ni), Eligible: make([]bool, len(roles)), Anchor: anchors.Has(node.Name)}
	if pl.planDRA {
		if whole, capacity, ok := pl.draFree(node.Name); ok {
			n.Free[placement.DRAWholeGPUs], n.Free[placement.DRAGPUCapacity] = whole, capacity
		}
	}
	if d := node.Labels[pl.keptLabel]; d != "" && pl.kept != nil {
		n.KeepDomain, n.KeepWhole = d, pl.kept[d].whole()
	}
	for _, other := range pl.plans {
		if !lessClaims {
			break
		}
		for name, v := range other.claims[node.Name] {
			n.Free[name] -= v
		}
	}
	// Capacity ResourceReservations of other owners hold is not free for the gang.
	if len(roles) > 0 && pl.reservations.Holds() {
		for name, v := range pl.reservations.Held(roles[0].pod, ni) {
			n.Free[name] -= v
		}
	}
	for i, r := range roles {
		n.Eligible[i] = placement.Eligible(r.pod, node) && r.fitsBesidePods(ni)
		if prefer != nil {
			score, allowed := prefer(r.pod, node)
			n.Eligible[i] = n.Eligible[i] && allowed
			if i == 0 {
				n.Preference = score
			}
		}
	}
	return n
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

// role is one shape of member, with a representative pod and what keeps members of
// it apart: required anti-affinity on the hostname (the InterPodAffinity filter)
// and host ports (the NodePorts filter).
type role struct {
	pod *corev1.Pod
	// hostAntiAffinity are the pod's required anti-affinity terms whose topology is
	// the node.
	hostAntiAffinity []fwk.AffinityTerm
	ports            []corev1.ContainerPort
}

// fitsBesidePods applies the role's hostname anti-affinity and host ports to the
// pods already on the node, as InterPodAffinity and NodePorts would.
func (r role) fitsBesidePods(ni fwk.NodeInfo) bool {
	if len(r.ports) > 0 {
		used := ni.GetUsedPorts()
		for _, p := range r.ports {
			if used.CheckConflict(p.HostIP, string(p.Protocol), p.HostPort) {
				return false
			}
		}
	}
	if len(r.hostAntiAffinity) == 0 {
		return true
	}
	for _, p := range ni.GetPods() {
		for i := range r.hostAntiAffinity {
			if r.hostAntiAffinity[i].Matches(p.GetPod(), nil) {
				return false
			}
		}
	}
	return true
}

// shapesOf groups the gang's members by what decides where they fit: requests,
// node selector, affinity, tolerations and host ports. It returns the shapes
// (requests in milli-units; one member per node for roles whose members keep one
// another off a node) and one role per shape. Anti-affinity over a wider topology
// (a zone, a rack) is left to the InterPodAffinity filter: the plan does not model it.
// draAsks adds what a member's ResourceClaims ask of DRA GPUs (nil: not read).
func shapesOf(members []*corev1.Pod, draAsks func(*corev1.Pod, map[corev1.ResourceName]int64)) ([]placement.Shape, []role) {
	index := map[string]int{}
	var shapes []placement.Shape
	var roles []role
	sorted := append([]*corev1.Pod(nil), members...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		dra := map[corev1.ResourceName]int64{}
		if draAsks != nil {
			draAsks(p, dra)
		}
		key := shapeKey(reqs, dra, p)
		i, ok := index[key]
		if !ok {
			i = len(shapes)
			index[key] = i
			milli := map[corev1.ResourceName]int64{corev1.ResourcePods: 1000}
			for name, q := range reqs {
				milli[name] = q.MilliValue()
			}
			for name, v := range dra {
				milli[name] = v
			}
			r := roleOf(p)
			shape := placement.Shape{Requests: milli}
			if len(r.ports) > 0 {
				shape.MaxPerNode = 1
			}
			for j := range r.hostAntiAffinity {
				if r.hostAntiAffinity[j].Matches(p, nil) {
					shape.MaxPerNode = 1
				}
			}
			shapes = append(shapes, shape)
			roles = append(roles, r)
		}
		shapes[i].Count++
	}
	return shapes, roles
}

func roleOf(p *corev1.Pod) role {
	r := role{pod: p, ports: hostPorts(p)}
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil || len(p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		return r
	}
	pi, err := schedframework.NewPodInfo(p)
	if err != nil {
		return r // an unparsable term: InterPodAffinity refuses the pod itself
	}
	for _, t := range pi.GetRequiredAntiAffinityTerms() {
		if t.TopologyKey == corev1.LabelHostname {
			r.hostAntiAffinity = append(r.hostAntiAffinity, t)
		}
	}
	return r
}

// hostPorts returns the host ports the pod's containers ask for.
func hostPorts(p *corev1.Pod) []corev1.ContainerPort {
	var ports []corev1.ContainerPort
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort > 0 {
				ports = append(ports, port)
			}
		}
	}
	return ports
}

func shapeKey(reqs corev1.ResourceList, dra map[corev1.ResourceName]int64, p *corev1.Pod) string {
	b, _ := json.Marshal([]any{reqs, dra, p.Spec.NodeSelector, p.Spec.Affinity, p.Spec.Tolerations, hostPorts(p)})
	return string(b)
}

// keepsOff returns the test for the nodes every role of the gang keeps off while
// others have room (WorkloadAware's rule: a CPU-only gang keeps off accelerator
// nodes), or nil when some role keeps off none or WorkloadAware does not run.
func (pl *Plugin) keepsOff(roles []role) func(fwk.NodeInfo) bool {
	rule := pl.gangs.KeepOff(pl.handle.ProfileName())
	if rule == nil || len(roles) == 0 {
		return nil
	}
	tests := make([]func(fwk.NodeInfo) bool, 0, len(roles))
	for _, r := range roles {
		t := rule(r.pod)
		if t == nil {
			return nil
		}
		tests = append(tests, t)
	}
	return func(ni fwk.NodeInfo) bool {
		for _, t := range tests {
			if !t(ni) {
				return false
			}
		}
		return true
	}
}

// computeByPreference plans the gang in passes, from the nodes it should use most to
// every node it may use, and keeps the first plan that holds it. A gold gang goes to
// premium hardware, as compactly as premium allows, before it is made more compact
// on hardware its tenant prefers less. A CPU-only gang (keptOff marks the
// accelerator nodes it keeps off) goes to accelerator nodes only when nothing else
// holds it, as WorkloadAware keeps a single CPU-only pod off them: CPU and memory
// taken beside GPUs strand the GPUs. So the passes are:
//  1. the nodes not kept off, of the tenant's most preferred tier;
//  2. the nodes not kept off, of any tier the tenant may use;
//  3. (a gang that keeps off no node) the tenant's most preferred tier;
//  4. every node it may use; nodes kept off are filled last and count as the least
//     preferred.
//
// Passes that would see the same nodes as a later one are skipped.
func computeByPreference(nodes []placement.PlanNode, keptOff []bool, shapes []placement.Shape, policy topology.Policy) (placement.Plan, *placement.Shortage) {
	best, mixed := int64(-1), false
	for _, n := range nodes {
		if best >= 0 && n.Preference != best {
			mixed = true
		}
		best = max(best, n.Preference)
	}
	avoids := slices.Contains(keptOff, true)
	type pass struct{ preferredOnly, notKeptOff bool }
	var passes []pass
	switch {
	case avoids && mixed:
		passes = []pass{{preferredOnly: true, notKeptOff: true}, {notKeptOff: true}}
	case avoids:
		passes = []pass{{notKeptOff: true}}
	case mixed:
		passes = []pass{{preferredOnly: true}}
	}
	fits := func(plan placement.Plan, short *placement.Shortage) bool {
		return (policy.Required && short == nil) || (!policy.Required && plan.Fits)
	}
	restricted := make([]placement.PlanNode, len(nodes))
	for _, p := range passes {
		for i, n := range nodes {
			restricted[i] = n
			if (p.preferredOnly && n.Preference < best) || (p.notKeptOff && keptOff[i]) {
				restricted[i].Eligible = make([]bool, len(shapes)) // none
			}
		}
		if plan, short := placement.Compute(restricted, shapes, policy.Level, !policy.Required); fits(plan, short) {
			return plan, nil
		}
	}
	if !avoids {
		return placement.Compute(nodes, shapes, policy.Level, !policy.Required)
	}
	for i, n := range nodes {
		restricted[i] = n
		if keptOff[i] {
			restricted[i].Last, restricted[i].Preference = true, 0
		}
	}
	return placement.Compute(restricted, shapes, policy.Level, !policy.Required)
}

// fitsWithoutClaims reports whether the gang fits the cluster's free capacity when
// other gangs' plans set nothing aside (callers hold pl.mu).
func (pl *Plugin) fitsWithoutClaims(nodes []fwk.NodeInfo, roles []role, shapes []placement.Shape, anchors sets.Set[string]) bool {
	planNodes, _ := pl.planNodes(nodes, roles, shapes, anchors, false)
	plan, _ := placement.Compute(planNodes, shapes, len(pl.levels)-1, true)
	return plan.Fits
}
