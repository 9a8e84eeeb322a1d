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
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/placement/numa"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/cyclestate"
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
	t   *numa.Topology
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
	if had && old.t != nil && old.t.KubeletPolicy != "" {
		pl.enforcing.Add(-1)
	}
	if nrt == nil {
		delete(pl.reports, name)
		return true
	}
	t, err := numa.FromNRT(nrt)
	if err != nil {
		logger.Error(err, "Ignoring a NodeResourceTopology", "node", name)
	}
	r := report{t: t, err: err}
	pl.reports[name] = r
	if t != nil && t.KubeletPolicy != "" {
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
	if old.err != nil || cur.err != nil || old.t.KubeletPolicy != cur.t.KubeletPolicy || len(old.t.Cells) != len(cur.t.Cells) {
		return true
	}
	for i := range cur.t.Cells {
		o, c := &old.t.Cells[i], &cur.t.Cells[i]
		if o.ID != c.ID || len(o.Allocatable) != len(c.Allocatable) {
			return true
		}
		for name, a := range c.Allocatable {
			if was, ok := o.Allocatable[name]; !ok || a > was {
				return true
			}
		}
		for name, used := range o.ReportedUsed {
			if c.ReportedUsed[name] < used {
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

// SignPod: the verdict depends on the pod's hint and on what the kubelet aligns of
// it (its QoS class; its requests are signed by NodeResourcesFit).
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{
		{Key: "v1.Pod.Annotations[" + v1alpha1.AnnotationNUMAPolicy + "]", Value: pod.Annotations[v1alpha1.AnnotationNUMAPolicy]},
		{Key: "v1.Pod.Annotations[" + v1alpha1.AnnotationNUMAPolicyLegacy + "]", Value: pod.Annotations[v1alpha1.AnnotationNUMAPolicyLegacy]},
		{Key: "v1.Pod.QOSClass()", Value: string(numa.QOSOf(pod))},
	}, nil
}
