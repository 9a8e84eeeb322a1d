package hardware

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GPUClasses are the DeviceClasses whose devices are GPUs, by name, with their CEL
// selectors: the classes named (KubeNexusConfig
// spec.plugins.resourceFragmentation.gpuDeviceClasses) and those whose
// extendedResourceName is one of the GPU resources.
func GPUClasses(classes []*resourceapi.DeviceClass, named []string, resources []corev1.ResourceName) map[string][]string {
	out := map[string][]string{}
	for _, c := range classes {
		gpu := slices.Contains(named, c.Name)
		if r := c.Spec.ExtendedResourceName; r != nil && slices.Contains(resources, corev1.ResourceName(*r)) {
			gpu = true
		}
		if !gpu {
			continue
		}
		sel := []string{}
		for _, s := range c.Spec.Selectors {
			if s.CEL != nil {
				sel = append(sel, s.CEL.Expression)
			}
		}
		out[c.Name] = sel
	}
	return out
}

// GPUFlags marks the devices that match one of the GPU classes; any is false when
// none does.
func GPUFlags(ctx context.Context, classes map[string][]string, devs []Device) (flags []bool, any bool) {
	flags = make([]bool, len(devs))
	for i := range devs {
		for _, sel := range classes {
			if MatchesSelectors(ctx, sel, &devs[i]) {
				flags[i], any = true, true
				break
			}
		}
	}
	return flags, any
}

// ClaimAllocation is what allocated ResourceClaims hold, read from their status: the
// devices allocated whole and what shared devices' allocations consume.
type ClaimAllocation struct {
	whole    map[DeviceKey]bool
	consumed map[DeviceKey]map[string]int64
}

// NewClaimAllocation reads the allocations of claims.
func NewClaimAllocation(claims []*resourceapi.ResourceClaim) *ClaimAllocation {
	a := &ClaimAllocation{whole: map[DeviceKey]bool{}, consumed: map[DeviceKey]map[string]int64{}}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			k := DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			if r.ShareID == nil && len(r.ConsumedCapacity) == 0 {
				a.whole[k] = true
				continue
			}
			m := a.consumed[k]
			if m == nil {
				m = map[string]int64{}
				a.consumed[k] = m
			}
			for n, q := range r.ConsumedCapacity {
				m[Qualify(r.Driver, n)] += q.MilliValue()
			}
		}
	}
	return a
}

// Allocated reports whether a device that is not shared is allocated.
func (a *ClaimAllocation) Allocated(d *Device) bool {
	return a.whole[DeviceKey{Driver: d.Driver, Pool: d.Pool, Device: d.Name}]
}

// Consumed is what allocations consume of a shared device.
func (a *ClaimAllocation) Consumed(d *Device) map[string]int64 {
	return a.consumed[DeviceKey{Driver: d.Driver, Pool: d.Pool, Device: d.Name}]
}

// ListGPUCards reads, from the API, each node's GPUs published as DRA devices of a GPU
// class (GPUClasses of named and resources, also returned) and what allocated claims
// hold of them; nil for a node without such devices, and for every node where
// resource.k8s.io/v1 is not served. The manager's HardwareTier status and feasibility
// check count them.
func ListGPUCards(ctx context.Context, c client.Reader, named []string, resources []corev1.ResourceName) (func(node string) *GPUs, map[string][]string, error) {
	none := func(string) *GPUs { return nil }
	var classList resourceapi.DeviceClassList
	if err := c.List(ctx, &classList); err != nil {
		if meta.IsNoMatchError(err) {
			return none, nil, nil
		}
		return nil, nil, err
	}
	classes := GPUClasses(pointers(classList.Items), named, resources)
	if len(classes) == 0 {
		return none, nil, nil
	}
	var sliceList resourceapi.ResourceSliceList
	if err := c.List(ctx, &sliceList); err != nil {
		return nil, nil, err
	}
	var claimList resourceapi.ResourceClaimList
	if err := c.List(ctx, &claimList); err != nil {
		return nil, nil, err
	}
	alloc := NewClaimAllocation(pointers(claimList.Items))
	byNode, counters := map[string][]Device{}, Counters{}
	for _, s := range CurrentSlices(pointers(sliceList.Items)) {
		CountersOf(s, counters)
		if node := NodeOf(s); node != "" {
			byNode[node] = append(byNode[node], DevicesOf(s)...)
		}
	}
	cards := map[string]*GPUs{}
	for node, devs := range byNode {
		if flags, any := GPUFlags(ctx, classes, devs); any {
			cards[node] = NewGPUs(devs, flags, counters, alloc)
		}
	}
	return func(node string) *GPUs { return cards[node] }, classes, nil
}

// WholeGPUs is how many whole GPUs a claim asks for: the devices of its requests
// for a GPU class (classes: GPUClasses) that ask for no part of a device's capacity
// (a request for a share is not counted), the first alternative of a prioritized
// list. A request for all devices of a class is not counted.
func WholeGPUs(spec *resourceapi.DeviceClaim, classes map[string][]string) int64 {
	var n int64
	for i := range spec.Requests {
		r := &spec.Requests[i]
		e := r.Exactly
		if e == nil && len(r.FirstAvailable) > 0 {
			f := r.FirstAvailable[0]
			e = &resourceapi.ExactDeviceRequest{DeviceClassName: f.DeviceClassName, AllocationMode: f.AllocationMode, Count: f.Count, Capacity: f.Capacity}
		}
		if e == nil {
			continue
		}
		if _, gpu := classes[e.DeviceClassName]; !gpu || e.Capacity != nil || e.AllocationMode == resourceapi.DeviceAllocationModeAll {
			continue
		}
		n += max(e.Count, 1)
	}
	return n
}

// FreeCards counts the cards with nothing allocated.
func (g *GPUs) FreeCards() int64 {
	var n int64
	for i := range g.Cards {
		if g.Cards[i].Free() == 1000 {
			n++
		}
	}
	return n
}
