package coscheduling

import (
	"time"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// Less orders the queue by priority (higher first), then by the time the pod's gang
// was first seen (a plain pod counts as its own gang, at its queue timestamp), then
// by gang, then by the pod's own timestamp. A gang whose PodGroup names a
// PriorityClass (spec.priorityClassName) is ordered by that class's value capped at
// its lowest member's own priority (gangEntry.queuePriority), all its members
// alike; otherwise each pod's own priority counts. With starvation aging
// on, the priority compared is that priority plus one point per
// starvationAgingSeconds between its group's time and a fixed epoch: a key of each
// pod alone, never of the current time, so the order stays a strict weak ordering.
// Members of one gang share their keys and sit next to each other, so a gang is
// attempted as a block. A group the queue holds as one entity (a PodGroup of the
// native scheduling.k8s.io API) is ordered by its own priority and timestamp.
func (pl *Plugin) Less(a, b fwk.QueuedEntityInfo) bool {
	ga, gb := pl.groupKey(a), pl.groupKey(b)
	pa, pb := pl.effectivePriority(ga), pl.effectivePriority(gb)
	if pa != pb {
		return pa > pb
	}
	if !ga.time.Equal(gb.time) {
		return ga.time.Before(gb.time)
	}
	if ka, kb := ga.key, gb.key; ka != kb {
		return ka.Namespace < kb.Namespace || (ka.Namespace == kb.Namespace && ka.Name < kb.Name)
	}
	return a.GetTimestamp().Before(b.GetTimestamp())
}

// queueGroup is what places a pod's gang in the queue.
type queueGroup struct {
	time     time.Time
	key      gang.Key
	priority int32
}

// queuedPod is a queue entity that is one pod.
type queuedPod interface{ GetPodInfo() fwk.PodInfo }

// queuedGroup is a queue entity that is a group of pods.
type queuedGroup interface {
	GetNamespace() string
	GetName() string
}

// groupKey returns the time, name and priority that place an entity's gang in the
// queue.
func (pl *Plugin) groupKey(e fwk.QueuedEntityInfo) queueGroup {
	g := queueGroup{time: e.GetTimestamp(), priority: e.GetPriority()}
	qp, ok := e.(queuedPod)
	if !ok {
		if qg, ok := e.(queuedGroup); ok {
			g.key = gang.Key{Namespace: qg.GetNamespace(), Name: qg.GetName()}
		}
		return g
	}
	pod := qp.GetPodInfo().GetPod()
	g.key, g.priority = gang.Key{Namespace: pod.Namespace, Name: pod.Name}, corev1helpers.PodPriority(pod)
	if m, ok, err := pl.index.Of(pod); err == nil && ok {
		pl.index.RLock()
		if e := pl.index.Get(m.Key); e != nil {
			g.time, g.key = e.FirstSeen, m.Key
			if v, ok := e.QueuePriority(); ok {
				g.priority = v
			}
		}
		pl.index.RUnlock()
	}
	return g
}

// effectivePriority is the group's priority, aged by how early it was queued: a
// group queued agingSeconds earlier than another ranks one priority point higher.
func (pl *Plugin) effectivePriority(g queueGroup) float64 {
	if pl.aging == 0 {
		return float64(g.priority) // the usual case, inlined in Less
	}
	return workload.AgedPriority(g.priority, g.time, pl.aging)
}
