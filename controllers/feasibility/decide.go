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
	// RetryAfterSeconds is the KubeNexusConfig's spec.kueue.retryAfterSeconds.
	RetryAfterSeconds int32
	// Bounded are the running pods whose runtime is bounded, by node: when each
	// ends at the latest and what it frees.
	Bounded map[string][]Bounded
	// Held is the room ResourceReservations hold on nodes for their owners' pods
	// (unconsumed slots of reservations in phase Reserved, not expired).
	Held []Held
	// NUMA are the nodes' NUMA cells as their NodeResourceTopologies report them,
	// by node name (nil: none); GPUResources the GPU resource names, for the cells
	// of nodes that publish them only as labels.
	NUMA         map[string]*numa.Topology
	GPUResources []corev1.ResourceName
	// PreemptServicesForBatch is GangPreemption's setting in the KubeNexusConfig:
	// batch and training pods may evict service pods of lower priority.
	PreemptServicesForBatch bool
}

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

// Bounded is a running pod with a runtime bound.
type Bounded struct {
	Pod      types.NamespacedName
	Ends     time.Time
	Requests corev1.ResourceList
}

// Held is room a ResourceReservation holds on a node for its owner's pods.
type Held struct {
	Reservation types.NamespacedName
	Node        string
	// Owner is the PodGroup the room is held for (its namespace and name); empty for
	// an owner of another kind.
	Owner types.NamespacedName
	// Requests is what the unconsumed slots hold together; Expires when the
	// reservation lets the room go (zero: when its owner consumes it).
	Requests corev1.ResourceList
	Expires  time.Time
}

// Workload is what a Kueue Workload asks for, as the check reads it.
type Workload struct {
	// ClusterQueue admitted the workload's quota; Tenant is its namespace's tier.
	ClusterQueue string
	Tenant       v1alpha1.TenantTier
	// Gang is the PodGroup the pods belong to, whose ResourceReservations hold room
	// they may use (nil: none).
	Gang    *types.NamespacedName
	PodSets []PodSet
	// PlacedOn are the nodes the gang's members already placed run on (one entry
	// per member): as in the scheduler's gang plan, the pods must join their domain
	// of the required level.
	PlacedOn []string
}

// PodSet is one group of identical pods of a workload.
type PodSet struct {
	Name  string
	Count int
	// Template is the pods' template (requests, node selector and affinity,
	// tolerations, labels).
	Template corev1.PodTemplateSpec
	// Flavors are the ResourceFlavors Kueue assigned the pod set; their node labels
	// restrict its nodes.
	Flavors []string
	// RequiredTopology is the node label of the topology level all its pods must
	// share (Kueue's TAS required topology); "" for none.
	RequiredTopology string
	// DRAGPUs are the whole GPUs each pod asks for through its ResourceClaim
	// templates (hardware.WholeGPUs; a share of a GPU is not counted).
	DRAGPUs int64
}

// Decision is the answer, as one message (the check's) and as the facts it is made
// of (for explain, which says each once, on its own line).
type Decision struct {
	Fits    bool
	Message string
	// Shapes says what the pods ask for ("8 × 8 nvidia.com/gpu"); Level is the level
	// whose one domain must hold them ("cluster" when none is required).
	Shapes, Level string
	// Domains hold the pods when they fit (now, or at Start): domains of Level, named
	// by Level's node label.
	Domains []string
	// Anchored is the domain of Level the gang's placed members run in, when they run
	// in one ("": none placed, or no required level); Free then counts its nodes only.
	Anchored string
	// Short says why no domain of Level holds them (nil when they fit, or when no
	// node may take them at all).
	Short *placement.Shortage
	// Nodes is the number of nodes; Eligible those the pods may use (node selector
	// and affinity, taints, flavors, HardwareTiers); TierRefused those that only a
	// HardwareTier keeps them from, and RefusingTiers those tiers' names.
	Nodes, Eligible, TierRefused int
	RefusingTiers                []string
	// GPUMemory is the most GPU memory per GPU a pod set asks for, in bytes (0: none);
	// MemoryRefused the nodes otherwise open whose GPUs have less, by their labels or
	// their DRA devices' memory capacity (nodes that publish neither are not refused
	// here).
	GPUMemory     int64
	MemoryRefused int
	// NUMARefused are the nodes otherwise open whose NUMA cells could not hold a pod
	// under its NUMA policy even with no other pod on them; NUMAWhy says why for the
	// first of them ("node a: single-numa: no NUMA cell with 48 CPUs free; best cell
	// has 32 CPUs").
	NUMARefused int
	NUMAWhy     string
	// Resource is the pods' scarcest extended resource (else CPU); Free how much of
	// it is free on the nodes they may use and Need how much they ask for, in
	// milli-units.
	Resource   corev1.ResourceName
	Free, Need int64
	// Start is the earliest time the pods fit if running pods end at their runtime
	// bounds and reservations of others at their expiry (zero: they fit now, or no
	// such time is known); StartWhen says which of them frees the room by then.
	Start     time.Time
	StartWhen string
}

// Anywhere is the pseudo-level that holds every node: a workload without a required
// topology fits when the whole cluster holds it.
const Anywhere = placement.AnyDomain

// Decide says whether every pod of the workload can be placed now, all or nothing,
// with the planner the scheduler's gang plans use: nodes the pods may run on (node
// selector and affinity, taints, flavors, HardwareTiers), their free capacity, and
// the one topology domain the workload requires.
func Decide(c *Cluster, w *Workload) Decision {
	levels, maxLevel, levelName := c.levelsFor(w)
	tiers := c.tierSelectors()
	d := Decision{Level: levelName, Nodes: len(c.Nodes)}
	seenTier := map[string]bool{}
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
	d.Shapes = placement.DescribeShapes(shapes)
	// GPU memory per GPU the pod sets ask for (scheduling.kubenexus.io/vram-request);
	// 0 for none, or for a malformed value, which the webhook and the scheduler report.
	vram := make([]int64, len(pods))
	for j, pod := range pods {
		if v, ok, err := workload.VRAMRequestOf(pod.Annotations); ok && err == nil && workload.RequestedGPUs(pod) > 0 {
			vram[j] = v
			d.GPUMemory = max(d.GPUMemory, v)
		}
	}
	placedOn := map[string]bool{}
	for _, n := range w.PlacedOn {
		placedOn[n] = true
	}
	nodes := make([]placement.PlanNode, 0, len(c.Nodes))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		pn := placement.PlanNode{Name: n.Name, Free: map[corev1.ResourceName]int64{}, Eligible: make([]bool, len(shapes)), Anchor: placedOn[n.Name]}
		for name, q := range n.Status.Allocatable {
			pn.Free[name] = q.MilliValue()
		}
		if c.Extended != nil {
			for name, count := range c.Extended(n.Name) {
				if pn.Free[name] == 0 {
					pn.Free[name] = count * 1000
				}
			}
		}
		for name, q := range c.Requested[n.Name] {
			pn.Free[name] -= q.MilliValue()
		}
		if g := c.cardsOf(n); g != nil {
			// What claims hold is in the cards' allocation, not in Requested.
			pn.Free[c.gpuResource()] = g.FreeCards() * 1000
		}
		for _, h := range c.heldFromOthers(n.Name, w) {
			for name, q := range h.Requests {
				pn.Free[name] -= q.MilliValue()
			}
		}
		for _, l := range levels {
			if l.Name == Anywhere {
				pn.Domains = append(pn.Domains, Anywhere)
			} else {
				pn.Domains = append(pn.Domains, n.Labels[l.NodeLabel])
			}
		}
		plain, preemptible, refusing := tiers.admits(n, c.Devices, w)
		eligible, refused, short, numaShort := false, false, false, ""
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
			eligible = eligible || pn.Eligible[j]
			refused = refused || (open && !admitted)
			short = short || (open && admitted && !memoryOK)
			if numaShort == "" {
				numaShort = numaWhy
			}
		}
		switch {
		case eligible:
			d.Eligible++
		case refused:
			d.TierRefused++
			if !seenTier[refusing] {
				seenTier[refusing] = true
				d.RefusingTiers = append(d.RefusingTiers, refusing)
			}
		case short:
			d.MemoryRefused++
		case numaShort != "":
			d.NUMARefused++
			if d.NUMAWhy == "" {
				d.NUMAWhy = "node " + n.Name + ": " + numaShort
			}
		}
		nodes = append(nodes, pn)
	}
	sort.Strings(d.RefusingTiers)
	d.Anchored = anchoredDomain(nodes, maxLevel, levelName)
	d.Resource, d.Free, d.Need = scarcest(nodes, shapes, maxLevel, d.Anchored)
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
			pods = append(pods, placement.Release{At: b.Ends, Node: i, Frees: frees})
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

// scarcest returns the pods' scarcest extended resource (else CPU), how much of it
// is free on the nodes they may use, and how much they need.
func scarcest(nodes []placement.PlanNode, shapes []placement.Shape, level int, in string) (name corev1.ResourceName, free, need int64) {
	for _, s := range shapes {
		for r := range s.Requests {
			if strings.Contains(string(r), "/") && (name == "" || r < name) {
				name = r
			}
		}
	}
	if name == "" {
		name = corev1.ResourceCPU
	}
	for _, s := range shapes {
		need += s.Requests[name] * int64(s.Count)
	}
	for i := range nodes {
		if in != "" && nodes[i].Domain(level) != in {
			continue
		}
		for j := range shapes {
			if nodes[i].Eligible[j] {
				free += max(nodes[i].Free[name], 0)
				break
			}
		}
	}
	return name, free, need
}

// anchoredDomain is the one domain of level the gang's placed members (anchors) run
// in; "" when none is placed, they run in several, or no level is required.
func anchoredDomain(nodes []placement.PlanNode, level int, levelName string) string {
	if levelName == Anywhere {
		return ""
	}
	in := ""
	for i := range nodes {
		if !nodes[i].Anchor {
			continue
		}
		if d := nodes[i].Domain(level); in == "" {
			in = d
		} else if d != in {
			return ""
		}
	}
	return in
}

// domainsAt names the domains of level that hold a plan: the plan may have found
// room at a lower level (one node, one NVLink domain), whose domain names are
// another label's values.
func domainsAt(nodes []placement.PlanNode, plan placement.Plan, level int) []string {
	if plan.Level == level {
		return plan.Domains
	}
	in := map[string]bool{}
	for _, d := range plan.Domains {
		in[d] = true
	}
	var out []string
	seen := map[string]bool{}
	for i := range nodes {
		if !in[nodes[i].Domain(plan.Level)] {
			continue
		}
		if d := nodes[i].Domain(level); !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// Quantity says an amount of Resource in its unit ("64", "3500m").
func (d *Decision) Quantity(v int64) string {
	if d.Resource == corev1.ResourceCPU {
		return fmt.Sprintf("%dm", v)
	}
	return fmt.Sprint(v / 1000)
}

// Fragmented reports that the free amount of the scarcest resource would hold the
// pods were it not in pieces.
func (d *Decision) Fragmented() bool { return d.Free >= d.Need }

// freeNote says how much of the scarcest resource is free on the nodes the pods may
// use, and that it would be enough were it not in pieces.
func (d *Decision) freeNote() string {
	if d.Fragmented() {
		return fmt.Sprintf("; %s %s free on those nodes, but fragmented", d.Quantity(d.Free), d.Resource)
	}
	return fmt.Sprintf("; %s %s free on those nodes, %s needed", d.Quantity(d.Free), d.Resource, d.Quantity(d.Need))
}

// tierSet is the HardwareTiers as node selectors, highest rank first.
type tierSet []tierSel

type tierSel struct {
	tier *v1alpha1.HardwareTier
	sel  *hardware.Selector
}

func (c *Cluster) tierSelectors() tierSet {
	var out tierSet
	for i := range c.Tiers {
		if sel, err := hardware.NewSelector(&c.Tiers[i].Spec); err == nil {
			out = append(out, tierSel{tier: &c.Tiers[i], sel: sel})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := out[i].tier.Spec.Rank, out[j].tier.Spec.Rank; a != b {
			return a > b
		}
		return out[i].tier.Name < out[j].tier.Name
	})
	return out
}

// admits reports whether the node's HardwareTier lets the workload's pods run
// there — plain pods, and pods labelled preemptible (which may borrow) — by its
// tenant tier and ClusterQueue, and names that tier. Nodes no tier selects admit
// every workload.
func (ts tierSet) admits(n *corev1.Node, devices func(string) []hardware.Device, w *Workload) (plain, preemptible bool, tier string) {
	var devs []hardware.Device
	for _, t := range ts {
		if t.sel.UsesDevices() && devices != nil && devs == nil {
			devs = devices(n.Name)
		}
		if !t.sel.Matches(n.Labels, devs) {
			continue
		}
		if !hardware.AdmitsClusterQueue(t.tier.Spec.AllowedClusterQueues, w.ClusterQueue) {
			return false, false, t.tier.Name
		}
		return hardware.AccessFor(t.tier.Spec.AllowedTenantTiers, t.tier.Spec.Borrowing, w.Tenant, false) != hardware.Denied,
			hardware.AccessFor(t.tier.Spec.AllowedTenantTiers, t.tier.Spec.Borrowing, w.Tenant, true) != hardware.Denied, t.tier.Name
	}
	return true, true, ""
}
