package gangpreemption

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// members returns the pods to make room for: the pod, and for a gang member the
// gang's other members that still need a node, up to its quorum. short says why
// none should be evicted for them yet ("" when they are all there): the gang's size
// is not known (no PodGroup seen, no size on the pod), or fewer of its members than
// its quorum still needs exist. Room made for part of a gang was held for members
// that could not start without the rest, while the rest had none.
func (pl *Plugin) members(pod *corev1.Pod, prof workload.Profile) (out []*corev1.Pod, short string) {
	out = []*corev1.Pod{pod}
	if prof.Gang == nil || pl.gangs == nil {
		return out, ""
	}
	key := prof.Gang.Key
	minMember := prof.Gang.MinMember
	var roles map[string]int32
	pg := pl.crds.PodGroup(key)
	if pg != nil {
		if minMember == 0 {
			minMember = pg.Spec.MinMember
		}
		roles = gang.RolesOf(pg).Required()
	}
	if minMember == 0 {
		return out, fmt.Sprintf("the size of gang %s is not known yet (no PodGroup seen): nothing is evicted for part of a gang", key)
	}
	need := int(minMember) - len(pl.gangs.PlacedNodes(key))
	if need <= 1 {
		return out, ""
	}
	others := rolesFirst(pl.gangs.Pending(key), roles)
	for _, p := range others {
		if len(out) >= need {
			break
		}
		if p.UID != pod.UID {
			out = append(out, p)
		}
	}
	if len(out) < need {
		return out, fmt.Sprintf("%d of the %d members gang %s still needs exist: nothing is evicted for part of a gang", len(out), need, key)
	}
	return out, ""
}

// rolesFirst orders a gang's pending members by name, except that for each role of
// the PodGroup's minMemberPerRole the first members up to its minimum come first:
// the room preemption makes must hold the members every role needs, not only
// minMember of any role.
func rolesFirst(pods []*corev1.Pod, roles map[string]int32) []*corev1.Pod {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	if len(roles) == 0 {
		return pods
	}
	taken := map[string]int32{}
	first := make([]*corev1.Pod, 0, len(pods))
	var rest []*corev1.Pod
	for _, p := range pods {
		role := string(workload.RoleOf(p))
		if want, ok := roles[role]; ok && taken[role] < want {
			taken[role]++
			first = append(first, p)
			continue
		}
		rest = append(rest, p)
	}
	return append(first, rest...)
}

// newSearch builds the search over the snapshot: every node's free room, the
// members' eligible nodes and the PodDisruptionBudgets. Room other preemptors
// claimed is not free. Members with the same node constraints (a gang's usually)
// share one pass over the nodes.
func (pl *Plugin) newSearch(infos []fwk.NodeInfo, pods []*corev1.Pod, claimed nodefree.Tally[string], scopes []map[int]bool) *search {
	s := &search{byName: make(map[string]int, len(infos)), budget: map[types.UID]int32{}, scopes: scopes}
	for i, ni := range infos {
		free := nodefree.All(ni)
		for name, v := range claimed[ni.Node().Name] {
			free[name] -= v
		}
		s.nodes = append(s.nodes, node{obj: ni.Node(), free: free})
		s.byName[ni.Node().Name] = i
	}
	for _, p := range pods {
		m := member{pod: p, req: nodefree.Requests(p)}
		for _, prev := range s.members {
			if sameConstraints(prev.pod, p) {
				m.eligible = prev.eligible
				break
			}
		}
		if m.eligible == nil {
			m.eligible = map[int]bool{}
			for i, n := range s.nodes {
				if placement.Eligible(p, n.obj) {
					m.eligible[i] = true
				}
			}
		}
		s.members = append(s.members, m)
	}
	if pdbs, err := pl.pdbs.List(labels.Everything()); err == nil {
		for _, pdb := range pdbs {
			s.pdbs = append(s.pdbs, pdb)
			s.budget[pdb.UID] = pdb.Status.DisruptionsAllowed
		}
	}
	return s
}

// sameConstraints: what placement.Eligible reads is equal for both pods.
func sameConstraints(a, b *corev1.Pod) bool {
	return equality.Semantic.DeepEqual(a.Spec.NodeSelector, b.Spec.NodeSelector) &&
		equality.Semantic.DeepEqual(a.Spec.Affinity, b.Spec.Affinity) &&
		equality.Semantic.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations)
}
