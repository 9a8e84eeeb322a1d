package coscheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
)

// progress is a gang's progress at Permit when members belong to subgroups: its
// members bound, permitted or reserved, in all and by role, counting a subgroup's
// members only once the subgroup is placed whole.
type progress struct {
	placed int
	roles  map[string]int
	// short are the subgroups not placed whole: placed members and size.
	short map[string][2]int
}

// subgroupProgress is the gang's progress with pod reserved (as Reserve recorded
// it, or counted here when the index has not delivered it yet), or, with without
// set, as if pod were not placed. Callers hold the index lock.
func subgroupProgress(e *gangs.Gang, pod *corev1.Pod, without bool) progress {
	type part struct {
		placed, size int
		roles        map[string]int
	}
	p := progress{roles: map[string]int{}, short: map[string][2]int{}}
	parts := map[string]*part{}
	count := func(m *corev1.Pod) {
		role := string(workload.RoleOf(m))
		key, size, ok := workload.SubgroupOf(m)
		if !ok {
			p.placed++
			p.roles[role]++
			return
		}
		pt := parts[key]
		if pt == nil {
			pt = &part{roles: map[string]int{}}
			parts[key] = pt
		}
		pt.placed++
		pt.size = max(pt.size, size)
		pt.roles[role]++
	}
	for uid, m := range e.Members {
		if without && uid == pod.UID {
			continue
		}
		if e.Assigned.Has(uid) || e.Assumed.Has(uid) || e.Allowed.Has(uid) {
			count(m)
		}
	}
	if _, delivered := e.Members[pod.UID]; !delivered && !without {
		count(pod)
	}
	for key, pt := range parts {
		if pt.placed < pt.size {
			p.short[key] = [2]int{pt.placed, pt.size}
			continue
		}
		p.placed += pt.placed
		for r, n := range pt.roles {
			p.roles[r] += n
		}
	}
	return p
}

// waitsForGroup reports whether member m belongs to a subgroup not placed whole.
func (p progress) waitsForGroup(m *corev1.Pod) bool {
	key, _, ok := workload.SubgroupOf(m)
	if !ok {
		return false
	}
	_, short := p.short[key]
	return short
}

// describe names the subgroups not placed whole, as "group vllm/1 1/2 placed".
func (p progress) describe() string {
	keys := make([]string, 0, len(p.short))
	for k := range p.short {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d/%d", k, p.short[k][0], p.short[k][1])
	}
	return "LeaderWorkerSet groups placed only whole; short: " + strings.Join(parts, ", ")
}
