package networkfabric

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Reserve moves the member's share of the plan's claims onto its node: the snapshot
// counts it there from now on. When every member is placed the plan is done.
func (pl *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	s := readState(cs)
	if s == nil {
		return nil
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	ap := pl.plans[s.key]
	if ap != s.plan {
		return nil // the plan was replaced or dropped since PreFilter
	}
	ap.reserved++
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	reqs[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI) // the plan counts the pod slot too
	dra := map[corev1.ResourceName]int64{}
	pl.draAsks(pod, ap.released, dra)
	for name, v := range dra {
		reqs[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
	}
	release(ap.claims, nodeName, reqs)
	if ap.reserved >= ap.need {
		delete(pl.plans, s.key)
	}
	return nil
}

// Unreserve drops the gang's plan: a member that is unreserved means the gang was
// rejected (or timed out) as a whole; its next attempt plans again from the
// snapshot of that time.
func (pl *Plugin) Unreserve(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ string) {
	s := readState(cs)
	if s == nil {
		return
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.plans[s.key] == s.plan {
		delete(pl.plans, s.key)
		klog.V(4).InfoS("Dropped gang plan after a rejection", "gang", s.key)
	}
}

// release takes one member's requests off the claims, from its node first, then from
// the other claimed nodes; a node whose claims reach zero leaves the map.
func release(claims map[string]map[corev1.ResourceName]int64, nodeName string, reqs corev1.ResourceList) {
	for name, q := range reqs {
		v := q.MilliValue()
		if c := claims[nodeName]; c != nil {
			take := min(v, c[name])
			c[name] -= take
			v -= take
		}
		for _, c := range claims {
			if v <= 0 {
				break
			}
			take := min(v, c[name])
			c[name] -= take
			v -= take
		}
	}
	for n, c := range claims {
		empty := true
		for _, v := range c {
			if v > 0 {
				empty = false
				break
			}
		}
		if empty {
			delete(claims, n)
		}
	}
}

// isSchedulableAfterPodDeleted queues a refused gang member when a bound pod goes
// away: its capacity may complete a domain.
func isSchedulableAfterPodDeleted(_ klog.Logger, _ *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	if p, ok := oldObj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
