package tenanthardware

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/profileclassifier"
)

// PreFilter takes the tier snapshot and the pod's tenant tier for this cycle. With
// no HardwareTiers, or for a verified DaemonSet pod that asks for no device (see
// daemonSetExemption), the plugin skips the pod.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	tiers := pl.tiers.Current()
	if tiers.Empty() || pl.tiers.Exempt(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	profile, ok := profileclassifier.ProfileOf(cs)
	if !ok {
		return nil, fwk.AsStatus(fmt.Errorf("%s", ErrReasonNoProfile))
	}
	cs.Write(stateKey, &stateData{tiers: tiers, tenant: profile.Tier, preemptible: profile.Preemptible, clusterQueue: pl.tiers.ClusterQueueOf(tiers, pod)})
	return nil, nil
}

// PreFilterExtensions is nil: the verdict does not depend on other pods.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter refuses nodes whose HardwareTier neither admits the pod's tenant tier nor
// lends to it, or is limited to Kueue ClusterQueues the pod was not admitted
// through.
func (pl *Plugin) Filter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s := readState(cs)
	if s == nil {
		return nil
	}
	t := s.tiers.OfNode(nodeInfo.Node().Name, nodeInfo.Node().Labels, pl.tiers.Devices())
	if t == nil {
		return nil
	}
	msg := ""
	switch {
	case t.AccessFor(s.tenant, s.preemptible) == hardware.Denied:
		msg = t.Message(s.tenant)
	case !t.AdmitsClusterQueue(s.clusterQueue):
		msg = t.ClusterQueueMessage(s.clusterQueue)
	default:
		return nil
	}
	if s.recorded.CompareAndSwap(false, true) {
		pl.refused.Add(pod)
	}
	// Resolvable: a HardwareTier or node label change can admit the pod.
	return fwk.NewStatus(fwk.Unschedulable, msg)
}
