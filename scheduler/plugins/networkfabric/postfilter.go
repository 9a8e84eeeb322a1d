package networkfabric

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
)

// PostFilter: a member that found no node means its gang cannot complete this
// attempt (Coscheduling rejects it unless its quorum is placed): the plan is dropped,
// so that the capacity it set aside is not kept from other gangs while this one
// backs off. A member of a preferred plan that found no node among the plan's nodes
// also relaxes the gang's plans to scoring only, so that the gang is not held to a
// domain other filters refuse. It never makes room itself.
func (pl *Plugin) PostFilter(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	pl.mu.Lock()
	if pl.plans[s.key] == s.plan {
		delete(pl.plans, s.key)
	}
	relax := s.restricted && !s.plan.policy.Required && len(s.plan.policy.SliceLayers()) == 0 && s.plan.groupNodes == nil
	if relax {
		pl.relaxed[s.key] = pl.now()
	}
	pl.mu.Unlock()
	if relax {
		klog.V(4).InfoS("Relaxed a preferred gang plan to scoring", "gang", s.key)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

// isRelaxed reports whether the gang's preferred plans only score.
func (pl *Plugin) isRelaxed(key gang.Key) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	t, ok := pl.relaxed[key]
	if ok && pl.now().Sub(t) > planTTL {
		delete(pl.relaxed, key)
		return false
	}
	return ok
}
