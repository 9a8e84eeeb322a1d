package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HardwareTierSpec describes a class of nodes (for example premium H100 nodes) and
// which tenant tiers may use it.
// +kubebuilder:validation:XValidation:rule="(has(self.deviceSelectors) && size(self.deviceSelectors) > 0) || (has(self.nodeSelector) && ((has(self.nodeSelector.matchLabels) && size(self.nodeSelector.matchLabels) > 0) || (has(self.nodeSelector.matchExpressions) && size(self.nodeSelector.matchExpressions) > 0)))",message="spec.nodeSelector must have at least one matchLabels entry or matchExpressions term, or spec.deviceSelectors must be set; an empty selector would select every node"
type HardwareTierSpec struct {
	// rank orders tiers: a higher rank is more premium. Gold tenants prefer the
	// highest rank they are allowed; bronze tenants avoid high ranks.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +required
	Rank int32 `json:"rank"`

	// nodeSelector selects the nodes of this tier by their labels. It may be empty
	// only when deviceSelectors is set.
	// +optional
	NodeSelector metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// deviceSelectors select the nodes of this tier by the DRA devices their
	// ResourceSlices publish (for example a product name, or at least 80Gi of
	// memory): a node is in the tier when one of its devices matches one of the
	// selectors. With a nodeSelector too, a node must match both.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	DeviceSelectors []DeviceSelector `json:"deviceSelectors,omitempty"`

	// gpuModels lists the GPU products of this tier as GPU Feature Discovery reports
	// them in nvidia.com/gpu.product (for example NVIDIA-H100-80GB-HBM3).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	GPUModels []string `json:"gpuModels,omitempty"`

	// costFactor is the relative cost of this tier's capacity (1 = baseline,
	// 2.5 = two and a half times as expensive). Must be greater than zero.
	// +kubebuilder:default="1"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.costFactor must be greater than zero"
	// +optional
	CostFactor *resource.Quantity `json:"costFactor,omitempty"`

	// allowedTenantTiers are the tenant tiers (gold, silver, bronze) that may place
	// pods on this tier's nodes.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +listType=set
	// +required
	AllowedTenantTiers []TenantTier `json:"allowedTenantTiers"`

	// allowedClusterQueues, when set, further limits the tier to workloads admitted
	// through these Kueue ClusterQueues.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	AllowedClusterQueues []string `json:"allowedClusterQueues,omitempty"`

	// borrowing says whether tenant tiers not in allowedTenantTiers may use idle
	// capacity of this tier: Never, or Preemptible (their pods are marked
	// preemptible and are evicted when an allowed tenant needs the room).
	// +kubebuilder:validation:Enum=Never;Preemptible
	// +kubebuilder:default=Never
	// +optional
	Borrowing BorrowingPolicy `json:"borrowing,omitempty"`
}

// DeviceSelector matches DRA devices; every field that is set must match.
// +kubebuilder:validation:XValidation:rule="has(self.driver) || has(self.attributes) || has(self.capacity)",message="a device selector needs a driver, attributes or capacity; an empty one would match every device"
type DeviceSelector struct {
	// driver is the DRA driver that publishes the devices (for example
	// gpu.nvidia.com).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Driver string `json:"driver,omitempty"`

	// attributes the device must have, each with one of the listed values (compared
	// as text: strings, integers, booleans and versions).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	Attributes []DeviceAttributeRequirement `json:"attributes,omitempty"`

	// capacity the device must have at least (for example memory of 80Gi).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	Capacity []DeviceCapacityRequirement `json:"capacity,omitempty"`
}

// DeviceAttributeRequirement asks for a device attribute with one of some values.
type DeviceAttributeRequirement struct {
	// name of the attribute, qualified by its domain (gpu.nvidia.com/productName) or
	// not (productName, in any driver's domain).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	Name string `json:"name"`

	// values the attribute may have.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=set
	// +required
	Values []string `json:"values"`
}

// DeviceCapacityRequirement asks for at least some amount of a device capacity.
type DeviceCapacityRequirement struct {
	// name of the capacity, qualified by its domain (gpu.nvidia.com/memory) or not
	// (memory, in any driver's domain).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	Name string `json:"name"`

	// min is the least the device must have.
	// +required
	Min resource.Quantity `json:"min"`
}

// BorrowingPolicy says whether other tenant tiers may borrow a hardware tier.
type BorrowingPolicy string

const (
	BorrowingNever       BorrowingPolicy = "Never"
	BorrowingPreemptible BorrowingPolicy = "Preemptible"
)

// HardwareTier condition types.
const (
	// HardwareTierConditionOverlap is True when this tier's selector matches nodes
	// that another tier also selects.
	HardwareTierConditionOverlap = "Overlapping"
)

// HardwareTierStatus is the observed state of a hardware tier.
type HardwareTierStatus struct {
	// nodes is the number of nodes the selector matches.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`

	// gpuCapacity is the allocatable nvidia.com/gpu of those nodes: from a device
	// plugin, or the DRA devices a DeviceClass maps to nvidia.com/gpu, without
	// those a DeviceTaintRule taints or pods' own ResourceClaims hold.
	// +optional
	GPUCapacity int64 `json:"gpuCapacity,omitempty"`

	// gpuAllocated is the nvidia.com/gpu requested by pods bound to those nodes.
	// +optional
	GPUAllocated int64 `json:"gpuAllocated,omitempty"`

	// largestPlaceableGangs are, for members of 1, 2, 4 and 8 GPUs and for each
	// topology level of the KubeNexusConfig (and anywhere in the tier), the largest
	// gang whose members fit the tier's free nvidia.com/gpu now, counting each
	// node's free GPUs, and the domain that holds it.
	// +listType=atomic
	// +optional
	LargestPlaceableGangs []PlaceableGang `json:"largestPlaceableGangs,omitempty"`

	// observedGeneration is the spec generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions report problems such as selectors that overlap another tier.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PlaceableGang is the largest gang of members of one size that fits in one domain
// of a topology level.
type PlaceableGang struct {
	// gpusPerMember is the members' size.
	GPUsPerMember int32 `json:"gpusPerMember"`
	// level is the topology level's name, or "any" for anywhere in the tier.
	Level string `json:"level"`
	// members is how many members of that size fit in the best domain.
	Members int32 `json:"members"`
	// domain is the best domain (the level's label value, or a node's name where it
	// has no label); empty for "any".
	// +optional
	Domain string `json:"domain,omitempty"`
}

// HardwareTier is a named class of nodes with a rank, a cost and an access policy
// for tenant tiers.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={hwt},categories={kubenexus}
// +kubebuilder:printcolumn:name="Rank",type=integer,JSONPath=`.spec.rank`
// +kubebuilder:printcolumn:name="Tenants",type=string,JSONPath=`.spec.allowedTenantTiers`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.status.gpuCapacity`
// +kubebuilder:printcolumn:name="GPUsAllocated",type=integer,JSONPath=`.status.gpuAllocated`
// +kubebuilder:printcolumn:name="Borrowing",type=string,JSONPath=`.spec.borrowing`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HardwareTier struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the tier.
	// +required
	Spec HardwareTierSpec `json:"spec"`
	// status is the tier's observed state.
	// +optional
	Status HardwareTierStatus `json:"status,omitempty"`
}

// HardwareTierList is a list of HardwareTiers.
//
// +kubebuilder:object:root=true
type HardwareTierList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HardwareTier `json:"items"`
}

func init() {
	SchemeBuilder.Register(&HardwareTier{}, &HardwareTierList{})
}
