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

// Anchored says where a gang's required policy keeps its pending members once some
// are placed: in the domain of the policy's level (its node label) that holds the
// placed members' nodes. PreFilter writes it for the cycle of such a gang's member,
// whether it admits or refuses the pod, so that GangPreemption makes room in that
// domain only (room made elsewhere would never take the member: a running gang's
// replacement, a gang placed in part).
type Anchored struct {
	Label  string
	Placed sets.Set[string]
}

// Clone: the state is not changed after PreFilter.
func (a *Anchored) Clone() fwk.StateData { return a }

// AnchoredOf is what PreFilter wrote for the cycle's pod (ok false: nothing).
func AnchoredOf(cs fwk.CycleState) (*Anchored, bool) {
	a := cyclestate.Read[*Anchored](cs, anchoredKey)
	return a, a != nil
}

// writeAnchored records a required policy's level label and the gang's placed
// nodes; nothing for a gang with none placed. The domain itself is looked up only
// when asked (In), which preemption alone does.
func (pl *Plugin) writeAnchored(cs fwk.CycleState, key gang.Key, policy topology.Policy) {
	if !policy.Required || pl.members == nil || policy.Level < 0 || policy.Level >= len(pl.levels) {
		return
	}
	if placed := pl.members.PlacedNodes(key); len(placed) > 0 {
		cs.Write(anchoredKey, &Anchored{Label: pl.levels[policy.Level].NodeLabel, Placed: sets.New(placed...)})
	}
}

// In returns whether a node is in the domain the placed members' nodes share
// among nodes; when they share none (unlabelled, or in several domains), no node
// is. Cost: O(nodes).
func (a *Anchored) In(nodes []fwk.NodeInfo) func(*corev1.Node) bool {
	value, seen := "", 0
	for _, ni := range nodes {
		n := ni.Node()
		if !a.Placed.Has(n.Name) {
			continue
		}
		v := n.Labels[a.Label]
		if v == "" || (value != "" && v != value) {
			return func(*corev1.Node) bool { return false }
		}
		value, seen = v, seen+1
		if seen == a.Placed.Len() {
			break
		}
	}
	if value == "" {
		return func(*corev1.Node) bool { return false }
	}
	return func(n *corev1.Node) bool { return n.Labels[a.Label] == value }
}
