package hardware

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestExtendedOfCountsTheDevicesAClassBacksAResourceWith(t *testing.T) {
	slice := func(node, driver string, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(node), Devices: devices}}
	}
	gpu := func(name, product string) resourceapi.Device {
		return resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"productName": {StringValue: ptr.To(product)}}}
	}
	tainted := gpu("gpu-3", "H100")
	tainted.Taints = []resourceapi.DeviceTaint{{Key: "example.com/unhealthy", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	soft := gpu("gpu-4", "H100")
	soft.Taints = []resourceapi.DeviceTaint{{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNone}}
	slices := []*resourceapi.ResourceSlice{
		slice("n1", "gpu.nvidia.com", gpu("gpu-0", "H100"), gpu("gpu-1", "H100"), gpu("gpu-2", "A100"), tainted, soft),
		slice("n2", "nic.example.com", gpu("nic-0", "")),
		{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", AllNodes: ptr.To(true), Devices: []resourceapi.Device{gpu("shared", "H100")}}},
	}
	classes := backingClasses([]*resourceapi.DeviceClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: resourceapi.DeviceClassSpec{
			ExtendedResourceName: ptr.To("nvidia.com/gpu"),
			Selectors: []resourceapi.DeviceSelector{
				{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`}},
				{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].productName == "H100"`}},
			}}},
		// No extendedResourceName: the implicit deviceclass.resource.kubernetes.io/<name>.
		{ObjectMeta: metav1.ObjectMeta{Name: "nics"}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "nic.example.com"`}}}}},
		// A selector that does not compile matches nothing.
		{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: resourceapi.DeviceClassSpec{
			ExtendedResourceName: ptr.To("example.com/broken"),
			Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.nosuchfield ==`}}}}},
	})
	want := map[string]map[corev1.ResourceName]int64{
		// gpu-0, gpu-1 and gpu-4 (a None taint keeps nothing off); not the A100, not the NoSchedule-tainted one.
		"n1": {"nvidia.com/gpu": 3},
		"n2": {"deviceclass.resource.kubernetes.io/nics": 1},
	}
	if diff := cmp.Diff(want, extendedOf(slices, classes, &Unavailable{})); diff != "" {
		t.Errorf("devices per node and extended resource (-want +got):\n%s", diff)
	}
}
