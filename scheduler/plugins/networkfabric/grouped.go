package networkfabric

import (
	"fmt"
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

// planGrouped plans a gang whose roles have sub-groups (topology.Policy.Groups: a
// role's members in one domain of a level of their own, within the gang's) with
// placement.ComputeGroups over every node; each member is then held to the nodes the
// plan claims for its role (groupNodes). A role's pending members must be alike.
// Callers hold pl.mu.
func (pl *Plugin) planGrouped(key gang.Key, policy topology.Policy, nodes []fwk.NodeInfo, roles []role, shapes []placement.Shape, anchors sets.Set[string], now time.Time) (*activePlan, *fwk.Status) {
	levels := pl.levelsNow()
	byRole := map[string]int{}
	for i, r := range roles {
		name := string(workload.RoleOf(r.pod))
		if j, twice := byRole[name]; twice {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: gang %s keeps role %q in one domain (%s), but its pending members of that role are not alike (%s, %s): a sub-group is planned for members of one shape",
				ErrReasonTopologyUnsatisfiable, key, name, policy.Source, placement.DescribeShapes(shapes[j:j+1]), placement.DescribeShapes(shapes[i:i+1])))
		}
		byRole[name] = i
	}
	var groups []placement.GroupShape
	for _, g := range policy.GroupLayers() {
		if i, ok := byRole[g.Role]; ok {
			groups = append(groups, placement.GroupShape{Role: g.Role, Shape: i, Level: g.Level})
		}
	}
	planNodes, _ := pl.planNodes(nodes, roles, shapes, anchors, true)
	plan, roleNodes, short := placement.ComputeGroups(planNodes, shapes, groups, policy.Level, policy.Required)
	if short != nil {
		code, reason := fwk.Unschedulable, ErrReasonInsufficientCapacity
		if policy.Required {
			code, reason = fwk.UnschedulableAndUnresolvable, ErrReasonTopologyUnsatisfiable
		}
		return nil, fwk.NewStatus(code, fmt.Sprintf("%s: gang %s %s (%s)", reason, key, short.Describe(levels), policy.Source))
	}
	ap := pl.activate(plan, nodes, shapes, policy, now)
	ap.groupNodes = map[string]sets.Set[string]{}
	for role, ns := range roleNodes {
		ap.groupNodes[role] = sets.New(ns...)
	}
	pl.plans[key] = ap
	klog.V(4).InfoS("Planned gang in sub-groups", "gang", key, "domains", plan.Domains, "roles", roleNodes)
	return ap, nil
}

// groupedNodes is where a member of a grouped plan may go: the nodes still claimed
// for its role (any node still claimed, for a role without a sub-group).
func (pl *Plugin) groupedNodes(ap *activePlan, pod *corev1.Pod) sets.Set[string] {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	claimed := sets.KeySet(ap.claims)
	if own, ok := ap.groupNodes[string(workload.RoleOf(pod))]; ok {
		return claimed.Intersection(own)
	}
	return claimed
}
