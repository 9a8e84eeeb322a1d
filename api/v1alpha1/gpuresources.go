package v1alpha1

import corev1 "k8s.io/api/core/v1"

// GPUResources are the extended resources the plugins count as GPUs: gpuResourceName,
// then additionalGPUResources, in order; nvidia.com/gpu when neither is set.
func (r *ResourceFragmentationPlugin) GPUResources() []corev1.ResourceName {
	var names []corev1.ResourceName
	if r.GPUResourceName != "" {
		names = append(names, corev1.ResourceName(r.GPUResourceName))
	}
	for _, name := range r.AdditionalGPUResources {
		names = append(names, corev1.ResourceName(name))
	}
	if len(names) == 0 {
		return []corev1.ResourceName{ResourceNvidiaGPU}
	}
	return names
}

// DefaultGPUDeviceClasses are the DeviceClasses of NVIDIA's DRA driver for GPUs and
// for MIG partitions: gpuDeviceClasses when unset or empty.
var DefaultGPUDeviceClasses = []string{"gpu.nvidia.com", "mig.nvidia.com"}

// DeviceClasses are the DRA DeviceClasses named as GPUs: gpuDeviceClasses, or
// DefaultGPUDeviceClasses when it is unset or empty.
func (r *ResourceFragmentationPlugin) DeviceClasses() []string {
	if len(r.GPUDeviceClasses) == 0 {
		return DefaultGPUDeviceClasses
	}
	return r.GPUDeviceClasses
}
