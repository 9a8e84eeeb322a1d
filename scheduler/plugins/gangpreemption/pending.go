package gangpreemption

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/podobj"
)

// msgVictimsLeft is PreFilter's status for a pod whose room is being made. It
// does not count the pods left: the pod's PodScheduled condition stays the same
// from one attempt to the next, so no attempt rewrites it.
const msgVictimsLeft = "waiting for the pods preempted for it to terminate"

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// ownerOf names whom a preemption is for: the pod's gang, or the pod.
func ownerOf(pod *corev1.Pod, g *gang.Key) string {
	if g != nil {
		return "gang " + g.String()
	}
	return "pod " + pod.Namespace + "/" + pod.Name
}

// podOwner is ownerOf for a pod read from its labels (a gang label that does not
// parse names no gang here, as in ProfileClassifier's classification).
func (pl *Plugin) podOwner(pod *corev1.Pod) string {
	if m, ok, err := pl.gangs.Of(pod); err == nil && ok {
		return ownerOf(pod, &m.Key)
	}
	return ownerOf(pod, nil)
}

// PreFilter holds back a pod while pods evicted for it (for its gang) are still
// there: it rejects the pod as UnschedulableAndUnresolvable, so the cycle runs no
// Filter and no plan, PostFilter keeps the member's claim (PostFilter, step 1), and
// the scheduling queue brings the pod back when the last of them is gone
// (isSchedulableAfterVictimGone; what is left of its backoff still applies), not
// on retries while they terminate. Without it the members of a gang that preempted
// failed Filter while their victims terminated and bound up to a second after
// their room was free (gangs bound in waves one backoff apart). Not Pending: kube-scheduler's PreFilter runner
// (1.37) turns every status but Unschedulable and UnschedulableAndUnresolvable into
// an error — logged as "Error scheduling pod", counted as an error attempt, the pod
// requeued on its backoff with the condition reason SchedulerError. Named at
// preFilter in the KubeNexus profile, it runs before the plans of NetworkFabric and
// Coscheduling's gang checks. Every pod is skipped at once while no preemption is
// in flight.
func (pl *Plugin) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if pl.victimsLeft(pod) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgVictimsLeft)
}

// SignPod adds nothing to a pod's signature for opportunistic batching: PreFilter
// holds a pod back or skips it, and no node's filtering or score depends on it.
// (A PreFilter plugin that does not sign turns batching off for every pod.)
func (pl *Plugin) SignPod(context.Context, *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}

// PreFilterExtensions is nil: PreFilter keeps no state.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// victimsLeft counts the pods evicted for the pod's preemption (within its grace)
// that the informer or this cycle's snapshot still holds.
func (pl *Plugin) victimsLeft(pod *corev1.Pod) int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if len(pl.inflight) == 0 {
		return 0
	}
	if p := pl.live(pod); p != nil {
		return pl.victimsThere(p)
	}
	return 0
}

// live is the preemption in flight for the pod (its gang, or itself) within its
// grace, or nil. The caller holds pl.mu.
func (pl *Plugin) live(pod *corev1.Pod) *preemption {
	p := pl.inflight[pl.podOwner(pod)]
	if p == nil || time.Now().After(p.until) {
		return nil
	}
	return p
}

// EventsToRegister: a pod held back by PreFilter comes back when a bound pod is
// deleted — the last of its victims (the hint skips every other deletion). Its
// preemption's grace ending is not an event: commit activates the members then.
func (pl *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterVictimGone},
	}, nil
}

// isSchedulableAfterVictimGone queues the pod when the deleted pod was the last
// victim of its preemption still bound, or when that preemption is no longer in
// flight (done, given up, or another process's). A victim rejected at Permit comes
// here too: the scheduler reports an assumed pod it forgets as an assigned pod's
// deletion.
func (pl *Plugin) isSchedulableAfterVictimGone(logger klog.Logger, pod *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	deleted := podobj.From(oldObj)
	if deleted == nil {
		return fwk.Queue, nil
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	p := pl.live(pod)
	if p == nil {
		return fwk.Queue, nil
	}
	victim := false
	for _, v := range p.victims {
		switch {
		case v.UID == deleted.UID:
			victim = true
		case pl.boundOn(v):
			return fwk.QueueSkip, nil
		}
	}
	if !victim {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("The last pod preempted for it is gone", "pod", klog.KObj(pod), "victim", klog.KObj(deleted))
	return fwk.Queue, nil
}

// activateAfter moves the members still unbound to the active queue when the
// preemption's grace ends: PreFilter held them back, and nothing else
// brings them back if a victim never goes (an eviction a PodDisruptionBudget keeps
// refusing).
func (pl *Plugin) activateAfter(grace time.Duration, claims []claim) {
	time.AfterFunc(grace, func() {
		pods := map[string]*corev1.Pod{}
		for _, c := range claims {
			if pl.exists(c.pod) && !pl.bound(c.pod) {
				pods[c.pod.Namespace+"/"+c.pod.Name] = c.pod
			}
		}
		if len(pods) > 0 {
			pl.handle.Activate(klog.Background(), pods)
		}
	})
}
