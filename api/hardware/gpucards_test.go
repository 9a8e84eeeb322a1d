package hardware

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
