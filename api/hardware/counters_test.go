package hardware

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A node publishing two cards as partitionable devices: a counter slice with one
// set per card (80Gi of memory, 4 compute slices), and per card the whole device
// and two halves drawing on its set.
func partitionedNode(node string) []*resourceapi.ResourceSlice {
	pool := resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 2}
	counters := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", Pool: pool, NodeName: ptr.To(node)}}
	devices := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", Pool: pool, NodeName: ptr.To(node)}}
	use := func(card string, mem string, slices string) []resourceapi.DeviceCounterConsumption {
		return []resourceapi.DeviceCounterConsumption{{CounterSet: card, Counters: map[string]resourceapi.Counter{
			"memory": {Value: resource.MustParse(mem)}, "slices": {Value: resource.MustParse(slices)}}}}
	}
	for _, card := range []string{"card-0", "card-1"} {
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, resourceapi.CounterSet{Name: card, Counters: map[string]resourceapi.Counter{
			"memory": {Value: resource.MustParse("80Gi")}, "slices": {Value: resource.MustParse("4")}}})
		profile := func(p string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
			return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"profile": {StringValue: ptr.To(p)}}
		}
		devices.Spec.Devices = append(devices.Spec.Devices,
			resourceapi.Device{Name: card, Attributes: profile("full"), ConsumesCounters: use(card, "80Gi", "4"),
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}},
			resourceapi.Device{Name: card + "-half-a", Attributes: profile("half"), ConsumesCounters: use(card, "40Gi", "2"),
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("40Gi")}}},
			resourceapi.Device{Name: card + "-half-b", Attributes: profile("half"), ConsumesCounters: use(card, "40Gi", "2"),
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("40Gi")}}})
	}
	return []*resourceapi.ResourceSlice{counters, devices}
}

func class(name, resourceName, expr string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceClassSpec{
		ExtendedResourceName: ptr.To(resourceName),
		Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}
}

func TestExtendedResourcesCountPartitionsThatFitTogether(t *testing.T) {
	slices := partitionedNode("n1")
	// A card published as partitions whose counter set no slice publishes: its
	// pool is incomplete, nothing of it is allocatable.
	orphan := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: "n2"}, NodeName: ptr.To("n2"),
		Devices: []resourceapi.Device{{Name: "card-0", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"profile": {StringValue: ptr.To("full")}},
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "card-0", Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("80Gi")}}}}}}}}
	slices = append(slices, orphan)
	got := ExtendedResources(slices, []*resourceapi.DeviceClass{
		class("any", "example.com/gpu", `device.driver == "gpu.example.com"`),
		class("whole", "example.com/whole-gpu", `device.attributes["gpu.example.com"].profile == "full"`),
		class("half", "example.com/half-gpu", `device.attributes["gpu.example.com"].profile == "half"`),
	}, nil)
	want := map[string]map[corev1.ResourceName]int64{
		// Six devices, but a card gives either itself or its two halves: at most
		// four at once (the halves), two whole cards, four halves.
		"n1": {"example.com/gpu": 4, "example.com/whole-gpu": 2, "example.com/half-gpu": 4},
		"n2": {"example.com/gpu": 0, "example.com/whole-gpu": 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units per node and extended resource (-want +got):\n%s", diff)
	}
}

func TestSimultaneousSpendsWhatTakenDevicesHold(t *testing.T) {
	counters := Counters{}
	var devs []Device
	for _, s := range partitionedNode("n1") {
		CountersOf(s, counters)
		devs = append(devs, DevicesOf(s)...)
	}
	names := func(ds []*Device) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return out
	}
	taken := func(d *Device) bool { return d.Name == "card-0-half-a" || d.Name == "card-1" }
	free := func(d *Device) bool { return !taken(d) }
	// card-0's half-a is allocated: its other half remains, not the whole card;
	// card-1 is allocated whole: none of its halves remain.
	if diff := cmp.Diff([]string{"card-0-half-b"}, names(Simultaneous(devs, counters, taken, free))); diff != "" {
		t.Errorf("allocatable beside the taken devices (-want +got):\n%s", diff)
	}
	full := func(d *Device) bool {
		p := d.Attributes["gpu.example.com/profile"].StringValue
		return p != nil && *p == "full"
	}
	if got := Simultaneous(devs, counters, taken, func(d *Device) bool { return free(d) && full(d) }); len(got) != 0 {
		t.Errorf("whole cards allocatable: %v, want none (each card is partly or wholly taken)", names(got))
	}
	if got := Simultaneous(devs, counters, nil, full); len(got) != 2 {
		t.Errorf("whole cards allocatable on an idle node: %v, want both", names(got))
	}
}

func TestSharesOfADeviceWithConsumableCapacity(t *testing.T) {
	shared := func(policy *resourceapi.CapacityRequestPolicy, caps ...string) *resourceapi.ResourceSlice {
		d := resourceapi.Device{Name: "gpu-0", AllowMultipleAllocations: ptr.To(true), Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}}
		for i := 0; i+1 < len(caps); i += 2 {
			d.Capacity[resourceapi.QualifiedName(caps[i])] = resourceapi.DeviceCapacity{Value: resource.MustParse(caps[i+1]), RequestPolicy: policy}
		}
		return &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("n1"), Devices: []resourceapi.Device{d}}}
	}
	byDefault := func(q string) *resourceapi.CapacityRequestPolicy {
		return &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse(q))}
	}
	for _, tc := range []struct {
		name  string
		slice *resourceapi.ResourceSlice
		want  int64
	}{
		{"80Gi shared by 20Gi defaults", shared(byDefault("20Gi"), "memory", "80Gi"), 4},
		{"the scarcer capacity decides", shared(byDefault("30"), "memory", "100", "cores", "60"), 2},
		{"no default: an allocation takes it all", shared(nil, "memory", "80Gi"), 1},
		{"a default larger than the capacity", shared(byDefault("100Gi"), "memory", "80Gi"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DevicesOf(tc.slice)[0]
			if got := d.Shares(); got != tc.want {
				t.Errorf("shares %d, want %d", got, tc.want)
			}
		})
	}
}

func TestExtendedResourcesReadTheNewestGenerationOfAPool(t *testing.T) {
	slice := func(gen int64, n int) *resourceapi.ResourceSlice {
		s := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("n1"),
			Pool: resourceapi.ResourcePool{Name: "n1", Generation: gen, ResourceSliceCount: 1}}}
		for i := range n {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: "gpu-" + string(rune('a'+i))})
		}
		return s
	}
	// The driver republishes the pool with four devices; the old slice of eight is
	// still there for a moment.
	got := ExtendedResources([]*resourceapi.ResourceSlice{slice(1, 8), slice(2, 4)},
		[]*resourceapi.DeviceClass{class("gpu", "nvidia.com/gpu", `device.driver == "gpu.example.com"`)}, nil)
	if n := got["n1"]["nvidia.com/gpu"]; n != 4 {
		t.Errorf("n1 backs %d GPUs, want 4 (generation 2's devices)", n)
	}
}

// Devices a DeviceTaintRule taints or a pod's own ResourceClaim holds back no
// extended resource; those kube-scheduler's claims for an extended resource hold do
// (their pods' requests are counted on the node already).
func TestExtendedResourcesLeaveOutUnavailableDevices(t *testing.T) {
	plain := func(node string, n int) *resourceapi.ResourceSlice {
		s := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
		for i := range n {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: "gpu-" + string(rune('0'+i))})
		}
		return s
	}
	slices := append([]*resourceapi.ResourceSlice{plain("n1", 8), plain("n2", 8)}, partitionedNode("n3")...)
	classes := []*resourceapi.DeviceClass{class("gpu", "nvidia.com/gpu", `device.driver == "gpu.example.com"`)}
	rule := func(effect resourceapi.DeviceTaintEffect, sel *resourceapi.DeviceTaintSelector) *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: sel,
			Taint: resourceapi.DeviceTaint{Key: "example.com/unhealthy", Effect: effect}}}
	}
	claim := func(extended bool, devices ...DeviceKey) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
		if extended {
			c.Annotations = map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"}
		}
		for _, d := range devices {
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
				resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: d.Driver, Pool: d.Pool, Device: d.Device})
		}
		return c
	}
	dev := func(pool, name string) DeviceKey {
		return DeviceKey{Driver: "gpu.example.com", Pool: pool, Device: name}
	}
	for _, tc := range []struct {
		name   string
		off    *Unavailable
		claims []*resourceapi.ResourceClaim
		want   map[string]int64 // n1, n2, n3
	}{
		{"nothing unavailable", nil, nil, map[string]int64{"n1": 8, "n2": 8, "n3": 4}},
		{"a rule on one device", &Unavailable{Rules: []*resourceapi.DeviceTaintRule{
			rule(resourceapi.DeviceTaintEffectNoSchedule, &resourceapi.DeviceTaintSelector{Driver: ptr.To("gpu.example.com"), Pool: ptr.To("n1"), Device: ptr.To("gpu-3")})}},
			nil, map[string]int64{"n1": 7, "n2": 8, "n3": 4}},
		{"a NoExecute rule on a pool, a None rule everywhere", &Unavailable{Rules: []*resourceapi.DeviceTaintRule{
			rule(resourceapi.DeviceTaintEffectNoExecute, &resourceapi.DeviceTaintSelector{Pool: ptr.To("n2")}),
			rule(resourceapi.DeviceTaintEffectNone, &resourceapi.DeviceTaintSelector{})}},
			nil, map[string]int64{"n1": 8, "n2": 0, "n3": 4}},
		{"a rule of another driver, and one without a selector", &Unavailable{Rules: []*resourceapi.DeviceTaintRule{
			rule(resourceapi.DeviceTaintEffectNoSchedule, &resourceapi.DeviceTaintSelector{Driver: ptr.To("other.example.com")}),
			rule(resourceapi.DeviceTaintEffectNoSchedule, nil)}},
			nil, map[string]int64{"n1": 8, "n2": 8, "n3": 4}},
		{"an empty selector taints every device", &Unavailable{Rules: []*resourceapi.DeviceTaintRule{
			rule(resourceapi.DeviceTaintEffectNoSchedule, &resourceapi.DeviceTaintSelector{})}},
			nil, map[string]int64{"n1": 0, "n2": 0, "n3": 0}},
		{"own claims hold three devices; an extended-resource claim holds two more", nil,
			[]*resourceapi.ResourceClaim{claim(false, dev("n1", "gpu-0"), dev("n1", "gpu-1")), claim(false, dev("n2", "gpu-7")), claim(true, dev("n1", "gpu-2"), dev("n2", "gpu-0"))},
			map[string]int64{"n1": 6, "n2": 7, "n3": 4}},
		{"a half held by an own claim spends its card: its other half and the other card's two halves remain", nil,
			[]*resourceapi.ResourceClaim{claim(false, dev("n3", "card-0-half-a"))},
			map[string]int64{"n1": 8, "n2": 8, "n3": 3}},
		{"a claim not yet allocated holds nothing", nil,
			[]*resourceapi.ResourceClaim{{}},
			map[string]int64{"n1": 8, "n2": 8, "n3": 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			off := tc.off
			if tc.claims != nil {
				off = &Unavailable{Held: HeldByOwnClaims(tc.claims)}
			}
			got := ExtendedResources(slices, classes, off)
			for node, want := range tc.want {
				if n := got[node]["nvidia.com/gpu"]; n != want {
					t.Errorf("%s backs %d GPUs, want %d", node, n, want)
				}
			}
		})
	}
}
