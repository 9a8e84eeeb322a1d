package networkfabric

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// planSliced plans a gang that asks for slices (topology.Policy.Slices: groups of
// members each in one domain of a lower level, outermost first) with
// placement.ComputeSliced, over every node (no window: a slice layer is required, and
// a refusal must count every domain). Its members are held to the nodes the plan
// claims (sliced.go, claimedNodes), so that each domain of each layer ends with whole
// slices; members already placed keep the plan in their domain, and those missing
// from a slice go back to it. A gang whose pending members all carry distinct ranks
// (workload.RankOrder) and none placed has them in rank order over the plan's slices:
// neighbouring ranks share the innermost slice, and the innermost slices of one
// outer slice hold consecutive ranks (rankNodes). Callers hold pl.mu.
func (pl *Plugin) planSliced(key gang.Key, policy topology.Policy, nodes []fwk.NodeInfo, members []*corev1.Pod, roles []role, shapes []placement.Shape, anchors sets.Set[string], placed int, now time.Time) (*activePlan, *fwk.Status) {
	slices := policy.SliceLayers()
	if len(shapes) != 1 {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: gang %s asks for %s (%s), but its pending members are not alike (%s): slices are planned for members of one shape",
			ErrReasonTopologyUnsatisfiable, key, topology.DescribeSlices(slices, pl.levels), policy.Source, placement.DescribeShapes(shapes)))
	}
	if placed == 0 {
		if err := topology.ValidateSlices(slices, policy.Level, shapes[0].Count, pl.levels); err != nil {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: gang %s: %s (%s)", ErrReasonTopologyUnsatisfiable, key, err, policy.Source))
		}
	}
	planNodes, _ := pl.planNodes(nodes, roles, shapes, anchors, true)
	if placed > 0 && pl.members != nil {
		on := map[string]int{}
		for _, n := range pl.members.PlacedNodes(key) {
			on[n]++
		}
		for i := range planNodes {
			planNodes[i].Placed = on[planNodes[i].Name]
		}
	}
	plan, short := placement.ComputeSliced(planNodes, shapes[0], policy.Level, policy.Required, slices)
	if short != nil {
		code, reason := fwk.Unschedulable, ErrReasonInsufficientCapacity
		if policy.Required {
			code, reason = fwk.UnschedulableAndUnresolvable, ErrReasonTopologyUnsatisfiable
		}
		return nil, fwk.NewStatus(code, fmt.Sprintf("%s: gang %s %s (%s)", reason, key, short.Describe(pl.levels, slices, shapes[0]), policy.Source))
	}
	ap := pl.activate(plan, nodes, shapes, policy, now)
	if placed == 0 {
		ap.rankNodes = rankNodes(workload.RankOrder(members), plan.Ranked)
	}
	pl.plans[key] = ap
	klog.V(4).InfoS("Planned gang in slices", "gang", key, "domains", plan.Domains, "slices", topology.DescribeSlices(slices, pl.levels), "members", ap.need)
	return ap, nil
}

// claimedNodes is the nodes where the plan still sets room aside: a sliced plan's
// members go only there, a ranked member only to those of its slice.
func (pl *Plugin) claimedNodes(ap *activePlan, pod *corev1.Pod) sets.Set[string] {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	claimed := sets.KeySet(ap.claims)
	if mine, ok := ap.rankNodes[pod.UID]; ok {
		return claimed.Intersection(mine)
	}
	return claimed
}

// rankNodes gives each member, in rank order, the nodes of the innermost domain
// its rank falls in: the domains in the plan's order, each taking as many members
// as the plan claimed there. nil when the members have no order or the counts
// differ.
func rankNodes(ordered []*corev1.Pod, ranked []placement.RankedDomain) map[types.UID]sets.Set[string] {
	total := 0
	for _, d := range ranked {
		total += d.Members
	}
	if len(ordered) == 0 || total != len(ordered) {
		return nil
	}
	out := make(map[types.UID]sets.Set[string], len(ordered))
	i := 0
	for _, d := range ranked {
		nodes := sets.New(d.Nodes...)
		for range d.Members {
			out[ordered[i].UID] = nodes
			i++
		}
	}
	return out
}
