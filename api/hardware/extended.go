package hardware

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Extended resources backed by DRA (GA in Kubernetes 1.37): a pod asks for
// nvidia.com/gpu: 1 and the node publishes its GPUs only as ResourceSlice devices;
// a DeviceClass names the extended resource its devices back (spec.extendedResourceName,
// or deviceclass.resource.kubernetes.io/<class> when unset), and kube-scheduler's
// DynamicResources plugin allocates one device per unit. The node's allocatable
// has no such resource, so every count made from allocatable alone (free GPUs per
// node, a gang's plan, fragmentation, a tier's capacity) would see none.
// ExtendedResources counts, per node, the devices that back each such resource:
// the devices of the node's slices that match all of a class's selectors (CEL,
// compiled once per expression), without a NoSchedule or NoExecute taint of their
// own or from a DeviceTaintRule, and not held by a pod's own ResourceClaim, as many
// as can be allocated at once (partitionable devices) and as often as each can be
// shared (consumable capacity). Not counted: slices shared by several nodes.

// DeviceKey names a device as a ResourceClaim's allocation does.
type DeviceKey struct{ Driver, Pool, Device string }

// Unavailable are the devices that no extended-resource request can get, beyond
// those whose slice taints them: those a DeviceTaintRule taints NoSchedule or
// NoExecute (kube-scheduler's claim for an extended resource tolerates nothing),
// and those that pods' own ResourceClaims hold. Devices held by the claims
// kube-scheduler makes for extended resources are not among them: their pods'
// requests are counted as the node's requested resources already.
type Unavailable struct {
	Rules []*resourceapi.DeviceTaintRule
	Held  map[DeviceKey]bool
}

// HeldByOwnClaims returns the devices that allocated ResourceClaims hold, those
// kube-scheduler made for an extended resource left out.
func HeldByOwnClaims(claims []*resourceapi.ResourceClaim) map[DeviceKey]bool {
	held := map[DeviceKey]bool{}
	for _, c := range claims {
		if c.Status.Allocation == nil || c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] == "true" {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			held[DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}] = true
		}
	}
	return held
}

// taintedByRule reports whether a DeviceTaintRule keeps new allocations off the
// device: its taint's effect is NoSchedule or NoExecute and its selector (all of
// driver, pool and device that it sets) matches. A rule without a selector matches
// nothing, an empty one every device.
func (u *Unavailable) taintedByRule(driver, pool, device string) bool {
	for _, r := range u.Rules {
		if e := r.Spec.Taint.Effect; e != resourceapi.DeviceTaintEffectNoSchedule && e != resourceapi.DeviceTaintEffectNoExecute {
			continue
		}
		sel := r.Spec.DeviceSelector
		if sel == nil ||
			sel.Driver != nil && *sel.Driver != driver ||
			sel.Pool != nil && *sel.Pool != pool ||
			sel.Device != nil && *sel.Device != device {
			continue
		}
		return true
	}
	return false
}

// ExtendedResources returns, per node, how many devices back each extended
// resource a DeviceClass names; off (nil: none) says which devices are unavailable.
func ExtendedResources(slices []*resourceapi.ResourceSlice, classes []*resourceapi.DeviceClass, off *Unavailable) map[string]map[corev1.ResourceName]int64 {
	if off == nil {
		off = &Unavailable{}
	}
	return extendedOf(slices, backingClasses(classes), off)
}

// ListExtended reads every ResourceSlice, DeviceClass, DeviceTaintRule and
// ResourceClaim through c and returns ExtendedResources per node, without the
// devices that rules taint or pods' own claims hold. A cluster that does not serve
// resource.k8s.io/v1 has none; one that serves no DeviceTaintRules (before 1.37)
// has no rules.
func ListExtended(ctx context.Context, c client.Reader) (func(node string) map[corev1.ResourceName]int64, error) {
	none := func(string) map[corev1.ResourceName]int64 { return nil }
	var classes resourceapi.DeviceClassList
	if err := c.List(ctx, &classes); err != nil {
		if meta.IsNoMatchError(err) {
			return none, nil
		}
		return nil, err
	}
	if len(classes.Items) == 0 {
		return none, nil
	}
	var slices resourceapi.ResourceSliceList
	if err := c.List(ctx, &slices); err != nil {
		return nil, err
	}
	off := &Unavailable{}
	var rules resourceapi.DeviceTaintRuleList
	switch err := c.List(ctx, &rules); {
	case err == nil:
		off.Rules = pointers(rules.Items)
	case !meta.IsNoMatchError(err):
		return nil, err
	}
	var claims resourceapi.ResourceClaimList
	if err := c.List(ctx, &claims); err != nil {
		return nil, err
	}
	off.Held = HeldByOwnClaims(pointers(claims.Items))
	byNode := ExtendedResources(pointers(slices.Items), pointers(classes.Items), off)
	return func(node string) map[corev1.ResourceName]int64 { return byNode[node] }, nil
}

// pointers returns pointers to the items of a list, in order.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// celCache compiles DeviceClass selectors once per expression.
var celCache = cel.NewCache(64, cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})

// backingClass is a DeviceClass that backs an extended resource.
type backingClass struct {
	resource  corev1.ResourceName
	name      string
	selectors []string
}

// backingClasses returns the classes that back an extended resource.
func backingClasses(classes []*resourceapi.DeviceClass) []backingClass {
	var out []backingClass
	for _, c := range classes {
		name := corev1.ResourceName(resourceapi.ResourceDeviceClassPrefix + c.Name)
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName != "" {
			name = corev1.ResourceName(*c.Spec.ExtendedResourceName)
		}
		b := backingClass{resource: name, name: c.Name}
		for _, s := range c.Spec.Selectors {
			if s.CEL != nil {
				b.selectors = append(b.selectors, s.CEL.Expression)
			}
		}
		out = append(out, b)
	}
	return out
}

// extendedOf counts, per node, the units of each extended resource its devices
// back (Backing, then Node for every node).
func extendedOf(slices []*resourceapi.ResourceSlice, classes []backingClass, off *Unavailable) map[string]map[corev1.ResourceName]int64 {
	out := map[string]map[corev1.ResourceName]int64{}
	b := backingOf(slices, classes)
	for node := range b.byNode {
		if n := b.Node(node, off); n != nil {
			out[node] = n
		}
	}
	return out
}

// Backing is which devices of each node could back which extended resource: the
// part of ExtendedResources that depends only on the slices and classes (the CEL
// matching), computed once per change of either; Node adds what changes with every
// allocation (held devices, DeviceTaintRules) for one node at a time.
type Backing struct {
	counters Counters
	byNode   map[string]*nodeBacking
}

type nodeBacking struct {
	devs []Device
	// tainted: the device's own slice taints it NoSchedule or NoExecute.
	tainted []bool
	// backs lists, per extended resource, the indexes into devs of the devices
	// matching the first class that names it.
	backs map[corev1.ResourceName][]int
}

// NewBacking matches the devices of slices against the classes that back extended
// resources.
func NewBacking(slices []*resourceapi.ResourceSlice, classes []*resourceapi.DeviceClass) *Backing {
	return backingOf(slices, backingClasses(classes))
}

func backingOf(slices []*resourceapi.ResourceSlice, classes []backingClass) *Backing {
	b := &Backing{counters: Counters{}, byNode: map[string]*nodeBacking{}}
	if len(classes) == 0 {
		return b
	}
	slices = CurrentSlices(slices)
	for _, s := range slices {
		CountersOf(s, b.counters)
	}
	ctx := context.Background()
	for _, s := range slices {
		if s.Spec.NodeName == nil || *s.Spec.NodeName == "" || len(s.Spec.Devices) == 0 {
			continue
		}
		nb := b.byNode[*s.Spec.NodeName]
		if nb == nil {
			nb = &nodeBacking{backs: map[corev1.ResourceName][]int{}}
			b.byNode[*s.Spec.NodeName] = nb
		}
		devs := DevicesOf(s)
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			idx := len(nb.devs)
			nb.devs = append(nb.devs, devs[i])
			nb.tainted = append(nb.tainted, tainted(d.Taints))
			in := cel.Device{Driver: s.Spec.Driver, AllowMultipleAllocations: d.AllowMultipleAllocations, Attributes: d.Attributes, Capacity: d.Capacity}
			counted := map[corev1.ResourceName]bool{}
			for _, c := range classes {
				if counted[c.resource] || !matchesAll(ctx, c, in) {
					continue
				}
				counted[c.resource] = true
				nb.backs[c.resource] = append(nb.backs[c.resource], idx)
			}
		}
	}
	return b
}

// Node counts the units of each extended resource the node's devices back with off
// (nil: none) unavailable: the matching devices that are neither held nor tainted,
// as many as can be allocated at once beside the held ones (Simultaneous: partitions
// of one card share its counters), each as many times as it can be shared
// (Device.Shares). A resource none of whose devices is free is left out; nil when
// none is left.
func (b *Backing) Node(node string, off *Unavailable) map[corev1.ResourceName]int64 {
	nb := b.byNode[node]
	if nb == nil || len(nb.backs) == 0 {
		return nil
	}
	if off == nil {
		off = &Unavailable{}
	}
	isHeld := func(d *Device) bool {
		return !d.Shared && off.Held[DeviceKey{Driver: d.Driver, Pool: d.Pool, Device: d.Name}]
	}
	notHeld := func(d *Device) bool { return !isHeld(d) }
	// The held devices of the node, whichever class they match: a held partition
	// spends its card's counters.
	var held []Device
	for i := range nb.devs {
		if isHeld(&nb.devs[i]) {
			held = append(held, nb.devs[i])
		}
	}
	out := make(map[corev1.ResourceName]int64, len(nb.backs))
	for name, idxs := range nb.backs {
		devs := append([]Device(nil), held...)
		free := false
		for _, i := range idxs {
			d := &nb.devs[i]
			if isHeld(d) || nb.tainted[i] || off.taintedByRule(d.Driver, d.Pool, d.Name) {
				continue
			}
			devs = append(devs, *d)
			free = true
		}
		if !free {
			continue // as if no device backed it
		}
		var n int64
		for _, d := range Simultaneous(devs, b.counters, isHeld, notHeld) {
			n += d.Shares()
		}
		out[name] = n
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// matchesAll reports whether the device matches every selector of the class.
func matchesAll(ctx context.Context, c backingClass, d cel.Device) bool {
	return selectorsMatch(ctx, c.selectors, d)
}

// selectorsMatch reports whether the device matches every CEL selector (compiled once
// per expression). A selector that does not compile or fails to evaluate matches
// nothing, as for the DRA allocator.
func selectorsMatch(ctx context.Context, exprs []string, d cel.Device) bool {
	for _, expr := range exprs {
		res := celCache.GetOrCompile(expr)
		if res.Error != nil {
			klog.V(5).InfoS("DeviceClass selector does not compile", "expression", expr, "err", res.Error)
			return false
		}
		ok, _, err := res.DeviceMatches(ctx, d)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// tainted reports whether a device taint keeps new allocations off the device.
func tainted(taints []resourceapi.DeviceTaint) bool {
	for _, t := range taints {
		if t.Effect == resourceapi.DeviceTaintEffectNoSchedule || t.Effect == resourceapi.DeviceTaintEffectNoExecute {
			return true
		}
	}
	return false
}
