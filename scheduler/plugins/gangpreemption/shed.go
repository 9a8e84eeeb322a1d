package gangpreemption

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// Shrink before kill: a gang running above its minimum (an elastic PodGroup whose
// minMember is below its members, autoscaled Ray workers, a Spark job's dynamic
// executors) is a victim first of its surplus members, one unit each, and keeps
// running; only when that is not enough is it evicted whole.

// shedding is what a gang running above its minimum may lose and keep running.
type shedding struct {
	whole *unit
	// keeps is its minimum: the members that keep running once all it may lose are
	// gone; left is how many it may lose, and perRole, of each role with a
	// minimum (PodGroup spec.minMemberPerRole), how many of that role.
	keeps   int
	left    int
	perRole map[v1alpha1.WorkloadRole]int
	roleOf  map[types.UID]v1alpha1.WorkloadRole
}

// floorFunc is a gang's minimum: its quorum (labelMin is what its labels state)
// and the minimum of each role; ok false when it is not known.
type floorFunc func(key gang.Key, labelMin int32) (minMember int32, perRole map[string]int32, ok bool)

// withShedding adds to us (in cost order) one unit per member that a gang running
// above its minimum may lose: not a coordinator (workload.Sheddable), not a member
// of a group kept whole (a LeaderWorkerSet group), not of a role at its minimum.
// The result is in cost order again: a member shed costs its own GPU time, less
// than its gang's, so the surplus goes first.
func withShedding(us []*unit, floor floorFunc, roleOf func(*corev1.Pod) v1alpha1.WorkloadRole) []*unit {
	out := slices.Clone(us) // us may have room beyond its length: appending must not write there
	for _, u := range us {
		if u.gang == nil {
			continue
		}
		minMember, minRole, ok := floor(*u.gang, u.labelMin)
		if !ok || minMember <= 0 || len(u.pods) <= int(minMember) {
			continue
		}
		sh := &shedding{whole: u, keeps: int(minMember), left: len(u.pods) - int(minMember),
			perRole: map[v1alpha1.WorkloadRole]int{}, roleOf: map[types.UID]v1alpha1.WorkloadRole{}}
		for _, p := range u.pods {
			r := roleOf(p)
			sh.roleOf[p.UID] = r
			sh.perRole[r]++
		}
		for r, n := range sh.perRole {
			want, has := minRole[string(r)]
			if !has {
				delete(sh.perRole, r) // no minimum of its own: only the gang's counts
				continue
			}
			sh.perRole[r] = n - int(want)
		}
		for i, p := range u.pods {
			r := sh.roleOf[p.UID]
			if _, _, grouped := workload.SubgroupOf(p); grouped || !workload.Sheddable(r) {
				continue
			}
			if left, has := sh.perRole[r]; has && left <= 0 {
				continue
			}
			out = append(out, &unit{key: "pod " + p.Namespace + "/" + p.Name, pods: []*corev1.Pod{p},
				priority: u.priority, gpuSeconds: u.podSeconds[i], podSeconds: u.podSeconds[i : i+1], shed: sh})
		}
	}
	if len(out) > len(us) {
		sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	}
	return out
}

// shedLedger counts, during one search, the members shed from each gang (by its
// whole unit); -1 once the gang is a victim whole.
type shedLedger map[*unit]*shedCount

type shedCount struct {
	n      int
	byRole map[v1alpha1.WorkloadRole]int
}

// may: shedding u leaves its gang at or above its minimum, and its role at or
// above the role's, and the gang is not a victim whole already.
func (l shedLedger) may(u *unit) bool {
	c := l[u.shed.whole]
	if c == nil {
		return u.shed.left > 0
	}
	if c.n < 0 || c.n >= u.shed.left {
		return false
	}
	r := u.shed.roleOf[u.pods[0].UID]
	left, has := u.shed.perRole[r]
	return !has || c.byRole[r] < left
}

func (l shedLedger) take(u *unit) {
	c := l[u.shed.whole]
	if c == nil {
		c = &shedCount{byRole: map[v1alpha1.WorkloadRole]int{}}
		l[u.shed.whole] = c
	}
	c.n++
	c.byRole[u.shed.roleOf[u.pods[0].UID]]++
}

// shedFrom reports whether members of gang unit u are shed.
func (l shedLedger) shedFrom(u *unit) bool {
	c := l[u]
	return c != nil && c.n > 0
}

// whole records that gang unit u is a victim whole: none of its members is shed
// from now on.
func (l shedLedger) whole(u *unit) { l[u] = &shedCount{n: -1} }

// dropShedFrom removes from picked the members shed from gang unit whole, giving
// back the disruptions they spent: the whole unit counts them again.
func (s *search) dropShedFrom(picked []*unit, whole *unit, budget map[types.UID]int32) []*unit {
	out := make([]*unit, 0, len(picked))
	for _, u := range picked {
		if u.shed != nil && u.shed.whole == whole {
			for uid, n := range s.disruptions(u) {
				budget[uid] += n
			}
			continue
		}
		out = append(out, u)
	}
	return out
}

// disruptions counts, per PodDisruptionBudget (UID), the pods of u it covers.
func (s *search) disruptions(u *unit) map[types.UID]int32 {
	need := map[types.UID]int32{}
	for _, p := range u.pods {
		for _, pdb := range s.pdbs {
			if pdb.Namespace != p.Namespace {
				continue
			}
			// A nil selector selects nothing, an empty one every pod (policy/v1).
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			need[pdb.UID]++
		}
	}
	return need
}

// floor is a gang's minimum as the gang record knows it (its PodGroup's, else its
// labels').
func (pl *Plugin) floor(key gang.Key, labelMin int32) (int32, map[string]int32, bool) {
	minMember, pg, known := pl.gangs.Quorum(key, labelMin)
	if !known {
		return 0, nil, false
	}
	var perRole map[string]int32
	if pg != nil {
		if pg.Spec.DisruptWhole {
			return 0, nil, false // a native PodGroup disrupted only whole: never shrunk
		}
		perRole = pg.Spec.MinMemberPerRole
	}
	return minMember, perRole, true
}
