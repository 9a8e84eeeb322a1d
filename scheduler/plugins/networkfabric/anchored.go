package networkfabric

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
)

const anchoredKey fwk.StateKey = "Anchored" + Name

// Anchored says where a gang's required policy keeps its pending members: in one
// domain of the policy's level (its node label) — the one that holds the placed
// members' nodes once some are placed, any one before that. PreFilter writes it
// for the cycle of such a gang's member, whether it admits or refuses the pod, so
// that GangPreemption makes room inside one domain only (room made across
// domains, or elsewhere than where a running gang is, would never take the
// members).
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
// nodes. The domains themselves are looked up only when asked (Scopes), which
// preemption alone does.
func (pl *Plugin) writeAnchored(cs fwk.CycleState, key gang.Key, policy topology.Policy) {
	levels := policy.LevelsWith(pl.levels)
	if !policy.Required || pl.members == nil || policy.Level < 0 || policy.Level >= len(levels) {
		return
	}
	cs.Write(anchoredKey, &Anchored{Label: levels[policy.Level].NodeLabel, Placed: sets.New(pl.members.PlacedNodes(key)...)})
}

// Scopes returns the node sets (indices into nodes) the pending members may be
// placed within, one set per domain: with members placed, the domain their nodes
// share — an empty set when they share none (unlabelled, or in several domains);
// with none placed, every domain of the level, in the order of their label
// values (unlabelled nodes are in none). Cost: O(nodes).
func (a *Anchored) Scopes(nodes []fwk.NodeInfo) []map[int]bool {
	byValue := map[string]map[int]bool{}
	anchor, seen := "", 0
	for i, ni := range nodes {
		n := ni.Node()
		v := n.Labels[a.Label]
		if a.Placed.Has(n.Name) {
			if v == "" || (anchor != "" && v != anchor) {
				return []map[int]bool{{}}
			}
			anchor, seen = v, seen+1
		}
		if v == "" {
			continue
		}
		if byValue[v] == nil {
			byValue[v] = map[int]bool{}
		}
		byValue[v][i] = true
	}
	if a.Placed.Len() > 0 {
		if anchor == "" || seen == 0 {
			return []map[int]bool{{}}
		}
		return []map[int]bool{byValue[anchor]}
	}
	values := make([]string, 0, len(byValue))
	for v := range byValue {
		values = append(values, v)
	}
	slices.Sort(values)
	out := make([]map[int]bool, 0, len(values))
	for _, v := range values {
		out = append(out, byValue[v])
	}
	return out
}
