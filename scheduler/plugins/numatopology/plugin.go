// Package numatopology places pods with a NUMA policy where the kubelet will admit
// them. A node's cells come from its NodeResourceTopology (what the kubelet last
// reported: each cell's allocatable and available CPUs, memory and devices, and the
// topology manager's policy), else from the numa.kubenexus.io fallback labels. What
// the report cannot know yet — pods the scheduler has assumed or bound since — is
// charged from the scheduler snapshot, so a burst of pods is not all sent to one
// cell: each cell counts the larger of what the report says is used and what the
// snapshot's aligned pods take.
package numatopology

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/refused"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.NUMATopology

const stateKey fwk.StateKey = "PreFilter" + Name

// Plugin is the NUMATopology plugin.
type Plugin struct {
	args   *config.NUMATopologyArgs
	handle fwk.Handle

	mu sync.RWMutex
	// reports are the parsed NodeResourceTopologies by node name; a report that
	// cannot be read is kept as its error.
	reports map[string]report
	// enforcing counts the reports whose kubelet enforces a policy; while it is 0,
	// pods without a hint of their own are skipped.
	enforcing atomic.Int32

	// placed remembers the cells Reserve chose for a pod, so that the snapshot
	// charges the cells the kubelet is expected to use; pods without a record
	// (scheduled before a restart, or by another scheduler) are fitted in order of
	// creation, as the kubelet would have.
	placedMu sync.RWMutex
	placed   map[types.UID]placement

	// refused are the pods Filter refused; a report that loosens (setReport) sends
	// them back to the queue.
	refused *refused.Pods
}

type report struct {
	t   *topology
	err error
}

type placement struct {
	node string
	mask uint64
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin. NodeResourceTopologies come from the shared KubeNexus
// cache when their CRD is installed.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider) (*Plugin, error) {
	args, err := config.DecodeNUMATopologyArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	refusedPods, err := refused.New(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pl := &Plugin{
		args:    args,
		handle:  h,
		reports: map[string]report{},
		placed:  map[types.UID]placement{},
		refused: refusedPods,
	}
	logger := klog.FromContext(ctx)
	if err := c.OnNodeResourceTopologyChange(func(name string, nrt *nrtv1alpha2.NodeResourceTopology) {
		if pl.setReport(logger, name, nrt) {
			pl.refused.Activate(logger, "NodeResourceTopology "+name+" changed")
		}
	}); err != nil {
		return nil, fmt.Errorf("%s: watching NodeResourceTopologies: %w", Name, err)
	}
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				pl.forget(p.UID)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("%s: watching pods: %w", Name, err)
	}
	return pl, nil
}

// setReport parses a node's NodeResourceTopology (nil: deleted) and reports
// whether the change can admit a pod the previous report refused (loosens).
func (pl *Plugin) setReport(logger klog.Logger, name string, nrt *nrtv1alpha2.NodeResourceTopology) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	old, had := pl.reports[name]
	if had && old.t != nil && old.t.kubeletPolicy != "" {
		pl.enforcing.Add(-1)
	}
	if nrt == nil {
		delete(pl.reports, name)
		return true
	}
	t, err := fromNRT(nrt)
	if err != nil {
		logger.Error(err, "Ignoring a NodeResourceTopology", "node", name)
	}
	r := report{t: t, err: err}
	pl.reports[name] = r
	if t != nil && t.kubeletPolicy != "" {
		pl.enforcing.Add(1)
	}
	return !had || loosens(old, r)
}

// loosens reports whether a node's new report can admit a pod the old one
// refused. A cell's free amount is its allocatable less the larger of what the
// report says is used and what the snapshot charges, so for the same cells and
// policy only a larger allocatable or a smaller reported use frees anything; an
// exporter's periodic report of a busier (or unchanged) node does not. Errors,
// another policy or other cells count as loosening.
func loosens(old, cur report) bool {
	if old.err != nil || cur.err != nil || old.t.kubeletPolicy != cur.t.kubeletPolicy || len(old.t.cells) != len(cur.t.cells) {
		return true
	}
	for i := range cur.t.cells {
		o, c := &old.t.cells[i], &cur.t.cells[i]
		if o.id != c.id || len(o.allocatable) != len(c.allocatable) {
			return true
		}
		for name, a := range c.allocatable {
			if was, ok := o.allocatable[name]; !ok || a > was {
				return true
			}
		}
		for name, used := range o.reportedUsed {
			if c.reportedUsed[name] < used {
				return true
			}
		}
	}
	return false
}

func (pl *Plugin) forget(uid types.UID) {
	pl.placedMu.Lock()
	delete(pl.placed, uid)
	pl.placedMu.Unlock()
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

type stateData struct {
	// own is the pod's own NUMA hint ("" when it sets none).
	own v1alpha1.NUMAPolicy
	// cells are the nodes' cell states Filter computed, for Score (node name →
	// *cellState).
	cells sync.Map
	// recorded: Filter has put the pod in Plugin.refused this cycle.
	recorded atomic.Bool
}

func (s *stateData) Clone() fwk.StateData { return s }

func readState(cs fwk.CycleState) *stateData { return cyclestate.Read[*stateData](cs, stateKey) }

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
	if qosOf(pod) == corev1.PodQOSGuaranteed {
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
func (pl *Plugin) topologyOf(node *corev1.Node) (*topology, string) {
	pl.mu.RLock()
	r, ok := pl.reports[node.Name]
	pl.mu.RUnlock()
	if ok {
		if r.err != nil {
			return nil, r.err.Error()
		}
		return r.t, ""
	}
	t, err := fromLabels(node, pl.args.GPUResources)
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
	policy := effectivePolicy(s.own, t)
	if policy == "" || policy == v1alpha1.NUMAPolicyBestEffort {
		return nil // best-effort never refuses
	}
	d := demandOf(pod, t)
	if len(d) == 0 && policy != v1alpha1.NUMAPolicyIsolated {
		return nil
	}
	st := pl.cellStateOf(nodeInfo, t)
	s.cells.Store(node.Name, st)
	if _, ok := st.place(policy, d); ok {
		return nil
	}
	pl.remember(s, pod)
	return fwk.NewStatus(fwk.Unschedulable, st.refusal(policy, d))
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
func (pl *Plugin) cellStateOf(nodeInfo fwk.NodeInfo, t *topology) *cellState {
	nodeFree := amounts{}
	for i := range t.cells {
		for name := range t.cells[i].allocatable {
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
	st := newCellState(t, nodeFree)
	type aligned struct {
		pod    *corev1.Pod
		policy v1alpha1.NUMAPolicy
		d      amounts
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
		policy := effectivePolicy(own, t)
		if policy == "" {
			continue
		}
		d := demandOf(p, t)
		if len(d) == 0 && policy != v1alpha1.NUMAPolicyIsolated {
			continue
		}
		if rec, ok := pl.placed[p.UID]; ok && rec.node == nodeName {
			st.charge(policy, d, rec.mask)
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
		mask, ok := st.place(a.policy, a.d)
		if !ok {
			// Admitted before the cells filled up as the snapshot sees them: it still
			// takes its share somewhere; the lowest cells read as used.
			mask, _ = st.place(v1alpha1.NUMAPolicyBestEffort, a.d)
		}
		st.charge(a.policy, a.d, mask)
	}
	return st
}

// PreScore skips scoring when PreFilter skipped the pod, and for pods without a
// hint of their own: the kubelet's policy only filters them, so that pods which did
// not ask for NUMA placement are not drawn to the nodes that report cells.
func (pl *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if s := readState(cs); s == nil || s.own == "" {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score prefers nodes where the pod spans the fewest cells and leaves the least
// free in them (best fit), so that whole cells stay free for pods that need them.
func (pl *Plugin) Score(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := readState(cs)
	if s == nil {
		return 0, nil
	}
	t, _ := pl.topologyOf(nodeInfo.Node())
	if t == nil {
		return 0, nil
	}
	policy, d := effectivePolicy(s.own, t), demandOf(pod, t)
	if policy == "" {
		return 0, nil
	}
	var st *cellState
	if v, ok := s.cells.Load(nodeInfo.Node().Name); ok {
		st = v.(*cellState)
	} else {
		st = pl.cellStateOf(nodeInfo, t)
	}
	mask, ok := st.place(policy, d)
	if !ok {
		return 0, nil
	}
	return st.score(policy, d, mask), nil
}

// ScoreExtensions is nil: scores are already on the 0–100 scale.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve records the cells the pod is expected to take on its node, so that the
// next pods see them used before any report arrives.
func (pl *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	s := readState(cs)
	if s == nil {
		return nil
	}
	ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return nil
	}
	t, _ := pl.topologyOf(ni.Node())
	if t == nil {
		return nil
	}
	policy, d := effectivePolicy(s.own, t), demandOf(pod, t)
	if policy == "" || (len(d) == 0 && policy != v1alpha1.NUMAPolicyIsolated) {
		return nil
	}
	// The snapshot does not hold the pod yet: its cells are those Filter found.
	mask, ok := pl.cellStateOf(ni, t).place(policy, d)
	if !ok {
		return nil
	}
	pl.placedMu.Lock()
	pl.placed[pod.UID] = placement{node: nodeName, mask: mask}
	pl.placedMu.Unlock()
	return nil
}

// Unreserve forgets the pod's cells.
func (pl *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.forget(pod.UID)
}

// EventsToRegister: a refused pod can fit once an aligned pod is deleted or a node
// gains NUMA labels or capacity. Reports are not registered here: the scheduler's
// event would come before the plugin's cache has the report, and its objects are
// unstructured; the cache's own handler re-activates the refused pods when a
// report loosens (setReport), in flight or not.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: isSchedulableAfterPodDelete},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable}, QueueingHintFn: isSchedulableAfterNodeChange},
	}, nil
}

// isSchedulableAfterPodDelete queues when the deleted pod was on a node and may have
// taken NUMA-aligned resources.
func isSchedulableAfterPodDelete(_ klog.Logger, _ *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	p, ok := oldObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	if p.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	if own, _ := workload.NUMAPolicyOf(p.Annotations); own != "" || mayAlign(p) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterNodeChange queues for nodes that carry the fallback NUMA label
// (nodes described by a report change with it).
func isSchedulableAfterNodeChange(_ klog.Logger, _ *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	n, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, nil
	}
	if _, ok := n.Labels[v1alpha1.LabelNUMANodeCount]; ok {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// SignPod: the verdict depends on the pod's hint and on what the kubelet aligns of
// it (its QoS class; its requests are signed by NodeResourcesFit).
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{
		{Key: "v1.Pod.Annotations[" + v1alpha1.AnnotationNUMAPolicy + "]", Value: pod.Annotations[v1alpha1.AnnotationNUMAPolicy]},
		{Key: "v1.Pod.Annotations[" + v1alpha1.AnnotationNUMAPolicyLegacy + "]", Value: pod.Annotations[v1alpha1.AnnotationNUMAPolicyLegacy]},
		{Key: "v1.Pod.QOSClass()", Value: string(qosOf(pod))},
	}, nil
}
