package coscheduling

import (
	"time"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
)

// Less orders the queue by priority (higher first), then by the time the pod's gang
// was first seen (a plain pod counts as its own gang, at its queue timestamp), then
// by gang, then by the pod's own timestamp. With starvation aging on, the priority
// compared is the pod's priority plus one point per starvationAgingSeconds between
// its group's time and a fixed epoch: a key of each pod alone, never of the current
// time, so the order stays a strict weak ordering. Members of one gang share their
// keys and sit next to each other, so a gang is attempted as a block.
func (pl *Plugin) Less(a, b fwk.QueuedPodInfo) bool {
	ta, ka := pl.groupKey(a)
	tb, kb := pl.groupKey(b)
	pa, pb := pl.effectivePriority(a, ta), pl.effectivePriority(b, tb)
	if pa != pb {
		return pa > pb
	}
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if ka != kb {
		return ka.Namespace < kb.Namespace || (ka.Namespace == kb.Namespace && ka.Name < kb.Name)
	}
	return a.GetTimestamp().Before(b.GetTimestamp())
}

// groupKey returns the time and name that place a pod's gang in the queue.
func (pl *Plugin) groupKey(qp fwk.QueuedPodInfo) (time.Time, gang.Key) {
	pod := qp.GetPodInfo().GetPod()
	if m, ok, err := gang.Of(pod); err == nil && ok {
		pl.index.mu.RLock()
		e := pl.index.get(m.Key)
		var t time.Time
		if e != nil {
			t = e.firstSeen
		}
		pl.index.mu.RUnlock()
		if e != nil {
			return t, m.Key
		}
	}
	return qp.GetTimestamp(), gang.Key{Namespace: pod.Namespace, Name: pod.Name}
}

// agingEpoch is the fixed reference aging is measured from.
var agingEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// effectivePriority is the pod's priority, aged by how early its group was queued:
// a group queued agingSeconds earlier than another ranks one priority point higher.
func (pl *Plugin) effectivePriority(qp fwk.QueuedPodInfo, groupTime time.Time) float64 {
	p := float64(corev1helpers.PodPriority(qp.GetPodInfo().GetPod()))
	if pl.args == nil || *pl.args.StarvationAgingSeconds == 0 {
		return p
	}
	return p - groupTime.Sub(agingEpoch).Seconds()/float64(*pl.args.StarvationAgingSeconds)
}
