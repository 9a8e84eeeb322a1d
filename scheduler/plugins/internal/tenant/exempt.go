package tenant

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
)

// daemonSetExemption decides whether a pod is exempt from tier rules as a
// DaemonSet's pod. A DaemonSet runs one pod on every node its selector picks, node
// agents among them, and a tier that refused them would leave premium nodes without
// their agents. The exemption is worth a premium node to whoever can claim it, so it
// is granted only on facts a tenant cannot forge:
//   - the pod's controller reference names an apps/v1 DaemonSet that exists in the
//     scheduler's informer cache with the same UID (an ownerReference alone is
//     whatever the pod's author wrote);
//   - the pod asks for no device: no extended resource (nvidia.com/gpu and the like)
//     and no DRA ResourceClaim. A tenant who may create DaemonSets could otherwise
//     put a GPU job on every premium node; device-hungry DaemonSet pods are held to
//     their namespace's tier like any other pod.
type daemonSetExemption struct {
	daemonSets appslisters.DaemonSetLister
}

func (d daemonSetExemption) exempt(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "DaemonSet" || ref.APIVersion != "apps/v1" || d.daemonSets == nil {
		return false
	}
	if RequestsDevices(pod) {
		return false
	}
	ds, err := d.daemonSets.DaemonSets(pod.Namespace).Get(ref.Name)
	return err == nil && ds.UID == ref.UID
}

// RequestsDevices reports whether the pod asks for an extended resource in any
// container (requests or limits) or for a DRA ResourceClaim.
func RequestsDevices(pod *corev1.Pod) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return true
	}
	extended := func(cs []corev1.Container) bool {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if v1helper.IsExtendedResourceName(name) {
					return true
				}
			}
			for name := range cs[i].Resources.Limits {
				if v1helper.IsExtendedResourceName(name) {
					return true
				}
			}
		}
		return false
	}
	return extended(pod.Spec.InitContainers) || extended(pod.Spec.Containers)
}
