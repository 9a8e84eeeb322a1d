package coscheduling

import (
	"time"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
)

// Less orders the queue by priority (higher first), then by the time the pod's gang
// was first seen (a plain pod counts as its own gang, at its queue timestamp), then
// by gang, then by the pod's own timestamp. Keys depend only on each pod, never on
// the current time, so the order is a strict weak ordering; members of one gang sit
// next to each other, so a gang is attempted as a block.
func (pl *Plugin) Less(a, b fwk.QueuedPodInfo) bool {
	pa, pb := corev1helpers.PodPriority(a.GetPodInfo().GetPod()), corev1helpers.PodPriority(b.GetPodInfo().GetPod())
	if pa != pb {
		return pa > pb
	}
	ta, ka := pl.groupKey(a)
	tb, kb := pl.groupKey(b)
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
