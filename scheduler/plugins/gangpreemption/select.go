package gangpreemption

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// unit is what is evicted together: every member of a gang, or one pod.
type unit struct {
	key  string // "gang ns/name" or "pod ns/name"
	gang *gang.Key
	pods []*corev1.Pod
	// priority is the highest priority among its pods.
	priority int32
	// gpuSeconds is the GPU time evicting it throws away: its pods' GPUs times
	// the time since each last checkpointed (workload.Checkpointing.Lost; all
	// their running time when they declare none); podSeconds is each pod's share,
	// in the order of pods.
	gpuSeconds float64
	podSeconds []float64
	// labelMin is the quorum a gang's labels state (0: its PodGroup decides).
	labelMin int32
	// shed is set for one member of a gang that runs above its minimum, evicted
	// alone (shed.go).
	shed *shedding
	// moved is set for a pod moved by consolidation, whose replacement fits on
	// movedTo (consolidate.go).
	moved   bool
	movedTo string
}

func (u *unit) describe() string {
	if u.shed != nil {
		return fmt.Sprintf("pod %s/%s of gang %s, shed: it keeps %d member(s) running (priority %d)",
			u.pods[0].Namespace, u.pods[0].Name, u.shed.whole.gang, u.shed.keeps, u.priority)
	}
	if u.moved {
		return fmt.Sprintf("pod %s/%s (priority %d), whose replacement fits on %s", u.pods[0].Namespace, u.pods[0].Name, u.priority, u.movedTo)
	}
	if u.gang != nil {
		return fmt.Sprintf("gang %s (%d pods, priority %d)", u.gang, len(u.pods), u.priority)
	}
	return fmt.Sprintf("pod %s/%s (priority %d)", u.pods[0].Namespace, u.pods[0].Name, u.priority)
}

// less orders units by what losing them costs: lower priority first (as
// kube-scheduler picks victims), then less GPU time thrown away, then fewer pods;
// by key for determinism.
func less(a, b *unit) bool {
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	if a.gpuSeconds != b.gpuSeconds {
		return a.gpuSeconds < b.gpuSeconds
	}
	if len(a.pods) != len(b.pods) {
		return len(a.pods) < len(b.pods)
	}
	return a.key < b.key
}

// candidate says whether a running pod may be evicted for the preemptor.
type candidate func(victim *corev1.Pod, victimProfile workload.Profile, priority int32) bool

// priorityFunc is a pod's priority for preemption: its gang's (the PriorityClass
// its PodGroup names) when it has one, else its own.
type priorityFunc func(p *corev1.Pod, g *gang.Key) int32

// units groups the pods on the nodes into eviction units. A gang is a candidate
// only if every one of its members is: a gang is evicted whole or not at all.
//
// Pods of priority below (the preemptor's) or higher are refused, unless reclaim
// (nil: none) says they hold room lent to the preemptor. describe returns what is
// known of a pod (victim); a PostFilter passes the cache of profiles, so that a
// pass over every running pod costs little more than the map lookups.
func units(pods []*corev1.Pod, below int32, reclaim func(*corev1.Pod) bool, may candidate, priority priorityFunc, describe func(*corev1.Pod) *victim, now time.Time) []*unit {
	byKey := map[string]*unit{}
	refused := map[string]bool{}
	var order []string
	for _, p := range pods {
		v := describe(p)
		if refused[v.key] {
			continue
		}
		prio := priority(p, v.gang)
		if prio >= below && (reclaim == nil || !reclaim(p)) || !may(p, v.prof, prio) {
			refused[v.key] = true
			delete(byKey, v.key)
			continue
		}
		u := byKey[v.key]
		if u == nil {
			u = &unit{key: v.key, gang: v.gang, priority: prio}
			byKey[v.key] = u
			order = append(order, v.key)
		}
		u.pods = append(u.pods, p)
		if prio > u.priority {
			u.priority = prio
		}
		if v.gang != nil {
			u.labelMin = v.prof.Gang.MinMember
		}
		seconds := 0.0
		if v.gpus > 0 {
			seconds = float64(v.gpus) * v.ckpt.Lost(workload.StartOf(p), now).Seconds()
		}
		u.gpuSeconds += seconds
		u.podSeconds = append(u.podSeconds, seconds)
	}
	out := make([]*unit, 0, len(byKey))
	for _, k := range order {
		if u := byKey[k]; u != nil {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

// node is a node as the victim search sees it.
type node struct {
	obj  *corev1.Node
	free map[corev1.ResourceName]int64
}

// member is one pod of the preemptor's that needs a node, with its requests and
// the nodes it may run on at all (index into the node list).
type member struct {
	pod      *corev1.Pod
	req      map[corev1.ResourceName]int64
	eligible map[int]bool
}

// search finds the victims that make room for members.
type search struct {
	nodes   []node
	byName  map[string]int
	members []member
	// pdbs in the victims' namespaces, and what each still allows (by UID).
	pdbs   []*policyv1.PodDisruptionBudget
	budget map[types.UID]int32
	// scopes, when set, are the node sets (by index) that hold the members
	// together, each one topology domain their policy requires: a placement
	// stays within one of them (nil: anywhere).
	scopes []map[int]bool
}

// held is n times the room the pods hold, per node index.
func (s *search) held(pods []*corev1.Pod, n int) nodefree.Tally[int] {
	t := nodefree.Tally[int]{}
	for _, p := range pods {
		if i, ok := s.byName[p.Spec.NodeName]; ok {
			t.AddPod(i, nodefree.Requests(p), n)
		}
	}
	return t
}

// place assigns every member a node, largest first, each to the eligible node
// that it leaves with the least free room of its largest request, counting what
// the units free. It returns the node of each member, or nil when one does not fit.
func (s *search) place(us []*unit, only map[int]bool) []int {
	var pods []*corev1.Pod
	for _, u := range us {
		pods = append(pods, u.pods...)
	}
	return s.placeWith(s.held(pods, 1), only)
}

// placeWith is place with freed (per node index) added to the nodes' free room.
// Without only, the members go to the first scope that holds them all.
func (s *search) placeWith(freed nodefree.Tally[int], only map[int]bool) []int {
	if only == nil && s.scopes != nil {
		for _, scope := range s.scopes {
			if at := s.placeWith(freed, scope); at != nil {
				return at
			}
		}
		return nil
	}
	used := nodefree.Tally[int]{}
	order := make([]int, len(s.members))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return placement.RequestSize(s.members[order[a]].req) > placement.RequestSize(s.members[order[b]].req)
	})
	out := make([]int, len(s.members))
	for _, mi := range order {
		m := s.members[mi]
		best, bestLeft := -1, int64(0)
		for ni := range m.eligible {
			if only != nil && !only[ni] {
				continue
			}
			left, ok := s.room(ni, m.req, freed[ni], used[ni])
			if ok && (best < 0 || left < bestLeft || left == bestLeft && s.nodes[ni].obj.Name < s.nodes[best].obj.Name) {
				best, bestLeft = ni, left
			}
		}
		if best < 0 {
			return nil
		}
		used.AddPod(best, m.req, 1)
		out[mi] = best
	}
	return out
}

// room checks req against node ni's free room plus freed less used; it returns the
// room left of the largest requested resource.
func (s *search) room(ni int, req, freed, used map[corev1.ResourceName]int64) (int64, bool) {
	var left, largest int64
	free := s.nodes[ni].free
	for name, v := range req {
		avail := free[name] + freed[name] - used[name]
		if avail < v {
			return 0, false
		}
		if v >= largest {
			largest, left = v, avail-v
		}
	}
	if free[corev1.ResourcePods]+freed[corev1.ResourcePods]-used[corev1.ResourcePods] < 1000 {
		return 0, false
	}
	return left, true
}

// waitsFor returns, for a placement at (each member's node) that counted the room
// of pods being evicted for other preemptors (evicting) as free, the pods among them
// whose room it needs — none when the members fit what is free now without them.
func (s *search) waitsFor(at []int, evicting []*corev1.Pod) []*corev1.Pod {
	if len(evicting) == 0 || s.placeWith(s.held(evicting, -1), nil) != nil {
		return nil
	}
	used := nodefree.Tally[int]{}
	for mi, ni := range at {
		used.AddPod(ni, s.members[mi].req, 1)
	}
	credit := s.held(evicting, 1)
	short := map[string]bool{}
	for ni, req := range used {
		for name, v := range req {
			if s.nodes[ni].free[name]-credit[ni][name] < v {
				short[s.nodes[ni].obj.Name] = true
				break
			}
		}
	}
	var out []*corev1.Pod
	for _, p := range evicting {
		if short[p.Spec.NodeName] {
			out = append(out, p)
		}
	}
	return out
}

// allowed reports whether evicting u keeps every PodDisruptionBudget within
// budget (what each still allows, by UID), and if so spends it.
func (s *search) allowed(u *unit, budget map[types.UID]int32) bool {
	need := s.disruptions(u)
	for uid, n := range need {
		if n > budget[uid] {
			return false
		}
	}
	for uid, n := range need {
		budget[uid] -= n
	}
	return true
}

// choice is a victim set and where the members go once it is gone.
type choice struct {
	victims []*unit
	nodes   []int
}

func (c *choice) cost() (float64, int32, int) {
	var gpu float64
	var prio int32
	pods := 0
	for i, u := range c.victims {
		gpu += u.gpuSeconds
		if i == 0 || u.priority > prio {
			prio = u.priority
		}
		pods += len(u.pods)
	}
	return gpu, prio, pods
}

func (c *choice) better(o *choice) bool {
	if o == nil {
		return true
	}
	ag, ap, an := c.cost()
	bg, bp, bn := o.cost()
	if ag != bg {
		return ag < bg
	}
	if ap != bp {
		return ap < bp
	}
	return an < bn
}

// choose returns the cheapest victim set that lets every member be placed, or nil.
// For one member it tries each node in turn, with the units that have a pod there
// (DefaultPreemption's search, with gangs evicted whole); for a gang it adds units
// in order of cost over the whole cluster — or, with scopes, over each scope in
// turn, the units with a pod in it, keeping the cheapest — until the members fit.
// Either way it then drops every unit the placement does not need, last added
// first.
func (s *search) choose(all []*unit) *choice {
	if len(s.members) > 1 && s.scopes != nil {
		var best *choice
		for _, scope := range s.scopes {
			if c := s.grow(s.within(all, scope), scope); c != nil && c.better(best) {
				best = c
			}
		}
		return best
	}
	if len(s.members) == 1 {
		var best *choice
		onNode := map[int][]*unit{}
		for _, u := range all {
			seen := map[int]bool{}
			for _, p := range u.pods {
				if i, ok := s.byName[p.Spec.NodeName]; ok && !seen[i] {
					seen[i] = true
					onNode[i] = append(onNode[i], u)
				}
			}
		}
		// In node order: of two nodes that cost the same, the first is chosen
		// every time (a map's order would make the choice a coin toss).
		for ni := range s.nodes {
			if !s.members[0].eligible[ni] || !s.inScope(ni) {
				continue
			}
			if c := s.grow(onNode[ni], map[int]bool{ni: true}); c != nil && c.better(best) {
				best = c
			}
		}
		return best
	}
	return s.grow(all, nil)
}

// grow adds units (already in order) until the members fit on the nodes in only
// (nil: any), then drops those not needed. A member shed from a gang counts
// against what its gang may lose; the gang's whole unit, once added, replaces the
// members shed from it.
func (s *search) grow(us []*unit, only map[int]bool) *choice {
	budget := maps.Clone(s.budget)
	shed := shedLedger{}
	var picked []*unit
	var at []int
	for _, u := range us {
		switch {
		case u.shed != nil:
			if !shed.may(u) || !s.allowed(u, budget) {
				continue
			}
			shed.take(u)
		case u.gang != nil && shed.shedFrom(u):
			// The gang whole replaces the members shed from it, and gets back
			// the disruptions they spent.
			trial := maps.Clone(budget)
			rest := s.dropShedFrom(picked, u, trial)
			if !s.allowed(u, trial) {
				continue
			}
			budget, picked = trial, rest
			shed.whole(u)
		default:
			if !s.allowed(u, budget) {
				continue
			}
			if u.gang != nil {
				shed.whole(u)
			}
		}
		picked = append(picked, u)
		if at = s.place(picked, only); at != nil {
			break
		}
	}
	if at == nil {
		return nil
	}
	for i := len(picked) - 1; i >= 0 && len(picked) > 1; i-- {
		without := append(append([]*unit(nil), picked[:i]...), picked[i+1:]...)
		if a := s.place(without, only); a != nil {
			picked, at = without, a
		}
	}
	return &choice{victims: picked, nodes: at}
}

// summary names the victims for events and messages.
func summary(us []*unit) string {
	parts := make([]string, 0, len(us))
	for _, u := range us {
		parts = append(parts, u.describe())
	}
	return strings.Join(parts, ", ")
}
