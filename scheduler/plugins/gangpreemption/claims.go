package gangpreemption

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// waiting says why the preemptor must not evict more: within the grace, pods it
// evicted are still there, or members it made room for are not placed yet while
// that room is still free (they go to the room, not to new victims). node is the
// node the room was made on for pod, if it is one of those members. Once the room
// is gone to others, the preemption is forgotten and the gang may choose again:
// dropped are then its claims, whose members' nominations the caller clears.
func (pl *Plugin) waiting(owner string, pod *corev1.Pod) (msg, node string, dropped []claim) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	p := pl.inflight[owner]
	if p == nil {
		return "", "", nil
	}
	if time.Now().After(p.until) {
		delete(pl.inflight, owner)
		return "", "", p.claims
	}
	// A victim is gone once neither the informer nor this cycle's snapshot holds
	// it: the informer drops a deleted pod before the scheduler's cache does, and
	// until the snapshot frees its room the members cannot take it — judging the
	// room by then would call it taken and evict again.
	left := pl.victimsThere(p)
	open := 0
	var unplaced []claim
	for _, c := range p.claims {
		if c.pod.UID == pod.UID {
			node = c.node
		}
		if pl.exists(c.pod) && !pl.bound(c.pod) {
			open++
			if !pl.placedOnClaimed(c.pod, p.claims) {
				unplaced = append(unplaced, c)
			}
		}
	}
	switch {
	case left > 0:
		return fmt.Sprintf("waiting for %d preempted pod(s) to terminate", left), node, nil
	case open > 0 && pl.roomHolds(unplaced, p.claims):
		return fmt.Sprintf("waiting for %d member(s) to take the room preemption made", open), node, nil
	}
	// Done, or the room was taken by others meanwhile: the gang may choose again.
	delete(pl.inflight, owner)
	return "", "", p.claims
}

// victimsThere counts the preemption's victims that still hold their room: bound
// to the node they were chosen on in the informer, or on it in this cycle's
// snapshot. A victim that was waiting at Permit is rejected, not deleted: it goes
// back to the queue unbound and holds no room.
func (pl *Plugin) victimsThere(p *preemption) int {
	left := 0
	for _, v := range p.victims {
		if pl.boundOn(v) || pl.inSnapshot(v) {
			left++
		}
	}
	return left
}

// boundOn reports whether the informer has the pod (that incarnation) bound to the
// node it names.
func (pl *Plugin) boundOn(p *corev1.Pod) bool {
	cur := pl.current(p)
	return cur != nil && cur.Spec.NodeName != "" && cur.Spec.NodeName == p.Spec.NodeName
}

// placedOnClaimed reports whether the pod is in the snapshot (assumed or waiting at
// Permit) on one of the preemption's claimed nodes: members need not take the very
// node their claim names, and one that took another member's claimed node has taken
// that room, not lost its own.
func (pl *Plugin) placedOnClaimed(p *corev1.Pod, claims []claim) bool {
	seen := map[string]bool{}
	for _, c := range claims {
		if seen[c.node] {
			continue
		}
		seen[c.node] = true
		ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(c.node)
		if err != nil {
			continue
		}
		for _, q := range ni.GetPods() {
			if q.GetPod().UID == p.UID {
				return true
			}
		}
	}
	return false
}

// roomHolds reports whether the members not placed yet still fit the free room of
// the preemption's claimed nodes, each on its own claimed node first, else on any of
// them. The room preemption made is the claimed nodes' together: members placed on
// each other's nodes must not make it look taken and trigger a second preemption.
func (pl *Plugin) roomHolds(unplaced, claims []claim) bool {
	free := map[string]map[corev1.ResourceName]int64{}
	for _, c := range claims {
		if _, ok := free[c.node]; ok {
			continue
		}
		free[c.node] = nil
		if ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(c.node); err == nil {
			free[c.node] = nodefree.All(ni)
		}
	}
	take := func(node string, req map[corev1.ResourceName]int64) bool {
		room := free[node]
		if room == nil {
			return false
		}
		for name, v := range req {
			if room[name] < v {
				return false
			}
		}
		for name, v := range req {
			room[name] -= v
		}
		return true
	}
	for _, m := range unplaced {
		if take(m.node, m.req) {
			continue
		}
		if !slices.ContainsFunc(claims, func(c claim) bool { return c.node != m.node && take(c.node, m.req) }) {
			return false
		}
	}
	return true
}

// bound reports whether the pod is bound, by the informer cache.
func (pl *Plugin) bound(p *corev1.Pod) bool {
	cur := pl.current(p)
	return cur != nil && cur.Spec.NodeName != ""
}

// chosen returns the victims of the preemptions in flight.
func (pl *Plugin) chosen() map[types.UID]bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	out := map[types.UID]bool{}
	for _, p := range pl.inflight {
		for _, v := range p.victims {
			out[v.UID] = true
		}
	}
	return out
}

// inSnapshot reports whether the pod (that incarnation) is on its node in this
// cycle's snapshot.
func (pl *Plugin) inSnapshot(p *corev1.Pod) bool {
	ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(p.Spec.NodeName)
	if err != nil {
		return false
	}
	for _, pi := range ni.GetPods() {
		if pi.GetPod().UID == p.UID {
			return true
		}
	}
	return false
}

// exists reports whether the pod (that incarnation) is in the informer cache.
func (pl *Plugin) exists(p *corev1.Pod) bool { return pl.current(p) != nil }

// current is the informer cache's copy of the pod (that incarnation), or nil.
func (pl *Plugin) current(p *corev1.Pod) *corev1.Pod {
	cur, err := pl.handle.SharedInformerFactory().Core().V1().Pods().Lister().Pods(p.Namespace).Get(p.Name)
	if err != nil || cur.UID != p.UID {
		return nil
	}
	return cur
}

// claimed is the room other preemptors made and their members have not taken yet,
// per node: their open claims, less what their victims still in this cycle's
// snapshot hold — that room is not free in the snapshot yet, and counting it as
// claimed too would make it look taken twice. evicting are those victims (each
// once, also when two preemptions wait for it). A preemption is forgotten
// once its grace passed (expired: its claims, whose members' nominations the
// caller clears) or its members are all bound or gone.
func (pl *Plugin) claimed(owner string) (out nodefree.Tally[string], evicting []*corev1.Pod, expired []claim) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	out = nodefree.Tally[string]{}
	counted := map[types.UID]bool{}
	lister := pl.handle.SharedInformerFactory().Core().V1().Pods().Lister()
	now := time.Now()
	for o, p := range pl.inflight {
		if now.After(p.until) {
			delete(pl.inflight, o)
			expired = append(expired, p.claims...)
			continue
		}
		open := 0
		for _, c := range p.claims {
			cur, err := lister.Pods(c.pod.Namespace).Get(c.pod.Name)
			if err != nil || cur.UID != c.pod.UID || cur.Spec.NodeName != "" {
				continue
			}
			open++
			if o != owner {
				out.AddPod(c.node, c.req, 1)
			}
		}
		if open == 0 {
			delete(pl.inflight, o)
			continue
		}
		if o != owner {
			for _, v := range p.victims {
				if !counted[v.UID] && pl.inSnapshot(v) {
					counted[v.UID] = true
					out.AddPod(v.Spec.NodeName, nodefree.Requests(v), -1)
					evicting = append(evicting, v)
				}
			}
		}
	}
	return out, evicting, expired
}
