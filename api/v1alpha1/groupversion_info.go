// Package v1alpha1 holds the KubeNexus API: KubeNexusConfig, PodGroup,
// ResourceReservation and HardwareTier in group scheduling.kubenexus.io, and the
// well-known pod, namespace and node keys that the webhook and the scheduler share.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.kubenexus.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every KubeNexus object.
	GroupVersion = schema.GroupVersion{Group: "scheduling.kubenexus.io", Version: "v1alpha1"}

	// SchemeBuilder registers the KubeNexus types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion} //nolint:staticcheck // kubebuilder's layout: every types file registers itself with it

	// AddToScheme adds the KubeNexus types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
