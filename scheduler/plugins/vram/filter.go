package vram

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/hardware"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/devices"
)

// PreFilter reads the pod's request. Pods without one are skipped; a malformed one,
// or one on a pod that asks for no GPU at all, keeps the pod pending with a message
// naming the annotation.
func (pl *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	request, ok, err := workload.VRAMRequestOf(pod.Annotations)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	s := &stateData{request: request, gpus: workload.RequestedGPUs(pod, pl.args.GPUResources...)}
	if s.gpus == 0 {
		if len(pod.Spec.ResourceClaims) == 0 {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
				"annotation %s is set, but the pod requests no GPU (%v) and no ResourceClaim", v1alpha1.AnnotationVRAMRequest, pl.args.GPUResources))
		}
		allocated, err := pl.handle.SharedDRAManager().ResourceClaims().GatherAllocatedState()
		if err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("listing allocated devices: %w", err))
		}
		s.allocated = allocated
	}
	cs.Write(stateKey, s)
	return nil, nil
}

// PreFilterExtensions is nil.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// gpuMemory is what a node offers the pod.
type gpuMemory struct {
	// fitting are the memories of the usable GPUs with at least the request.
	fitting []int64
	// usable counts the GPUs considered (all of a device-plugin node's, the free
	// devices that can be allocated together for a claim pod); largest is the most
	// memory among a labelled node's (offer.largest for devices).
	usable  int
	largest int64
	// offer is what the node's devices offer, when the figures come from them.
	offer deviceOffer
	// source names where the figures come from.
	source string
}

// memoryOf reads a node's GPU memory for the pod; "" reason when known.
func (pl *Plugin) memoryOf(s *stateData, node *corev1.Node) (gpuMemory, string) {
	if s.gpus > 0 {
		per, label, err := hardware.GPUMemoryOf(node)
		if err != nil {
			return gpuMemory{}, err.Error()
		}
		if label != "" {
			n := int(pl.gpuCount(node))
			m := gpuMemory{usable: n, largest: per, source: label}
			if per >= s.request {
				m.fitting = make([]int64, n)
				for i := range m.fitting {
					m.fitting[i] = per
				}
			}
			return m, ""
		}
	}
	offer := pl.deviceOffer(s, node.Name)
	if offer.free == nil {
		return gpuMemory{}, fmt.Sprintf("the node publishes no GPU memory (no %s or %s label, no ResourceSlice device with a %v capacity)",
			v1alpha1.LabelGPUMemory, v1alpha1.LabelGPUVRAMFallback, pl.args.DeviceMemoryCapacities)
	}
	m := gpuMemory{source: "ResourceSlices", offer: offer}
	m.usable = len(offer.together(func(int64) bool { return true }))
	for _, d := range offer.together(func(mem int64) bool { return mem >= s.request }) {
		m.fitting = append(m.fitting, offer.free[devices.IDOf(d)])
	}
	return m, ""
}

// deviceOffer is the GPU memory a node's devices offer the pod: per device with a
// memory capacity, what allocations leave of it (all of it for a free device,
// nothing for one allocated whole, its capacity less what its allocations consume
// for a shared one), with the devices' counters (partitions of one card are not
// allocated together).
type deviceOffer struct {
	devs     []devices.Device
	counters hardware.Counters
	free     map[structured.DeviceID]int64
	taken    func(*devices.Device) bool
}

func (pl *Plugin) deviceOffer(s *stateData, node string) deviceOffer {
	o := deviceOffer{devs: pl.devices.OnNode(node), counters: pl.devices.Counters(), taken: func(*devices.Device) bool { return false }}
	if a := s.allocated; a != nil {
		o.taken = func(d *devices.Device) bool {
			id := devices.IDOf(d)
			return a.AllocatedDevices.Has(id) || a.AggregatedCapacity[id] != nil
		}
	}
	for i := range o.devs {
		d := &o.devs[i]
		name, mem, ok := pl.deviceMemory(d)
		if !ok {
			continue
		}
		if o.free == nil {
			o.free = map[structured.DeviceID]int64{}
		}
		id := devices.IDOf(d)
		switch {
		case s.allocated == nil:
		case d.Shared:
			for n, q := range s.allocated.AggregatedCapacity[id] {
				if q != nil && hardware.Qualify(d.Driver, n) == name {
					mem -= q.Value()
				}
			}
		case s.allocated.AllocatedDevices.Has(id):
			mem = 0
		}
		o.free[id] = mem
	}
	return o
}

// together returns a largest set of devices with free memory that want accepts and
// that can be allocated at once.
func (o deviceOffer) together(want func(mem int64) bool) []*devices.Device {
	return hardware.Simultaneous(o.devs, o.counters, o.taken, func(d *devices.Device) bool {
		mem, ok := o.free[devices.IDOf(d)]
		return ok && mem > 0 && want(mem)
	})
}

// largest is the most free memory of one device that can still be allocated.
func (o deviceOffer) largest() int64 {
	var out int64
	for i := range o.devs {
		d := &o.devs[i]
		mem := o.free[devices.IDOf(d)]
		if mem <= out {
			continue
		}
		if len(hardware.Simultaneous(o.devs, o.counters, o.taken, func(x *devices.Device) bool { return x == d })) == 1 {
			out = mem
		}
	}
	return out
}

// deviceMemory returns the device's memory capacity, by qualified name, in bytes.
func (pl *Plugin) deviceMemory(d *devices.Device) (string, int64, bool) {
	for _, name := range pl.args.DeviceMemoryCapacities {
		if k, ok := d.CapacityKey(name); ok {
			q := d.Capacity[k]
			return k, q.Value(), true
		}
	}
	return "", 0, false
}

func (pl *Plugin) gpuCount(node *corev1.Node) int64 {
	var n int64
	for _, r := range pl.args.GPUResources {
		if q, ok := node.Status.Allocatable[r]; ok {
			n += q.Value()
		}
	}
	return n
}

func bytes(v int64) string { return resource.NewQuantity(v, resource.BinarySI).String() }

// Filter refuses nodes whose GPUs have less memory than the pod needs per GPU: for
// device-plugin GPUs, fewer GPUs with enough memory than the pod requests; for a
// claim pod, no free device with enough.
func (pl *Plugin) Filter(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s := readState(cs)
	if s == nil {
		return nil
	}
	m, why := pl.memoryOf(s, nodeInfo.Node())
	if why != "" {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "VRAM: "+why)
	}
	need := max(s.gpus, 1)
	if int64(len(m.fitting)) >= need {
		return nil
	}
	switch {
	case s.gpus == 0:
		// Resolvable: a claim released frees its devices.
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("VRAM: no free device on the node has %s (%d free, the largest %s)", bytes(s.request), m.usable, bytes(m.offer.largest())))
	case m.source == "ResourceSlices":
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("VRAM: %d of the node's GPUs have %s; the pod needs %d", len(m.fitting), bytes(s.request), s.gpus))
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("VRAM: the node's GPUs have %s each (%s); the pod needs %s per GPU", bytes(m.largest), m.source, bytes(s.request)))
}
