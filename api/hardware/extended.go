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
// own, as many as can be allocated at once (partitionable devices) and as often as
// each can be shared (consumable capacity). Not counted: taints a DeviceTaintRule
// puts on devices, and slices shared by several nodes.

// ExtendedResources returns, per node, how many devices back each extended
// resource a DeviceClass names.
func ExtendedResources(slices []*resourceapi.ResourceSlice, classes []*resourceapi.DeviceClass) map[string]map[corev1.ResourceName]int64 {
	return extendedOf(slices, backingClasses(classes))
}

// ListExtended reads every ResourceSlice and DeviceClass through c and returns
// ExtendedResources per node. A cluster that does not serve resource.k8s.io/v1 has none.
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
	sp := make([]*resourceapi.ResourceSlice, len(slices.Items))
	for i := range slices.Items {
		sp[i] = &slices.Items[i]
	}
	cp := make([]*resourceapi.DeviceClass, len(classes.Items))
	for i := range classes.Items {
		cp[i] = &classes.Items[i]
	}
	byNode := ExtendedResources(sp, cp)
	return func(node string) map[corev1.ResourceName]int64 { return byNode[node] }, nil
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
// back: the devices that match a class (the first class naming the resource), as
// many as can be allocated at once (Simultaneous: partitions of one card share its
// counters), each as many times as it can be shared (Device.Shares).
func extendedOf(slices []*resourceapi.ResourceSlice, classes []backingClass) map[string]map[corev1.ResourceName]int64 {
	out := map[string]map[corev1.ResourceName]int64{}
	if len(classes) == 0 {
		return out
	}
	slices = CurrentSlices(slices)
	counters := Counters{}
	for _, s := range slices {
		CountersOf(s, counters)
	}
	backing := map[string]map[corev1.ResourceName][]Device{}
	ctx := context.Background()
	for _, s := range slices {
		if s.Spec.NodeName == nil || *s.Spec.NodeName == "" || len(s.Spec.Devices) == 0 {
			continue
		}
		node := *s.Spec.NodeName
		devs := DevicesOf(s)
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if tainted(d.Taints) {
				continue
			}
			in := cel.Device{Driver: s.Spec.Driver, AllowMultipleAllocations: d.AllowMultipleAllocations, Attributes: d.Attributes, Capacity: d.Capacity}
			counted := map[corev1.ResourceName]bool{}
			for _, c := range classes {
				if counted[c.resource] || !matchesAll(ctx, c, in) {
					continue
				}
				counted[c.resource] = true
				if backing[node] == nil {
					backing[node] = map[corev1.ResourceName][]Device{}
				}
				backing[node][c.resource] = append(backing[node][c.resource], devs[i])
			}
		}
	}
	all := func(*Device) bool { return true }
	for node, byResource := range backing {
		out[node] = make(map[corev1.ResourceName]int64, len(byResource))
		for name, devs := range byResource {
			var n int64
			for _, d := range Simultaneous(devs, counters, nil, all) {
				n += d.Shares()
			}
			out[node][name] = n
		}
	}
	return out
}

// matchesAll reports whether the device matches every selector of the class. A
// selector that does not compile or fails to evaluate matches nothing, as for the
// DRA allocator.
func matchesAll(ctx context.Context, c backingClass, d cel.Device) bool {
	for _, expr := range c.selectors {
		res := celCache.GetOrCompile(expr)
		if res.Error != nil {
			klog.V(5).InfoS("DeviceClass selector does not compile", "deviceClass", c.name, "err", res.Error)
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
