package feasibility

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/hardware"
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

// tierSet is the HardwareTiers (a tier whose selector does not build selects no
// node, as in the scheduler).
func (c *Cluster) tierSet() *hardware.TierSet {
	tiers, _ := hardware.NewTierSet(c.Tiers)
	return tiers
}

// admits reports whether the node's HardwareTier lets the workload's pods run
// there — plain pods, and pods labelled preemptible (which may borrow) — by its
// tenant tier and ClusterQueue, and names that tier. Nodes no tier selects admit
// every workload.
func admits(tiers *hardware.TierSet, n *corev1.Node, devices func(string) []hardware.Device, w *Workload) (plain, preemptible bool, tier string) {
	t := tiers.OfNode(n.Name, n.Labels, devices)
	if t == nil {
		return true, true, ""
	}
	if !t.AdmitsClusterQueue(w.ClusterQueue) {
		return false, false, t.Name()
	}
	return t.AccessFor(w.Tenant, false) != hardware.Denied, t.AccessFor(w.Tenant, true) != hardware.Denied, t.Name()
}
