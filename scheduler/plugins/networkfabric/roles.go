package networkfabric

import (
	"encoding/json"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

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
// draAsks adds what a member's ResourceClaims ask of DRA GPUs (nil: not read); a
// claim several members share is counted for the first of them by name.
// byRole keeps members of different roles (workload.RoleOf) in shapes of their own
// even when they ask for the same: a gang with sub-groups plans each role apart.
func shapesOf(members []*corev1.Pod, draAsks func(*corev1.Pod, map[string]bool, map[corev1.ResourceName]int64), byRole bool) (shapes []placement.Shape, roles []role) {
	index, counted := map[string]int{}, map[string]bool{}
	sorted := append([]*corev1.Pod(nil), members...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		dra := map[corev1.ResourceName]int64{}
		if draAsks != nil {
			draAsks(p, counted, dra)
		}
		key := shapeKey(reqs, dra, p)
		if byRole {
			key += "/" + string(workload.RoleOf(p))
		}
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
