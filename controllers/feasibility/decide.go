// Package feasibility answers whether a workload's pods can all be placed now, all
// or nothing, in the one topology domain they require — and, when not, why not and
// the earliest time they could be if running pods end at their runtime bounds. The
// Kueue placement-feasibility check and kubectl kubenexus (explain, whatif) decide
// with it, over what a reader of the API shows them, with the planner the scheduler's
// gang plans use (scheduler/placement).
package feasibility

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// Cluster is what the check knows of the cluster, from the manager's informers.
type Cluster struct {
	Nodes []corev1.Node
	// Requested is what the unfinished pods bound to each node request, with the
	// pods resource counting them.
	Requested map[string]corev1.ResourceList
	// Tiers are the HardwareTiers; Devices the DRA devices of a node (nil: none).
	Tiers   []v1alpha1.HardwareTier
	Devices func(node string) []hardware.Device
	// Extended is how many DRA devices of a node back each extended resource its
	// allocatable lacks (hardware.ExtendedResources; nil: none).
	Extended func(node string) map[corev1.ResourceName]int64
	// Cards are a node's GPUs published as DRA devices of a GPU class
	// (hardware.ListGPUCards; nil: none): where neither its allocatable nor Extended
	// has the first GPU resource, its whole free cards count as that resource, and a
	// pod set's DRAGPUs ask for it.
	Cards func(node string) *hardware.GPUs
	// CardsWithout is Cards with the claims released that only the pods gone (by
	// UID) hold (hardware.GPUCards.Without; nil: none), for Without.
	CardsWithout func(gone sets.Set[types.UID]) func(node string) *hardware.GPUs
	// GPUClasses are the GPU DeviceClasses' selectors by name (hardware.GPUClasses),
	// to read pods' claims.
	GPUClasses map[string][]string
	// Levels are the KubeNexusConfig's topology levels, smallest first.
	Levels []topology.Level
	// FlavorLabels and FlavorTolerations are the node labels of Kueue's
	// ResourceFlavors and the tolerations Kueue gives the pods it admits on them, by
	// name.
	FlavorLabels      map[string]map[string]string
	FlavorTolerations map[string][]corev1.Toleration
	// TierFromClusterQueue: tenant tiers come from the admitting ClusterQueue's label
	// (the KubeNexusConfig's spec.kueue.tenantTierFrom).
	TierFromClusterQueue bool
	// StarvationAgingSeconds is the KubeNexusConfig's
	// spec.plugins.coscheduling.starvationAgingSeconds: the queue's aging (0: none).
	StarvationAgingSeconds int32
	// RetryAfterSeconds is the KubeNexusConfig's spec.kueue.retryAfterSeconds.
	RetryAfterSeconds int32
	// Bounded are the running pods whose runtime is bounded, by node: when each
	// ends at the latest and what it frees.
	Bounded map[string][]Bounded
	// Held is the room ResourceReservations hold on nodes for their owners' pods
	// (unconsumed slots of reservations in phase Reserved, not expired).
	Held []Held
	// Accumulating are the PodGroups whose accumulating ResourceReservation
	// (spec.reserveCapacity, a repair) holds room for them as it frees, with when
	// it lapses: the forecast lets them keep that room (placement.Queued.Accumulates).
	Accumulating map[types.NamespacedName]time.Time
	// NUMA are the nodes' NUMA cells as their NodeResourceTopologies report them,
	// by node name (nil: none); GPUResources the GPU resource names, for the cells
	// of nodes that publish them only as labels.
	NUMA         map[string]*numa.Topology
	GPUResources []corev1.ResourceName
	// PreemptServicesForBatch is GangPreemption's setting in the KubeNexusConfig:
	// batch and training pods may evict service pods of lower priority.
	PreemptServicesForBatch bool
	// Consolidation are GangPreemption's consolidation settings.
	Consolidation ConsolidationSettings
}

// Decide says whether every pod of the workload can be placed now, all or nothing,
// with the planner the scheduler's gang plans use: nodes the pods may run on (node
// selector and affinity, taints, flavors, HardwareTiers), their free capacity, and
// the one topology domain the workload requires.
func Decide(c *Cluster, w *Workload) Decision {
	levels, maxLevel, levelName := c.levelsFor(w)
	sliceLevels, outer, slices, sliced := c.slicedLevels(w)
	groupLevels, groupLevel, groupRequired, groups, grouped := c.groupedLevels(w)
	switch {
	case sliced:
		levels, maxLevel, levelName = sliceLevels, max(outer, 0), Anywhere
		if outer >= 0 {
			levelName = sliceLevels[outer].Name
		}
	case grouped:
		levels, maxLevel, levelName = groupLevels, groupLevel, groupLevels[groupLevel].Name
		if !groupRequired {
			levelName = Anywhere
		}
	}
	d := Decision{Level: levelName, Nodes: len(c.Nodes)}
	seenTier := map[string]bool{}
	shapes, nodes, verdicts, vram := c.view(w, levels, c.tierSet())
	d.Shapes = placement.DescribeShapes(shapes)
	for _, v := range vram {
		d.GPUMemory = max(d.GPUMemory, v)
	}
	for i, v := range verdicts {
		switch {
		case v.eligible:
			d.Eligible++
		case v.refused:
			d.TierRefused++
			if !seenTier[v.refusing] {
				seenTier[v.refusing] = true
				d.RefusingTiers = append(d.RefusingTiers, v.refusing)
			}
		case v.short:
			d.MemoryRefused++
		case v.numaShort != "":
			d.NUMARefused++
			if d.NUMAWhy == "" {
				d.NUMAWhy = "node " + c.Nodes[i].Name + ": " + v.numaShort
			}
		}
	}
	sort.Strings(d.RefusingTiers)
	d.Anchored = anchoredDomain(nodes, maxLevel, levelName)
	d.Resource, d.Free, d.Need = scarcest(nodes, shapes, maxLevel, d.Anchored)
	if sliced {
		return decideSliced(d, nodes, shapes, levels, outer, slices)
	}
	if grouped {
		return decideGrouped(d, nodes, shapes, levels, maxLevel, groupRequired, groups)
	}
	plan, short := placement.Compute(nodes, shapes, maxLevel, false)
	where := func(domains []string) string {
		if levelName == Anywhere {
			return "on the cluster's free capacity"
		}
		return fmt.Sprintf("in %s %s", levelName, strings.Join(domains, ", "))
	}
	if plan.Fits {
		d.Fits, d.Domains = true, domainsAt(nodes, plan, maxLevel)
		d.Message = fmt.Sprintf("%s fit %s now", d.Shapes, where(d.Domains))
		return d
	}
	d.Short = short
	switch {
	case short == nil:
		d.Message = fmt.Sprintf("%s do not fit", d.Shapes)
	case levelName == Anywhere:
		d.Message = fmt.Sprintf("%s: the nodes they may use hold %d of the %d pods now", d.Shapes, short.BestFits, short.Need)
	default:
		d.Message = short.Describe(levelName, shapes)
	}
	d.Message += d.freeNote()
	ends, expiries := c.releases(nodes, w)
	if at, later, ok := placement.EarliestStart(nodes, shapes, maxLevel, append(ends, expiries...)); ok {
		d.Start, d.Domains = at, domainsAt(nodes, later, maxLevel)
		d.StartWhen = startWhen(ends, expiries, at)
		d.Message += fmt.Sprintf("; they would fit %s by %s, %s", where(d.Domains), at.UTC().Format(time.RFC3339), d.StartWhen)
	}
	return d
}

// view is the workload as the planner sees it over levels: its pod sets as shapes,
// every node as a plan node (in c.Nodes' order) with why it may or may not take the
// pods, and the GPU memory each pod set asks for per GPU.
func (c *Cluster) view(w *Workload, levels []topology.Level, tiers *hardware.TierSet) ([]placement.Shape, []placement.PlanNode, []nodeVerdict, []int64) {
	shapes, pods := c.shapesOf(w)
	vram := vramOf(pods)
	placedOn := map[string]bool{}
	for _, n := range w.PlacedOn {
		placedOn[n] = true
	}
	nodes := make([]placement.PlanNode, len(c.Nodes))
	verdicts := make([]nodeVerdict, len(c.Nodes))
	for i := range c.Nodes {
		nodes[i], verdicts[i] = c.planNode(&c.Nodes[i], w, pods, vram, levels, tiers, placedOn)
	}
	return shapes, nodes, verdicts, vram
}

// nodeVerdict is why a node may or may not take the workload's pods: some pod set
// may use it (eligible), or a HardwareTier refuses it (refused, the tier
// refusing), its GPUs have too little memory (short), or its NUMA cells cannot
// hold a pod (numaShort says why).
type nodeVerdict struct {
	eligible, refused, short bool
	refusing, numaShort      string
}

// planNode is node n as the planner sees it for the workload (pods and vram from
// shapesOf and vramOf): its free room, its domain at each of levels, and the pod
// sets that may use it.
func (c *Cluster) planNode(n *corev1.Node, w *Workload, pods []*corev1.Pod, vram []int64, levels []topology.Level, tiers *hardware.TierSet, placedOn map[string]bool) (placement.PlanNode, nodeVerdict) {
	pn := placement.PlanNode{Name: n.Name, Free: c.freeFor(n, w), Eligible: make([]bool, len(pods)), Anchor: placedOn[n.Name]}
	for _, l := range levels {
		if l.Name == Anywhere {
			pn.Domains = append(pn.Domains, Anywhere)
		} else {
			pn.Domains = append(pn.Domains, n.Labels[l.NodeLabel])
		}
	}
	var v nodeVerdict
	plain, preemptible, refusing := admits(tiers, n, c.Devices, w)
	v.refusing = refusing
	for j, ps := range w.PodSets {
		admitted := plain
		if pods[j].Labels[v1alpha1.LabelPreemptible] == "true" {
			admitted = preemptible
		}
		open := placement.Eligible(pods[j], n) && c.flavorsMatch(ps.Flavors, n)
		memoryOK := vram[j] == 0 || c.gpuMemoryAtLeast(n, vram[j])
		numaWhy := ""
		if open && admitted && memoryOK {
			numaWhy = c.numaRefusal(n, pods[j])
		}
		pn.Eligible[j] = admitted && open && memoryOK && numaWhy == ""
		v.eligible = v.eligible || pn.Eligible[j]
		v.refused = v.refused || (open && !admitted)
		v.short = v.short || (open && admitted && !memoryOK)
		if v.numaShort == "" {
			v.numaShort = numaWhy
		}
	}
	return pn, v
}

// shapesOf are the workload's pod sets as shapes for the planner, and as the pods
// they make (with the tolerations Kueue adds for their flavors).
func (c *Cluster) shapesOf(w *Workload) ([]placement.Shape, []*corev1.Pod) {
	var shapes []placement.Shape
	var pods []*corev1.Pod
	for _, ps := range w.PodSets {
		pod := &corev1.Pod{ObjectMeta: ps.Template.ObjectMeta, Spec: *ps.Template.Spec.DeepCopy()}
		// Kueue adds its flavors' tolerations to the pods it admits.
		for _, f := range ps.Flavors {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, c.FlavorTolerations[f]...)
		}
		pods = append(pods, pod)
		req := map[corev1.ResourceName]int64{corev1.ResourcePods: 1000}
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			req[name] = q.MilliValue()
		}
		if ps.DRAGPUs > 0 {
			req[c.gpuResource()] += ps.DRAGPUs * 1000
		}
		shapes = append(shapes, placement.Shape{Requests: req, Count: ps.Count})
	}
	return shapes, pods
}

// vramOf is the GPU memory per GPU each pod asks for
// (scheduling.kubenexus.io/vram-request); 0 for none, or for a malformed value,
// which the webhook and the scheduler report.
func vramOf(pods []*corev1.Pod) []int64 {
	vram := make([]int64, len(pods))
	for j, pod := range pods {
		if v, ok, err := workload.VRAMRequestOf(pod.Annotations); ok && err == nil && workload.RequestedGPUs(pod) > 0 {
			vram[j] = v
		}
	}
	return vram
}

// freeFor is the node's free capacity for the workload, in milli-units: its
// allocatable (GPUs that DRA devices back included) less what its pods request and
// what others' reservations hold, its GPUs from its cards when they are DRA devices.
func (c *Cluster) freeFor(n *corev1.Node, w *Workload) map[corev1.ResourceName]int64 {
	free := map[corev1.ResourceName]int64{}
	for name, q := range n.Status.Allocatable {
		free[name] = q.MilliValue()
	}
	if c.Extended != nil {
		for name, count := range c.Extended(n.Name) {
			if free[name] == 0 {
				free[name] = count * 1000
			}
		}
	}
	for name, q := range c.Requested[n.Name] {
		free[name] -= q.MilliValue()
	}
	if g := c.cardsOf(n); g != nil {
		// What claims hold is in the cards' allocation, not in Requested.
		free[c.gpuResource()] = g.FreeCards() * 1000
	}
	for _, h := range c.heldFromOthers(n.Name, w) {
		for name, q := range h.Requests {
			free[name] -= q.MilliValue()
		}
	}
	return free
}

// startWhen says what frees the room by at: running pods reaching their runtime
// bounds, reservations of others expiring, or both.
func startWhen(pods, held []placement.Release, at time.Time) string {
	by := func(rs []placement.Release) bool {
		for _, r := range rs {
			if !r.At.After(at) {
				return true
			}
		}
		return false
	}
	switch p, h := by(pods), by(held); {
	case p && h:
		return "when running pods reach their runtime bounds and ResourceReservations of others expire"
	case h:
		return "when ResourceReservations of others expire"
	}
	return "when running pods reach their runtime bounds"
}
