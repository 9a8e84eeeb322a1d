package networkfabric

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
)

const anchoredKey fwk.StateKey = "Anchored" + Name

// Anchored is the domain a gang's placed members run in, where its required policy
// keeps the rest: its level's node label and value. PreFilter writes it for the
// cycle of such a gang's member whether it admits or refuses the pod, so that
// GangPreemption makes room in that domain only (room made elsewhere would never
// take the member: a running gang's replacement, a gang placed in part).
type Anchored struct {
	Label, Value string
}

// Clone: the state is not changed after PreFilter.
func (a *Anchored) Clone() fwk.StateData { return a }

// AnchoredOf is the domain PreFilter wrote for the cycle's pod (ok false: none).
func AnchoredOf(cs fwk.CycleState) (Anchored, bool) {
	if a := cyclestate.Read[*Anchored](cs, anchoredKey); a != nil {
		return *a, true
	}
	return Anchored{}, false
}

// writeAnchored records, for a required policy, the domain of the level the
// gang's placed members all run in (nothing when none is placed or they run in
// several). Cost: O(nodes), for gangs with placed members only.
func (pl *Plugin) writeAnchored(cs fwk.CycleState, key gang.Key, policy topology.Policy, nodes []fwk.NodeInfo) {
	if !policy.Required || pl.members == nil || policy.Level < 0 || policy.Level >= len(pl.levels) {
		return
	}
	placed := sets.New(pl.members.PlacedNodes(key)...)
	if placed.Len() == 0 {
		return
	}
	label := pl.levels[policy.Level].NodeLabel
	value, seen := "", 0
	for _, ni := range nodes {
		n := ni.Node()
		if !placed.Has(n.Name) {
			continue
		}
		v := n.Labels[label]
		if v == "" || (value != "" && v != value) {
			return
		}
		value, seen = v, seen+1
		if seen == placed.Len() {
			break
		}
	}
	if value != "" {
		cs.Write(anchoredKey, &Anchored{Label: label, Value: value})
	}
}

// In reports whether node is in the domain.
func (a Anchored) In(node *corev1.Node) bool { return node.Labels[a.Label] == a.Value }
