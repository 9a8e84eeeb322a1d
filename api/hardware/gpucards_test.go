package hardware

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Whole GPUs a claim asks for: requests of a GPU class without a capacity request
// (count, default 1), the first alternative of a prioritized list; not a share,
// not another class, not all devices.
func TestWholeGPUs(t *testing.T) {
	classes := map[string][]string{"gpu.nvidia.com": nil}
	share := &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("20Gi")}}
	spec := &resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		{Name: "two", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: 2}},
		{Name: "one", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com"}},
		{Name: "share", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Capacity: share}},
		{Name: "nic", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "nic.example.com", Count: 4}},
		{Name: "all", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeAll}},
		{Name: "either", FirstAvailable: []resourceapi.DeviceSubRequest{{Name: "big", DeviceClassName: "gpu.nvidia.com", Count: 4}, {Name: "small", DeviceClassName: "gpu.nvidia.com", Count: 1}}},
	}}
	if got := WholeGPUs(spec, classes); got != 2+1+4 {
		t.Errorf("WholeGPUs = %d, want 7", got)
	}
}

// Evicting the pods a claim is reserved for frees its cards; a claim another pod
// also uses stays allocated.
func TestGPUCardsWithout(t *testing.T) {
	devs := []Device{{Driver: "gpu.nvidia.com", Pool: "n", Name: "gpu-0"}, {Driver: "gpu.nvidia.com", Pool: "n", Name: "gpu-1"}}
	claim := func(device string, pods ...types.UID) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Driver: "gpu.nvidia.com", Pool: "n", Device: device}}}}}}
		for _, p := range pods {
			c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: string(p), UID: p})
		}
		return c
	}
	claims := []*resourceapi.ResourceClaim{claim("gpu-0", "a"), claim("gpu-1", "b", "c")}
	g := NewGPUCards(map[string][]Device{"n": devs}, map[string][]bool{"n": {true, true}}, nil, claims)
	if got := g.Of("n").FreeCards(); got != 0 {
		t.Fatalf("free cards = %d, want 0", got)
	}
	for _, tc := range []struct {
		gone []types.UID
		want int64
	}{{[]types.UID{"a"}, 1}, {[]types.UID{"b"}, 0}, {[]types.UID{"a", "b", "c"}, 2}, {nil, 0}} {
		if got := g.Without(sets.New(tc.gone...))("n").FreeCards(); got != tc.want {
			t.Errorf("without %v: free cards = %d, want %d", tc.gone, got, tc.want)
		}
	}
	if (*GPUCards)(nil).Of("n") != nil || (*GPUCards)(nil).Without(sets.New[types.UID]("a"))("n") != nil {
		t.Errorf("no GPU classes: want no cards")
	}
}
