package networkfabric

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

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

// nodePreference rates a node for a pod as the profile's tier rules do: allowed is
// false when the pod's tenant may not use the node; score (0–100) is its preference
// (tenant.Rules.NodePreference).
type nodePreference func(pod *corev1.Pod, node *corev1.Node) (score int64, allowed bool)

// planNodes makes the plan nodes of the nodes that could take a member: a node
// whose free capacity (before other plans' claims) holds no member of any shape adds
// nothing to any domain's fit, so it is left out unless a member of the gang runs
// there (an anchor). In a full cluster, where gangs wait for preemption or for pods
// to finish, that is nearly every node, and making a plan node (domains, free
// capacity, eligibility, tier preference) is the plan's cost. It returns the nodes
// kept beside their plan nodes.
func (pl *Plugin) planNodes(nodes []fwk.NodeInfo, roles []role, shapes []placement.Shape, anchors sets.Set[string], lessClaims bool) ([]placement.PlanNode, []fwk.NodeInfo) {
	var prefer nodePreference
	if r := pl.tiers.For(pl.handle.ProfileName()); r != nil {
		prefer = r.NodePreference
	}
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
	own, _, _ := pl.members.Of(pod)
	prio := corev1helpers.PodPriority(pod)
	var away map[corev1.ResourceName]int64
	for _, pi := range nominated {
		np := pi.GetPod()
		if np.UID == pod.UID || corev1helpers.PodPriority(np) < prio {
			continue
		}
		if m, ok, err := pl.members.Of(np); err == nil && ok && m.Key == own.Key {
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
	levels := pl.levelsNow()
	domains := make([]string, len(levels))
	for i, l := range levels {
		if v, ok := node.Labels[l.NodeLabel]; ok && v != "" {
			domains[i] = l.Name + "/" + v
		}
	}
	return domains
}

// levelsNow are the levels of the plan being made (planFor sets pl.planLevels: the
// KubeNexusConfig's, and the policy's own label when it names one), else the
// KubeNexusConfig's.
func (pl *Plugin) levelsNow() []topology.Level {
	if pl.planLevels != nil {
		return pl.planLevels
	}
	return pl.levels
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

// planNode is a node as the planner sees it: its domains, its free capacity less
// what other gangs' plans set aside and what reservations of other owners hold, whether each role may run on it, how much the
// gang's tenant prefers it (TenantHardware's rating, when that plugin runs), and
// whether a member of the gang is placed there already.
func (pl *Plugin) planNode(ni fwk.NodeInfo, roles []role, prefer nodePreference, anchors sets.Set[string], lessClaims bool) placement.PlanNode {
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

// keepsOff returns the test for the nodes every role of the gang keeps off while
// others have room (WorkloadAware's rule: a CPU-only gang keeps off accelerator
// nodes), or nil when some role keeps off none or WorkloadAware does not run.
func (pl *Plugin) keepsOff(roles []role) func(fwk.NodeInfo) bool {
	rule := pl.accelerators.For(pl.handle.ProfileName())
	if rule == nil || len(roles) == 0 {
		return nil
	}
	tests := make([]func(fwk.NodeInfo) bool, 0, len(roles))
	for _, r := range roles {
		t := rule.KeepsOff(r.pod)
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
