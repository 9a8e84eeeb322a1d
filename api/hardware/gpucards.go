package hardware

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
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

// GPUCards is each node's GPUs published as DRA devices of a GPU class and what
// allocated claims hold of them (ListGPUCards).
type GPUCards struct {
	devs     map[string][]Device
	flags    map[string][]bool
	counters Counters
	claims   []*resourceapi.ResourceClaim
	cards    map[string]*GPUs
}

// NewGPUCards groups each node's GPU devices (devs, flags: GPUFlags) into cards,
// with what the claims' allocations hold of them.
func NewGPUCards(devs map[string][]Device, flags map[string][]bool, counters Counters, claims []*resourceapi.ResourceClaim) *GPUCards {
	g := &GPUCards{devs: devs, flags: flags, counters: counters, claims: claims, cards: make(map[string]*GPUs, len(devs))}
	alloc := NewClaimAllocation(claims)
	for node, d := range devs {
		g.cards[node] = NewGPUs(d, flags[node], counters, alloc)
	}
	return g
}

// Of returns the node's cards, nil for a node without GPU devices (and for every
// node of a nil GPUCards).
func (g *GPUCards) Of(node string) *GPUs {
	if g == nil {
		return nil
	}
	return g.cards[node]
}

// Without returns the nodes' cards with the claims released that only the pods
// gone (by UID) were reserved for: what evicting those pods frees.
func (g *GPUCards) Without(gone sets.Set[types.UID]) func(node string) *GPUs {
	if g == nil {
		return func(string) *GPUs { return nil }
	}
	var kept []*resourceapi.ResourceClaim
	released := false
	for _, c := range g.claims {
		if onlyFor(c, gone) {
			released = true
			continue
		}
		kept = append(kept, c)
	}
	if !released {
		return g.Of
	}
	return NewGPUCards(g.devs, g.flags, g.counters, kept).Of
}

// onlyFor reports whether the claim is reserved for pods and all of them are gone.
func onlyFor(c *resourceapi.ResourceClaim, gone sets.Set[types.UID]) bool {
	if len(c.Status.ReservedFor) == 0 {
		return false
	}
	for _, r := range c.Status.ReservedFor {
		if r.Resource != "pods" || !gone.Has(r.UID) {
			return false
		}
	}
	return true
}

// ListGPUCards reads, from the API, each node's GPUs published as DRA devices of a GPU
// class (GPUClasses of named and resources, also returned) and what allocated claims
// hold of them; none for a node without such devices, nor for any node where
// resource.k8s.io/v1 is not served (a nil *GPUCards). The manager's HardwareTier
// status and feasibility check count them.
func ListGPUCards(ctx context.Context, c client.Reader, named []string, resources []corev1.ResourceName) (*GPUCards, map[string][]string, error) {
	var classList resourceapi.DeviceClassList
	if err := c.List(ctx, &classList); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	classes := GPUClasses(pointers(classList.Items), named, resources)
	if len(classes) == 0 {
		return nil, nil, nil
	}
	var sliceList resourceapi.ResourceSliceList
	if err := c.List(ctx, &sliceList); err != nil {
		return nil, nil, err
	}
	var claimList resourceapi.ResourceClaimList
	if err := c.List(ctx, &claimList); err != nil {
		return nil, nil, err
	}
	byNode, counters := map[string][]Device{}, Counters{}
	for _, s := range CurrentSlices(pointers(sliceList.Items)) {
		CountersOf(s, counters)
		if node := NodeOf(s); node != "" {
			byNode[node] = append(byNode[node], DevicesOf(s)...)
		}
	}
	gpuDevs, gpuFlags := map[string][]Device{}, map[string][]bool{}
	for node, devs := range byNode {
		if flags, any := GPUFlags(ctx, classes, devs); any {
			gpuDevs[node], gpuFlags[node] = devs, flags
		}
	}
	return NewGPUCards(gpuDevs, gpuFlags, counters, pointers(claimList.Items)), classes, nil
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
