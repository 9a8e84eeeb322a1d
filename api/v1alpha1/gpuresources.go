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
