package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/lws"
)

// GangSource is the object whose spec decides the size of a framework pod's gang,
// and the gang's name.
type GangSource struct {
	// GVK is the owner's kind at the version to read it: the version the pod's
	// controller reference names, else the kind's default above.
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	// UID is the owner's UID as the pod's controller reference gives it ("" when the
	// pod has no controller reference to this owner). It is a claim of the pod, to
	// look the owner up in a GangSizeCache, not a verified identity.
	UID types.UID
	// Gang is the name of the PodGroup the pods of this source form (a staged
	// JobSet's later stages form others: GangSize.Gang).
	Gang string
	// Part is the pod's part of the owner where the owner's spec sizes its parts
	// apart: a JobSet pod's replicated job.
	Part string
}

// GangSourceOf finds, from labels and owner references, the object that sizes the
// gang of a pod that profile recognised as a framework pod (its framework's
// Source). ok is false for pods of no framework and for frameworks whose pods
// carry no name of their owner.
//
// JobSet and LeaderWorkerSet pods are controlled by a Job or StatefulSet the owner
// created: their owner is read at the default version, and only a JobSet's pods
// name its UID (the jobset.sigs.k8s.io/jobset-uid label).
func GangSourceOf(pod *corev1.Pod, profile Profile) (GangSource, bool) {
	f := frameworkOf(profile.Framework)
	if f == nil {
		return GangSource{}, false
	}
	ref, ok := f.Source(pod, profile.Framework)
	if !ok || !gang.IsValidName(ref.Name) {
		return GangSource{}, false // labels are untrusted: only a real object name can be an owner
	}
	s := GangSource{GVK: ref.GVK, Namespace: pod.Namespace, Name: ref.Name, UID: ref.UID, Part: ref.Part,
		Gang: frameworks.GangName(ref.Name, string(profile.Framework), ref.Extra...)}
	// A controller reference to this very object (same group, kind and name) says
	// which version its operator serves: training-operator's MPIJob is only
	// kubeflow.org/v1. The version must look like one; anything else is ignored.
	if c := metav1.GetControllerOf(pod); c != nil && c.Kind == s.GVK.Kind && c.Name == s.Name {
		if gv, err := schema.ParseGroupVersion(c.APIVersion); err == nil && gv.Group == s.GVK.Group && len(validation.IsDNS1035Label(gv.Version)) == 0 {
			s.GVK.Version = gv.Version
			if s.UID == "" {
				s.UID = c.UID
			}
		}
	}
	return s, true
}

// LeaderFirstGroupSize is the size of the LeaderWorkerSet group whose pods are
// created leader first — LWS with exclusive placement creates the workers once the
// leader is bound — read from the annotations LWS writes on the group's pods; 0 for
// every other pod. The scheduler plans the leader's gang for the whole group.
func LeaderFirstGroupSize(pod *corev1.Pod) int { return lws.LeaderFirstGroupSize(pod) }

// SubgroupOf names the all-or-nothing part of a larger gang the pod belongs to, and
// its size: a LeaderWorkerSet group (its leader and workers, from the group-index
// label and the size annotation LWS writes on each of them) inside a PodGroup that
// spans several groups, such as a disaggregated serving deployment's prefill and
// decode sets. The scheduler releases such a group's members only together, also
// when the gang is already running (a scale-up adds whole groups). ok is false for
// every other pod, for groups of one, and for leader-first groups (exclusive
// topology: LWS creates the workers only once the leader is bound).
func SubgroupOf(pod *corev1.Pod) (key string, size int, ok bool) { return lws.Subgroup(pod) }

// OwnerReference refers to the source object, for an object that should be deleted
// with it, such as the gang's PodGroup (a JobSet's, rather than one of its Jobs').
// ok is false when the pod named no UID for the source. The UID is the pod's claim,
// as trustworthy as the pod's own owner references: a wrong one has the garbage
// collector delete the dependent.
func (s GangSource) OwnerReference() (metav1.OwnerReference, bool) {
	if s.UID == "" {
		return metav1.OwnerReference{}, false
	}
	return metav1.OwnerReference{APIVersion: s.GVK.GroupVersion().String(), Kind: s.GVK.Kind, Name: s.Name, UID: s.UID}, true
}

// ref is s as its framework reads it.
func (s GangSource) ref() frameworks.Source {
	return frameworks.Source{GVK: s.GVK, Name: s.Name, UID: s.UID, Part: s.Part}
}

// Forms reports whether name is a gang the source's pods are put in: its own, or
// a staged JobSet's later stage.
func (s GangSource) Forms(name string) bool {
	if name == s.Gang {
		return true
	}
	f := ownerOf(s.GVK.GroupKind())
	return f != nil && f.Forms(s.ref(), name)
}
