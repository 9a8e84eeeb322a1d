package admissioncheck

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
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
}

// Workload is what a Kueue Workload asks for, as the check reads it.
type Workload struct {
	// ClusterQueue admitted the workload's quota; Tenant is its namespace's tier.
	ClusterQueue string
	Tenant       v1alpha1.TenantTier
	PodSets      []PodSet
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
}

// Decision is the check's answer.
type Decision struct {
	Fits    bool
	Message string
}

// anywhere is the pseudo-level that holds every node: a workload without a required
// topology fits when the whole cluster holds it.
const anywhere = "cluster"

// Decide says whether every pod of the workload can be placed now, all or nothing,
// with the planner the scheduler's gang plans use: nodes the pods may run on (node
// selector and affinity, taints, flavors, HardwareTiers), their free capacity, and
// the one topology domain the workload requires.
func Decide(c *Cluster, w *Workload) Decision {
	levels, maxLevel, levelName := c.levelsFor(w)
	tiers := c.tierSelectors()
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
		shapes = append(shapes, placement.Shape{Requests: req, Count: ps.Count})
	}
	nodes := make([]placement.PlanNode, 0, len(c.Nodes))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		pn := placement.PlanNode{Name: n.Name, Free: map[corev1.ResourceName]int64{}, Eligible: make([]bool, len(shapes))}
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
		for _, l := range levels {
			if l.Name == anywhere {
				pn.Domains = append(pn.Domains, anywhere)
			} else {
				pn.Domains = append(pn.Domains, n.Labels[l.NodeLabel])
			}
		}
		plain, preemptible := tiers.admits(n, c.Devices, w)
		for j, ps := range w.PodSets {
			admitted := plain
			if pods[j].Labels[v1alpha1.LabelPreemptible] == "true" {
				admitted = preemptible
			}
			pn.Eligible[j] = admitted &&
				placement.Eligible(pods[j], n) && c.flavorsMatch(ps.Flavors, n)
		}
		nodes = append(nodes, pn)
	}
	plan, short := placement.Compute(nodes, shapes, maxLevel, false)
	what := placement.DescribeShapes(shapes)
	if plan.Fits {
		if levelName == anywhere {
			return Decision{Fits: true, Message: fmt.Sprintf("%s fit on the cluster's free capacity now", what)}
		}
		return Decision{Fits: true, Message: fmt.Sprintf("%s fit in %s %s now", what, levelName, strings.Join(plan.Domains, ", "))}
	}
	var msg string
	switch {
	case short == nil:
		msg = fmt.Sprintf("%s do not fit", what)
	case levelName == anywhere:
		msg = fmt.Sprintf("%s: the nodes they may use hold %d of the %d pods now", what, short.BestFits, short.Need)
	default:
		msg = short.Describe(levelName, shapes)
	}
	return Decision{Message: msg + freeNote(nodes, shapes)}
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
		return []topology.Level{{Name: anywhere}}, 0, anywhere
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

// freeNote adds how much of the workload's scarcest extended resource (else CPU) is
// free on the nodes it may use, and says so when that would be enough were it not
// in pieces.
func freeNote(nodes []placement.PlanNode, shapes []placement.Shape) string {
	var name corev1.ResourceName
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
	var need, free int64
	for _, s := range shapes {
		need += s.Requests[name] * int64(s.Count)
	}
	for i := range nodes {
		for j := range shapes {
			if nodes[i].Eligible[j] {
				free += max(nodes[i].Free[name], 0)
				break
			}
		}
	}
	unit := func(v int64) string {
		if name == corev1.ResourceCPU {
			return fmt.Sprintf("%dm", v)
		}
		return fmt.Sprint(v / 1000)
	}
	if free >= need {
		return fmt.Sprintf("; %s %s free on those nodes, but fragmented", unit(free), name)
	}
	return fmt.Sprintf("; %s %s free on those nodes, %s needed", unit(free), name, unit(need))
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
// tenant tier and ClusterQueue. Nodes no tier selects admit every workload.
func (ts tierSet) admits(n *corev1.Node, devices func(string) []hardware.Device, w *Workload) (plain, preemptible bool) {
	var devs []hardware.Device
	for _, t := range ts {
		if t.sel.UsesDevices() && devices != nil && devs == nil {
			devs = devices(n.Name)
		}
		if !t.sel.Matches(n.Labels, devs) {
			continue
		}
		if !hardware.AdmitsClusterQueue(t.tier.Spec.AllowedClusterQueues, w.ClusterQueue) {
			return false, false
		}
		return hardware.AccessFor(t.tier.Spec.AllowedTenantTiers, t.tier.Spec.Borrowing, w.Tenant, false) != hardware.Denied,
			hardware.AccessFor(t.tier.Spec.AllowedTenantTiers, t.tier.Spec.Borrowing, w.Tenant, true) != hardware.Denied
	}
	return true, true
}
