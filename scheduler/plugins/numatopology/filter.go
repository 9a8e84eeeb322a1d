package numatopology

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement/numa"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// PreFilter reads the pod's hint. Pods without one are skipped unless some node's
// kubelet enforces a policy and the pod asks for something the kubelet aligns
// (whole CPUs of a Guaranteed pod, or devices). A hint that is not a policy keeps
// the pod pending with a message naming the allowed values.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	own, err := workload.NUMAPolicyOf(pod.Annotations)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if own == "" && (pl.enforcing.Load() == 0 || !mayAlign(pod)) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cs.Write(stateKey, &stateData{own: own})
	return nil, nil
}

// mayAlign reports whether the kubelet could align anything of the pod: a device,
// or CPUs of a Guaranteed pod.
func mayAlign(pod *corev1.Pod) bool {
	if numa.QOSOf(pod) == corev1.PodQOSGuaranteed {
		return true
	}
	for _, c := range pod.Spec.Containers {
		for name := range c.Resources.Requests {
			if strings.Contains(string(name), "/") {
				return true
			}
		}
	}
	return false
}

// PreFilterExtensions is nil.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// topologyOf returns what is known of a node's cells: its report, else its labels;
// nil with a reason when neither describes them.
func (pl *Plugin) topologyOf(node *corev1.Node) (*numa.Topology, string) {
	pl.mu.RLock()
	r, ok := pl.reports[node.Name]
	pl.mu.RUnlock()
	if ok {
		if r.err != nil {
			return nil, r.err.Error()
		}
		return r.t, ""
	}
	t, err := numa.FromLabels(node, pl.args.GPUResources)
	if err != nil {
		return nil, err.Error()
	}
	if t == nil {
		return nil, "node publishes no NUMA topology (no NodeResourceTopology object, no " + v1alpha1.LabelNUMANodeCount + " label)"
	}
	return t, ""
}

// Filter refuses nodes where the pod's policy cannot be met in the cells' free
// capacity. best-effort never refuses.
func (pl *Plugin) Filter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s := readState(cs)
	if s == nil {
		return nil
	}
	node := nodeInfo.Node()
	t, why := pl.topologyOf(node)
	if t == nil {
		if s.own == "" || s.own == v1alpha1.NUMAPolicyBestEffort {
			return nil
		}
		// Preemption cannot help; a report (the plugin's cache) or a label (queueing
		// hints) arriving can.
		pl.remember(s, pod)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: %s", s.own, why))
	}
	policy := numa.EffectivePolicy(s.own, t)
	if policy == "" || policy == v1alpha1.NUMAPolicyBestEffort {
		return nil // best-effort never refuses
	}
	d := numa.DemandOf(pod, t)
	if len(d) == 0 && policy != v1alpha1.NUMAPolicyIsolated {
		return nil
	}
	st := pl.cellStateOf(nodeInfo, t)
	s.cells.Store(node.Name, st)
	if _, ok := st.Place(policy, d); ok {
		return nil
	}
	pl.remember(s, pod)
	return fwk.NewStatus(fwk.Unschedulable, st.Refusal(policy, d))
}

// remember puts a pod Filter refused in Plugin.refused, once per cycle: a report
// that loosens sends it back to the queue.
func (pl *Plugin) remember(s *stateData, pod *corev1.Pod) {
	if s.recorded.CompareAndSwap(false, true) {
		pl.refused.Add(pod)
	}
}

// cellStateOf charges the node's cells with its aligned pods from the snapshot
// (bound and assumed): first those whose cells Reserve recorded, then the others in
// order of creation, each where the kubelet would put it.
func (pl *Plugin) cellStateOf(nodeInfo fwk.NodeInfo, t *numa.Topology) *numa.CellState {
	nodeFree := numa.Amounts{}
	for i := range t.Cells {
		for name := range t.Cells[i].Allocatable {
			if _, ok := nodeFree[name]; ok {
				continue
			}
			f := nodefree.Of(nodeInfo, name)
			if name != corev1.ResourceCPU {
				f /= 1000
			}
			nodeFree[name] = f
		}
	}
	st := numa.NewCellState(t, nodeFree)
	type aligned struct {
		pod    *corev1.Pod
		policy v1alpha1.NUMAPolicy
		d      numa.Amounts
	}
	var unknown []aligned
	nodeName := nodeInfo.Node().Name
	pl.placedMu.RLock()
	for _, pi := range nodeInfo.GetPods() {
		p := pi.GetPod()
		own, err := workload.NUMAPolicyOf(p.Annotations)
		if err != nil {
			own = ""
		}
		policy := numa.EffectivePolicy(own, t)
		if policy == "" {
			continue
		}
		d := numa.DemandOf(p, t)
		if len(d) == 0 && policy != v1alpha1.NUMAPolicyIsolated {
			continue
		}
		if rec, ok := pl.placed[p.UID]; ok && rec.node == nodeName {
			st.Charge(policy, d, rec.mask)
			continue
		}
		unknown = append(unknown, aligned{pod: p, policy: policy, d: d})
	}
	pl.placedMu.RUnlock()
	slices.SortFunc(unknown, func(a, b aligned) int {
		if c := a.pod.CreationTimestamp.Compare(b.pod.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(string(a.pod.UID), string(b.pod.UID))
	})
	for _, a := range unknown {
		mask, ok := st.Place(a.policy, a.d)
		if !ok {
			// Admitted before the cells filled up as the snapshot sees them: it still
			// takes its share somewhere; the lowest cells read as used.
			mask, _ = st.Place(v1alpha1.NUMAPolicyBestEffort, a.d)
		}
		st.Charge(a.policy, a.d, mask)
	}
	return st
}
