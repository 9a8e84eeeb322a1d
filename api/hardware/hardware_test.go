package hardware

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func slice(node, memory, product string) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.nvidia.com", Pool: resourceapi.ResourcePool{Name: node}, NodeName: ptr.To(node),
		Devices: []resourceapi.Device{{
			Name:       "gpu-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"productName": {StringValue: ptr.To(product)}, "cudaComputeCapability": {VersionValue: ptr.To("9.0.0")}},
			Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}},
		}},
	}}
}

func TestDeviceSelectors(t *testing.T) {
	big := v1alpha1.HardwareTierSpec{DeviceSelectors: []v1alpha1.DeviceSelector{{
		Driver:   "gpu.nvidia.com",
		Capacity: []v1alpha1.DeviceCapacityRequirement{{Name: "memory", Min: resource.MustParse("80Gi")}},
	}}}
	h100 := v1alpha1.HardwareTierSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}},
		DeviceSelectors: []v1alpha1.DeviceSelector{{Attributes: []v1alpha1.DeviceAttributeRequirement{
			{Name: "gpu.nvidia.com/productName", Values: []string{"NVIDIA H100 80GB HBM3", "NVIDIA H200"}},
		}}},
	}
	onH100, onL40S := DevicesOf(slice("a", "80Gi", "NVIDIA H100 80GB HBM3")), DevicesOf(slice("b", "48Gi", "NVIDIA L40S"))
	for _, tc := range []struct {
		name   string
		spec   v1alpha1.HardwareTierSpec
		labels map[string]string
		devs   []Device
		want   bool
	}{
		{"memory >= 80Gi on an 80Gi device", big, nil, onH100, true},
		{"memory >= 80Gi on a 48Gi device", big, nil, onL40S, false},
		{"no devices", big, nil, nil, false},
		{"product and zone", h100, map[string]string{"zone": "a"}, onH100, true},
		{"product in another zone", h100, map[string]string{"zone": "b"}, onH100, false},
		{"other product", h100, map[string]string{"zone": "a"}, onL40S, false},
	} {
		sel, err := NewSelector(&tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := sel.Matches(tc.labels, tc.devs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := NewSelector(&v1alpha1.HardwareTierSpec{}); err == nil {
		t.Error("an empty tier selects every node and must be refused")
	}
	// Unqualified names find the attribute in the driver's domain.
	if a, ok := onH100[0].AttributeNamed("cudaComputeCapability"); !ok || attributeString(a) != "9.0.0" {
		t.Errorf("cudaComputeCapability %v %v", a, ok)
	}
}
