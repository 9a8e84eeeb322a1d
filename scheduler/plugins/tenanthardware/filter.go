package tenanthardware

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/profileclassifier"
)

// PreFilter takes the tier snapshot and the pod's tenant tier for this cycle. With
// no HardwareTiers, or for a verified DaemonSet pod that asks for no device (see
// daemonSetExemption), the plugin skips the pod.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	tiers := pl.currentTiers()
	if tiers == nil || len(tiers.tiers) == 0 || pl.exemption.exempt(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	profile, ok := profileclassifier.ProfileOf(cs)
	if !ok {
		return nil, fwk.AsStatus(fmt.Errorf("%s", ErrReasonNoProfile))
	}
	cs.Write(stateKey, &stateData{tiers: tiers, tenant: profile.Tier, preemptible: profile.Preemptible, clusterQueue: pl.clusterQueueOf(tiers, pod)})
	return nil, nil
}

// PreFilterExtensions is nil: the verdict does not depend on other pods.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// clusterQueueOf is the ClusterQueue that admitted the pod, when a tier asks.
func (pl *Plugin) clusterQueueOf(tiers *tierSet, pod *corev1.Pod) string {
	if !tiers.usesClusterQueues || pl.queues == nil {
		return ""
	}
	cq, _ := pl.queues.ClusterQueueOf(pod)
	return cq
}

// Filter refuses nodes whose HardwareTier neither admits the pod's tenant tier nor
// lends to it, or is limited to Kueue ClusterQueues the pod was not admitted
// through.
func (pl *Plugin) Filter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s := readState(cs)
	if s == nil {
		return nil
	}
	t := s.tiers.of(nodeInfo.Node().Name, nodeInfo.Node().Labels, pl.devices)
	if t == nil {
		return nil
	}
	msg := ""
	switch {
	case t.accessFor(s.tenant, s.preemptible) == denied:
		msg = t.message(s.tenant)
	case !t.admitsClusterQueue(s.clusterQueue):
		msg = t.clusterQueueMessage(s.clusterQueue)
	default:
		return nil
	}
	if s.recorded.CompareAndSwap(false, true) {
		pl.refused.Add(pod)
	}
	// Resolvable: a HardwareTier or node label change can admit the pod.
	return fwk.NewStatus(fwk.Unschedulable, msg)
}
