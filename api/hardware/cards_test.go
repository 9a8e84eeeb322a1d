package hardware

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// allocated is an Allocation from device names.
type allocated struct {
	whole    map[string]bool
	consumed map[string]map[string]int64
}

func (a allocated) Allocated(d *Device) bool            { return a.whole[d.Name] }
func (a allocated) Consumed(d *Device) map[string]int64 { return a.consumed[d.Name] }

func devicesOf(slices []*resourceapi.ResourceSlice) ([]Device, Counters) {
	var devs []Device
	counters := Counters{}
	for _, s := range slices {
		CountersOf(s, counters)
		devs = append(devs, DevicesOf(s)...)
	}
	return devs, counters
}

func all(devs []Device) []bool {
	out := make([]bool, len(devs))
	for i := range out {
		out[i] = true
	}
	return out
}

// everything matches every device.
func everything(int) bool { return true }

func frees(g *GPUs) []int64 {
	out := make([]int64, len(g.Cards))
	for i := range g.Cards {
		out[i] = g.Cards[i].Free()
	}
	return out
}

func TestPartitionsTakeTheSplitCardsCountersFirstFit(t *testing.T) {
	devs, counters := devicesOf(partitionedNode("n1"))
	// card-0's half-a is allocated: card-0 has half its counters left.
	g := NewGPUs(devs, all(devs), counters, allocated{whole: map[string]bool{"card-0-half-a": true}})
	if got := frees(g); len(got) != 2 || got[0] != 500 || got[1] != 1000 {
		t.Fatalf("card frees = %v, want [500 1000]", got)
	}
	half := GPURequest{Selectors: []string{`device.attributes["gpu.example.com"].profile == "half"`}, Count: 1}
	after := g.Clone()
	if !after.Take(half, after.Matcher(context.Background(), half.Selectors)) {
		t.Fatal("a half should fit")
	}
	// The allocator's first fit: card-0's half-b, in the node's device order.
	if got := frees(after); got[0] != 0 || got[1] != 1000 {
		t.Fatalf("after a half: card frees = %v, want [0 1000]", got)
	}
	if got := frees(g); got[0] != 500 {
		t.Fatalf("Take changed the original: %v", got)
	}
	whole := GPURequest{Selectors: []string{`device.attributes["gpu.example.com"].profile == "full"`}, Count: 2}
	if after.Take(whole, after.Matcher(context.Background(), whole.Selectors)) {
		t.Fatal("two whole cards should not fit beside a split one")
	}
	if s, ok := g.Reference(half, g.Matcher(context.Background(), half.Selectors)); !ok || s != 500 {
		t.Fatalf("a half's share = %d, %v; want 500", s, ok)
	}
}

func TestSharedDeviceConsumesRoundedCapacity(t *testing.T) {
	slice := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: "n1"}, NodeName: ptr.To("n1"),
		Devices: []resourceapi.Device{{Name: "gpu-0", AllowMultipleAllocations: ptr.To(true), Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: resource.MustParse("80Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default: ptr.To(resource.MustParse("10Gi")), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("10Gi")), Step: ptr.To(resource.MustParse("10Gi"))}}},
		}}}}}
	devs, counters := devicesOf([]*resourceapi.ResourceSlice{slice})
	gi := func(n int64) int64 { return n << 30 * 1000 }
	g := NewGPUs(devs, all(devs), counters, allocated{consumed: map[string]map[string]int64{"gpu-0": {"gpu.example.com/memory": gi(40)}}})
	if got := frees(g); got[0] != 500 {
		t.Fatalf("free = %v, want [500]", got)
	}
	ask := func(q string) GPURequest {
		return GPURequest{Count: 1, Capacity: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(q)}}
	}
	// 15Gi rounds up to 20Gi: 40 + 20 of 80.
	after := g.Clone()
	if !after.Take(ask("15Gi"), everything) || frees(after)[0] != 250 {
		t.Fatalf("after 15Gi: %v, want [250]", frees(after))
	}
	// 35Gi rounds up to 40Gi: fits exactly; 41Gi rounds to 50Gi and does not.
	if !g.Clone().Take(ask("35Gi"), everything) {
		t.Fatal("35Gi should fit the 40Gi left")
	}
	if g.Clone().Take(ask("41Gi"), everything) {
		t.Fatal("41Gi (50Gi with the step) should not fit the 40Gi left")
	}
	// No amount: the policy's default.
	if s, ok := g.Reference(GPURequest{Count: 1}, everything); !ok || s != 125 {
		t.Fatalf("default share = %d, %v; want 125", s, ok)
	}
	// A capacity the device does not publish.
	if g.Clone().Take(GPURequest{Count: 1, Capacity: map[resourceapi.QualifiedName]resource.Quantity{"cores": resource.MustParse("1")}}, everything) {
		t.Fatal("a request for a capacity the device lacks should not fit")
	}
}

func TestCanHoldIsTheAllocatorsNecessaryCondition(t *testing.T) {
	devs, counters := devicesOf(partitionedNode("n1"))
	half := GPURequest{Selectors: []string{`device.attributes["gpu.example.com"].profile == "half"`}, Count: 1}
	full := GPURequest{Selectors: []string{`device.attributes["gpu.example.com"].profile == "full"`}, Count: 1}
	matcher := func(g *GPUs, r GPURequest) func(int) bool { return g.Matcher(context.Background(), r.Selectors) }

	// card-0 split in half (half-a taken), card-1 whole.
	g := NewGPUs(devs, all(devs), counters, allocated{whole: map[string]bool{"card-0-half-a": true}})
	before := frees(g)
	for _, tc := range []struct {
		name string
		req  GPURequest
		want bool
	}{
		{"a half: card-0's other half, or one of card-1", half, true},
		{"one whole card: card-1", full, true},
		{"two whole cards: card-0 is split", GPURequest{Selectors: full.Selectors, Count: 2}, false},
		{"three halves: card-0's half-b and card-1's two", GPURequest{Selectors: half.Selectors, Count: 3}, true},
		{"four halves: half-a is taken", GPURequest{Selectors: half.Selectors, Count: 4}, false},
	} {
		if got := g.CanHold(tc.req, matcher(g, tc.req)); got != tc.want {
			t.Errorf("%s: CanHold = %v, want %v", tc.name, got, tc.want)
		}
		// Where Take's first fit finds the devices, CanHold must say so.
		if g.Clone().Take(tc.req, matcher(g, tc.req)) && !tc.want {
			t.Errorf("%s: Take fits where CanHold refuses", tc.name)
		}
	}
	if got := frees(g); got[0] != before[0] || got[1] != before[1] {
		t.Errorf("CanHold changed the cards: %v, was %v", got, before)
	}

	// Every card taken: nothing holds even one half.
	taken := NewGPUs(devs, all(devs), counters, allocated{whole: map[string]bool{"card-0": true, "card-1": true}})
	if taken.CanHold(half, matcher(taken, half)) {
		t.Error("a half on a node whose cards are all allocated whole")
	}
}

// A node's GPU capacity: its allocatable's GPU resources first (every name that
// counts as a GPU), then the resources DRA devices back, then its cards.
func TestNodeGPUs(t *testing.T) {
	slice := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: "n1"}, NodeName: ptr.To("n1"),
		Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}}
	devs, counters := devicesOf([]*resourceapi.ResourceSlice{slice})
	cards := NewGPUs(devs, all(devs), counters, allocated{whole: map[string]bool{"gpu-1": true}})
	resources := []corev1.ResourceName{"nvidia.com/gpu", "amd.com/gpu"}
	for name, tc := range map[string]struct {
		allocatable corev1.ResourceList
		extended    map[corev1.ResourceName]int64
		cards       *GPUs
		capacity    int64
		fromCards   bool
	}{
		"a device plugin's GPUs of two vendors": {allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), "amd.com/gpu": resource.MustParse("2")}, cards: cards, capacity: 6},
		"GPUs DRA devices back":                 {extended: map[corev1.ResourceName]int64{"amd.com/gpu": 8}, cards: cards, capacity: 8},
		"cards only":                            {cards: cards, capacity: 2, fromCards: true},
		"another resource is no GPU":            {allocatable: corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}},
	} {
		capacity, fromCards := NodeGPUs(tc.allocatable, tc.extended, tc.cards, resources)
		if capacity != tc.capacity || fromCards != tc.fromCards {
			t.Errorf("%s: %d GPUs (from cards %v), want %d (%v)", name, capacity, fromCards, tc.capacity, tc.fromCards)
		}
	}
	if got := cards.FreeCards(); got != 1 {
		t.Errorf("free cards %d, want 1 (gpu-1 allocated)", got)
	}
}
