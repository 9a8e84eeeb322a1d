package networkfabric

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// planSliced plans a gang that asks for slices (topology.Policy.Slices: groups of
// members each in one domain of a lower level, outermost first) with
// placement.ComputeSliced, over every node (no window: a slice layer is required, and
// a refusal must count every domain). Its members are held to the nodes the plan
// claims (sliced.go, claimedNodes), so that each domain of each layer ends with whole
// slices; members already placed keep the plan in their domain, and those missing
// from a slice go back to it. Callers hold pl.mu.
func (pl *Plugin) planSliced(key gang.Key, policy topology.Policy, nodes []fwk.NodeInfo, roles []role, shapes []placement.Shape, anchors sets.Set[string], placed int, now time.Time) (*activePlan, *fwk.Status) {
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
	pl.plans[key] = ap
	klog.V(4).InfoS("Planned gang in slices", "gang", key, "domains", plan.Domains, "slices", topology.DescribeSlices(slices, pl.levels), "members", ap.need)
	return ap, nil
}

// claimedNodes is the nodes where the plan still sets room aside: a sliced plan's
// members go only there.
func (pl *Plugin) claimedNodes(ap *activePlan) sets.Set[string] {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return sets.KeySet(ap.claims)
}
