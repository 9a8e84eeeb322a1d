package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceReservationSpec holds capacity for an owner: pods of other owners cannot
// take it, and the owner's pods consume it.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.nodeName) || (has(self.nodeName) && self.nodeName == oldSelf.nodeName)",message="spec.nodeName is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(self.nodeSelector) || !has(self.nodeName)",message="spec.nodeSelector: only for reservations without spec.nodeName"
// +kubebuilder:validation:XValidation:rule="has(self.nodeSelector) == has(oldSelf.nodeSelector) && (!has(self.nodeSelector) || self.nodeSelector == oldSelf.nodeSelector)",message="spec.nodeSelector is immutable"
type ResourceReservationSpec struct {
	// owner is the PodGroup or the pod (for example a Spark driver) in the same
	// namespace whose pods may use the reserved capacity. The reservation is released
	// when the owner is deleted. Immutable.
	// +required
	Owner ReservationOwner `json:"owner"`

	// nodeName pins the reservation to one node. Unset means the scheduler places it
	// on any node that fits. Immutable once set.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// nodeSelector keeps a reservation without nodeName to the nodes with these
	// labels: the scheduler places it, or accumulates its room, only there (a
	// repairing gang's room is held in its rack this way). Not allowed with nodeName.
	// Immutable.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && size(self[k]) <= 63)",message="spec.nodeSelector: label keys are at most 317 characters (prefix/name), values at most 63"
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// resources is the capacity of one slot, for example {cpu: 4, memory: 16Gi,
	// nvidia.com/gpu: 1}. Every quantity must be greater than zero.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=12
	// +kubebuilder:validation:XValidation:rule="self.all(r, quantity(string(self[r])).isGreaterThan(quantity('0')))",message="spec.resources: every quantity must be greater than zero"
	// +required
	Resources corev1.ResourceList `json:"resources"`

	// slots is how many slots of resources are held (one per member pod of a gang).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=1
	// +optional
	Slots int32 `json:"slots,omitempty"`

	// ttlSeconds is how long after creation the reservation expires if the owner has
	// not consumed it. The capacity is then released.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=604800
	// +kubebuilder:default=600
	// +optional
	TTLSeconds int32 `json:"ttlSeconds,omitempty"`
}

// ReservationOwner names the owner of a reservation.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.owner is immutable"
type ReservationOwner struct {
	// kind is PodGroup or Pod.
	// +kubebuilder:validation:Enum=PodGroup;Pod
	// +required
	Kind ReservationOwnerKind `json:"kind"`

	// name is the owner's name in the reservation's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`

	// uid, when set, binds the reservation to one incarnation of the owner: an owner
	// recreated under the same name does not inherit it. Unset, the reservation is
	// bound to the first incarnation the controller sees (status.ownerUID).
	// +kubebuilder:validation:MaxLength=36
	// +optional
	UID string `json:"uid,omitempty"`
}

// ReservationOwnerKind is the kind of a reservation's owner.
type ReservationOwnerKind string

const (
	ReservationOwnerPodGroup ReservationOwnerKind = "PodGroup"
	ReservationOwnerPod      ReservationOwnerKind = "Pod"
)

// ReservationPhase is the lifecycle phase of a reservation.
// +kubebuilder:validation:Enum=Pending;Reserved;Consumed;Expired;Released
type ReservationPhase string

const (
	// ReservationPending: not yet placed on a node.
	ReservationPending ReservationPhase = "Pending"
	// ReservationReserved: capacity is held on status.nodeName.
	ReservationReserved ReservationPhase = "Reserved"
	// ReservationConsumed: the owner's pods took the capacity.
	ReservationConsumed ReservationPhase = "Consumed"
	// ReservationExpired: the TTL passed before the owner consumed it.
	ReservationExpired ReservationPhase = "Expired"
	// ReservationReleased: the owner went away, or the reservation was released.
	ReservationReleased ReservationPhase = "Released"
)

// ResourceReservationStatus is the observed state of a reservation.
type ResourceReservationStatus struct {
	// phase is the lifecycle phase of the reservation.
	// +optional
	Phase ReservationPhase `json:"phase,omitempty"`

	// nodeName is the node the capacity is held on.
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// consumedSlots is how many slots the owner's pods have taken.
	// +optional
	ConsumedSlots int32 `json:"consumedSlots,omitempty"`

	// expireTime is when the reservation expires (creation time + ttlSeconds).
	// +optional
	ExpireTime *metav1.Time `json:"expireTime,omitempty"`

	// ownerUID is the UID of the owner object the reservation was first seen with.
	// A later object of the same name with another UID is a replacement, and the
	// owner's absence after it was seen is a deletion: both release the capacity.
	// Unset while the owner does not exist yet; the reservation is then held for it
	// until expireTime.
	// +kubebuilder:validation:MaxLength=36
	// +optional
	OwnerUID string `json:"ownerUID,omitempty"`

	// observedGeneration is the spec generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions report why the reservation is in its phase.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceReservation holds node capacity for a PodGroup or a pod for a bounded time.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName={knrr},categories={kubenexus}
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner.name`
// +kubebuilder:printcolumn:name="Slots",type=integer,JSONPath=`.spec.slots`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Expires",type=date,JSONPath=`.status.expireTime`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceReservation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the capacity to hold and for whom.
	// +required
	Spec ResourceReservationSpec `json:"spec"`
	// status is the reservation's observed state.
	// +optional
	Status ResourceReservationStatus `json:"status,omitempty"`
}

// ResourceReservationList is a list of ResourceReservations.
//
// +kubebuilder:object:root=true
type ResourceReservationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceReservation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceReservation{}, &ResourceReservationList{})
}

// Unconsumed is how many of the reservation's slots its owner's pods have not taken
// yet, as its status last counted them (a reservation holds at least one slot).
func (r *ResourceReservation) Unconsumed() int32 {
	return max(r.Spec.Slots, 1) - r.Status.ConsumedSlots
}
