package feasibility

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/placement/numa"
)

// gpuResource is the resource DRA GPUs count as: the first GPU resource.
func (c *Cluster) gpuResource() corev1.ResourceName {
	if len(c.GPUResources) > 0 {
		return c.GPUResources[0]
	}
	return v1alpha1.ResourceNvidiaGPU
}

// cardsOf returns the node's DRA GPU cards when its GPUs are only those (neither its
// allocatable nor a DeviceClass that backs it gives it the GPU resource); nil
// otherwise.
func (c *Cluster) cardsOf(n *corev1.Node) *hardware.GPUs {
	if c.Cards == nil {
		return nil
	}
	name := c.gpuResource()
	if q, ok := n.Status.Allocatable[name]; ok && !q.IsZero() {
		return nil
	}
	if c.Extended != nil && c.Extended(n.Name)[name] > 0 {
		return nil
	}
	return c.Cards(n.Name)
}

// Without returns a copy of the cluster in which the pods given are gone: their
// requests, their runtime bounds and the DRA GPU cards their claims held no longer
// count. c is not changed.
func (c *Cluster) Without(pods []*corev1.Pod) *Cluster {
	out := *c
	out.Requested = make(map[string]corev1.ResourceList, len(c.Requested))
	for node, rl := range c.Requested {
		out.Requested[node] = rl.DeepCopy()
	}
	for _, p := range pods {
		used := out.Requested[p.Spec.NodeName]
		if used == nil {
			continue
		}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			v := used[name]
			v.Sub(q)
			used[name] = v
		}
		n := used[corev1.ResourcePods]
		n.Sub(*resource.NewQuantity(1, resource.DecimalSI))
		used[corev1.ResourcePods] = n
	}
	// A pod gone frees nothing when its bound comes.
	gone := map[types.NamespacedName]bool{}
	uids := sets.New[types.UID]()
	for _, p := range pods {
		gone[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = true
		uids.Insert(p.UID)
	}
	// Nor do the GPU cards its claims held stay taken.
	if c.CardsWithout != nil {
		out.Cards = c.CardsWithout(uids)
	}
	out.Bounded = make(map[string][]Bounded, len(c.Bounded))
	for node, bs := range c.Bounded {
		for _, b := range bs {
			if !gone[b.Pod] {
				out.Bounded[node] = append(out.Bounded[node], b)
			}
		}
	}
	return &out
}

// gpuMemoryAtLeast reports whether a node's GPUs have at least bytes of memory each:
// by its labels, else by the memory capacity of the DRA devices its ResourceSlices
// publish (the largest of them). A node that says neither is not refused (the VRAM
// plugin refuses it, naming what it lacks); neither is one whose label cannot be read.
func (c *Cluster) gpuMemoryAtLeast(n *corev1.Node, bytes int64) bool {
	per, label, err := hardware.GPUMemoryOf(n)
	if err != nil {
		return true
	}
	if label != "" {
		return per >= bytes
	}
	if c.Devices == nil {
		return true
	}
	published := false
	for _, d := range c.Devices(n.Name) {
		if q, ok := d.CapacityNamed(hardware.DeviceMemoryCapacity); ok {
			if q.Value() >= bytes {
				return true
			}
			published = true
		}
	}
	return !published
}

// numaRefusal says why the node's NUMA cells could not hold the pod under its NUMA
// policy (its own hint or the node's kubelet policy, the stricter) even with no
// other pod on the node; "" when they could, when the node publishes no cells, and
// for a malformed hint (the webhook and the scheduler report it).
func (c *Cluster) numaRefusal(n *corev1.Node, pod *corev1.Pod) string {
	own, err := workload.NUMAPolicyOf(pod.Annotations)
	if err != nil {
		return ""
	}
	t := c.NUMA[n.Name]
	if t == nil {
		if t, err = numa.FromLabels(n, c.GPUResources); err != nil || t == nil {
			return ""
		}
	}
	return numa.RefusesEmpty(t, numa.EffectivePolicy(own, t), numa.DemandOf(pod, t))
}

// heldFromOthers is the room reservations hold on node for owners other than the
// workload's gang.
func (c *Cluster) heldFromOthers(node string, w *Workload) []Held {
	var out []Held
	for _, h := range c.Held {
		if h.Node == node && (w.Gang == nil || h.Owner != *w.Gang) {
			out = append(out, h)
		}
	}
	return out
}

// releases are the bounded pods on the nodes planned over, and the room reservations
// of other owners hold until they expire, as the planner counts them.
func (c *Cluster) releases(nodes []placement.PlanNode, w *Workload) (pods, held []placement.Release) {
	for i := range nodes {
		for _, b := range c.Bounded[nodes[i].Name] {
			frees := map[corev1.ResourceName]int64{corev1.ResourcePods: 1000}
			for name, q := range b.Requests {
				frees[name] += q.MilliValue()
			}
			pods = append(pods, placement.Release{At: b.Ends, Node: i, Frees: frees, Owner: b.Pod.String()})
		}
		for _, h := range c.heldFromOthers(nodes[i].Name, w) {
			if h.Expires.IsZero() {
				continue
			}
			frees := map[corev1.ResourceName]int64{}
			for name, q := range h.Requests {
				frees[name] = q.MilliValue()
			}
			held = append(held, placement.Release{At: h.Expires, Node: i, Frees: frees})
		}
	}
	return pods, held
}

// levelsFor returns the levels to plan over, the highest one the workload may use
// and its name: the level of its required topology (the strictest of its pod sets),
// else the whole cluster.
func (c *Cluster) levelsFor(w *Workload) ([]topology.Level, int, string) {
	required := ""
	for _, ps := range w.PodSets {
		if ps.RequiredTopology == "" {
			continue
		}
		if required == "" || c.levelIndex(ps.RequiredTopology) < c.levelIndex(required) {
			required = ps.RequiredTopology
		}
	}
	if required == "" {
		return []topology.Level{{Name: Anywhere}}, 0, Anywhere
	}
	if i := c.levelIndex(required); i < len(c.Levels) {
		return c.Levels, i, c.Levels[i].Name
	}
	// A level the KubeNexusConfig does not declare (Kueue's Topology may name any
	// node label): plan over that label alone.
	return []topology.Level{{Name: required, NodeLabel: required}}, 0, required
}

func (c *Cluster) levelIndex(label string) int {
	for i, l := range c.Levels {
		if l.NodeLabel == label {
			return i
		}
	}
	return len(c.Levels)
}

func (c *Cluster) flavorsMatch(flavors []string, n *corev1.Node) bool {
	for _, f := range flavors {
		for k, v := range c.FlavorLabels[f] {
			if n.Labels[k] != v {
				return false
			}
		}
	}
	return true
}
