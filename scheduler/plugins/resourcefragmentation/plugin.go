// Package resourcefragmentation places GPU pods where they fragment GPU capacity
// least, relative to the demand that is coming: the GPU pods queued for this
// scheduler and a decaying memory of recent arrivals. A node's fragmentation is the
// expected number of its free GPUs that a task of that demand could not use, for want
// of GPUs or of the CPU and memory left beside them (Weng et al., ATC'23); a pod goes
// where placing it raises that least, so small pods fill nodes that are already
// broken and whole nodes stay whole. Each placement is also charged the GPUs of
// expected demand it leaves without a host (placement.Scarcity), so that a node that
// alone can host a rare large shape is not spent on tasks that fit elsewhere — FGD's
// count cannot tell it from a node that cannot. While queued pods need
// whole nodes (or any size that only a few nodes still host), a placement that would
// take the last such nodes from them scores lowest, and so does a placement that
// breaks a wholly free multi-node NVLink domain (nvidia.com/gpu.clique) while tasks
// that take whole nodes are in the demand; with keepHostsForQueued the first of
// these is refused by a Filter instead (filter.go). Pods that ask for no GPU go where
// their CPU and memory leave fewest free GPUs without the CPU and memory the demand
// asks for beside each GPU (placement.Unbacked); they are skipped at PreScore when no
// GPU pod is expected or none of their nodes has a GPU free.
//
// The plugin also serves kubenexus_largest_placeable_gang: per GPU model,
// HardwareTier, member size (1, 2, 4, 8 GPUs) and topology level, the largest gang
// that fits now in one domain (computed on scrape by placement.LargestGangs, the code
// the manager uses for HardwareTier status).
package resourcefragmentation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/dragpus"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
)

// Name is the plugin's registered name.
const Name = names.ResourceFragmentation

// Plugin is the ResourceFragmentation plugin.
type Plugin struct {
	// nodes lists every node of the cycle's snapshot (nil in unit tests: the
	// feasible nodes stand in).
	nodes  fwk.NodeInfoLister
	gpus   []corev1.ResourceName
	demand *tracker
	// reservations gives what ResourceReservations hold (nil in unit tests).
	reservations *resourcereservation.Shared
	// dra reads GPUs published as DRA devices and pods' claims for them (nil in
	// unit tests).
	dra *dragpus.View
	// fleet keeps the nodes' rooms across cycles (fleet.go).
	fleet fleet
}

var (
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ScoreExtensions   = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin; it follows the profile's pods through the scheduler's
// shared informer to know the queued GPU demand.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, reservations *resourcereservation.Shared, gpus *dragpus.View) (fwk.Plugin, error) {
	args, err := config.DecodeResourceFragmentationArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	t := newTracker(h.ProfileName(), args.GPUResources, *args.ArrivalHalfLifeSeconds)
	// The args name the GPU classes and resources for every plugin's view of DRA GPUs.
	gpus.Configure(args.GPUDeviceClasses, args.GPUResources)
	t.dra = gpus
	informers := h.SharedInformerFactory().Core().V1()
	if _, err := informers.Pods().Informer().AddEventHandler(t.handler()); err != nil {
		return nil, fmt.Errorf("%s: watching pods: %w", Name, err)
	}
	cache, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	levels := config.Levels(args.Levels)
	// The gauges are the scheduler's, not a profile's: the plugin built last serves
	// them.
	serve(&gangCollector{nodes: informers.Nodes().Lister(), pods: informers.Pods().Lister(),
		tiers: cache.HardwareTiers, levels: levels, gpus: args.GPUResources, dra: t.dra})
	pl := &Plugin{nodes: h.SnapshotSharedLister().NodeInfos(), gpus: args.GPUResources, demand: t, reservations: reservations, dra: t.dra}
	if *args.KeepHostsForQueued {
		return &keeping{pl}, nil
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// SignPod refuses the pods the plugin scores against the whole fleet: a GPU pod's
// score counts the hosts of each queued size, the free NVLink domains and the
// scarcity of each shape over every node, all of which the previous pod's placement
// changes, so opportunistic batching must not carry one GPU pod's ranking to the
// next. A pod that asks for no GPU is scored only while GPU pods are queued (it is
// refused then); otherwise it is skipped and adds nothing. The queue signs a pod
// when it is added or updated: a CPU pod signed before GPU demand arrived can still
// take a hint, from a ranking made moments before by an identical pod against the
// same demand, stale only in what that pod's own placement moved.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if pl.demand.shape(pod).isGPU() {
		return nil, fwk.NewStatus(fwk.Unschedulable, "pods that ask for GPUs are scored against the fleet's free GPUs and are not signable")
	}
	if !pl.demand.empty() {
		return nil, fwk.NewStatus(fwk.Unschedulable, "pods without GPUs are scored against queued GPU pods while there are any, and are not signable then")
	}
	return nil, nil
}

// capacityWith is the node's allocatable GPUs (DRA devices that back a GPU
// resource included), its cards e when its GPUs are DRA devices (cardsOf).
func (pl *Plugin) capacityWith(ni fwk.NodeInfo, e *dragpus.Entry) int64 {
	if e != nil {
		return int64(len(e.G.Cards))
	}
	var n int64
	for _, name := range pl.gpus {
		n += nodefree.Allocatable(ni, name)
	}
	return n
}

// room is the node's free whole GPUs (over every resource that counts as one), CPU
// and memory, less what held (nil: nothing) says reservations of other owners hold,
// and the model of its GPUs (GPU Feature Discovery's nvidia.com/gpu.product label).
func (pl *Plugin) room(ni fwk.NodeInfo, held func(fwk.NodeInfo) map[corev1.ResourceName]int64, dc *dragpus.Cycle) placement.Room {
	return pl.roomWith(ni, held, dc, pl.cardsOf(ni, dc))
}

// roomWith is room with the node's cards e (cardsOf) given.
func (pl *Plugin) roomWith(ni fwk.NodeInfo, held func(fwk.NodeInfo) map[corev1.ResourceName]int64, dc *dragpus.Cycle, e *dragpus.Entry) placement.Room {
	var h map[corev1.ResourceName]int64
	if held != nil {
		h = held(ni)
	}
	r := placement.Room{MilliCPU: nodefree.Of(ni, corev1.ResourceCPU) - h[corev1.ResourceCPU], Memory: (nodefree.Of(ni, corev1.ResourceMemory) - h[corev1.ResourceMemory]) / 1000,
		Model: ni.Node().Labels[v1alpha1.LabelGPUProduct]}
	if e != nil {
		r.GPUs, r.Partial = e.Whole, e.Partial
		for _, name := range pl.gpus {
			r.GPUs -= h[name] / 1000
		}
		r.GPUs = max(r.GPUs, 0)
		return r
	}
	// A node without GPU-class devices has no GPUs that DRA devices back: only its
	// allocatable's count, read without the device index.
	scalar := dc == nil || !dc.HasGPUs(ni.Node().Name)
	for _, name := range pl.gpus {
		var f int64
		if scalar {
			f = (ni.GetAllocatable().GetScalarResources()[name] - ni.GetRequested().GetScalarResources()[name]) * 1000
		} else {
			f = nodefree.Of(ni, name)
		}
		if f -= h[name]; f > 0 {
			r.GPUs += f / 1000
		}
	}
	return r
}

// cardsOf returns the node's GPU cards when they are DRA devices of a GPU class and
// its allocatable has none of the GPU resources (device-plugin GPUs are read from
// the snapshot's requests); nil otherwise.
func (pl *Plugin) cardsOf(ni fwk.NodeInfo, dc *dragpus.Cycle) *dragpus.Entry {
	if dc == nil || pl.scalarGPUs(ni) {
		return nil
	}
	return dc.Entry(ni.Node().Name)
}

// scalarGPUs reports whether the node's allocatable has one of the GPU resources.
func (pl *Plugin) scalarGPUs(ni fwk.NodeInfo) bool {
	scalar := ni.GetAllocatable().GetScalarResources()
	for _, name := range pl.gpus {
		if scalar[name] > 0 {
			return true
		}
	}
	return false
}

// shapeOf is what the pod asks for: GPUs (over every resource that counts as one),
// CPU and memory; the zero shape for a pod that names no GPU resource, which is told
// by a look at its containers' requests and limits, without summing them.
func shapeOf(pod *corev1.Pod, gpus []corev1.ResourceName) shape {
	if !workload.NamesAny(pod, gpus) {
		return shape{}
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	sh := shape{milliCPU: reqs.Cpu().MilliValue(), memory: reqs.Memory().Value(), models: modelsKey(workload.RequiredGPUModels(pod))}
	for _, r := range gpus {
		if q, ok := reqs[r]; ok {
			sh.gpus += q.Value()
		}
	}
	return sh
}

// cpuShapeOf is the CPU and memory a pod that asks for no GPU requests.
func cpuShapeOf(pod *corev1.Pod) shape {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return shape{milliCPU: reqs.Cpu().MilliValue(), memory: reqs.Memory().Value()}
}
