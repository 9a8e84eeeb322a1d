package feasibility

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/hardware"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

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
