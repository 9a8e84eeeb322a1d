package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Labels that name the object a framework pod belongs to.
const (
	labelKubeflowJobName = "training.kubeflow.org/job-name"
	labelRayCluster      = "ray.io/cluster"
	labelLWSGroupIndex   = "leaderworkerset.sigs.k8s.io/group-index"
	// annotationLWSSize is the group size LWS writes on every pod of a group.
	annotationLWSSize = "leaderworkerset.sigs.k8s.io/size"
	labelJobSetUID    = "jobset.sigs.k8s.io/jobset-uid"
)

// Owner kinds whose spec sizes a gang, at the version read when a pod's owner
// reference does not name one. MPIJob has two: mpi-operator serves kubeflow.org/v2beta1,
// Kubeflow's training-operator (v1.x) kubeflow.org/v1; both spec shapes are understood.
var (
	SparkApplication = schema.GroupVersionKind{Group: "sparkoperator.k8s.io", Version: "v1beta2", Kind: "SparkApplication"}
	PyTorchJob       = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}
	TFJob            = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "TFJob"}
	XGBoostJob       = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "XGBoostJob"}
	MPIJob           = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"}
	RayCluster       = schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}
	JobSet           = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	LeaderWorkerSet  = schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}
	BatchJob         = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
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
// gang of a pod that profile recognised as a framework pod. ok is false for pods of
// no framework and for frameworks whose pods carry no name of their owner.
//
// JobSet and LeaderWorkerSet pods are controlled by a Job or StatefulSet the owner
// created: their owner is read at the default version, and only a JobSet's pods
// name its UID (the jobset.sigs.k8s.io/jobset-uid label).
func GangSourceOf(pod *corev1.Pod, profile Profile) (GangSource, bool) {
	l := pod.Labels
	src := func(gvk schema.GroupVersionKind, name string, extra ...string) (GangSource, bool) {
		if !gang.IsValidName(name) {
			return GangSource{}, false // labels are untrusted: only a real object name can be an owner
		}
		s := GangSource{GVK: gvk, Namespace: pod.Namespace, Name: name, Gang: gangName(name, string(profile.Framework), extra...)}
		// A controller reference to this very object (same group, kind and name) says
		// which version its operator serves: training-operator's MPIJob is only
		// kubeflow.org/v1. The version must look like one; anything else is ignored.
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == gvk.Kind && ref.Name == name {
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == gvk.Group && len(validation.IsDNS1035Label(gv.Version)) == 0 {
				s.GVK.Version = gv.Version
				s.UID = ref.UID
			}
		}
		return s, true
	}
	switch profile.Framework {
	case v1alpha1.IntegrationSpark:
		// spark-submit without the operator has no object that knows the executor count.
		return src(SparkApplication, l[labelSparkOperatorApp])
	case v1alpha1.IntegrationPyTorch:
		return src(PyTorchJob, l[labelKubeflowJobName])
	case v1alpha1.IntegrationTensorFlow:
		return src(TFJob, l[labelKubeflowJobName])
	case v1alpha1.IntegrationXGBoost:
		return src(XGBoostJob, l[labelKubeflowJobName])
	case v1alpha1.IntegrationMPI:
		return src(MPIJob, l[labelKubeflowJobName])
	case v1alpha1.IntegrationRay:
		return src(RayCluster, l[labelRayCluster])
	case v1alpha1.IntegrationJobSet:
		s, ok := src(JobSet, l[labelJobSetName])
		s.Part = l[labelJobSetReplicated]
		if uid := l[labelJobSetUID]; ok && uid != "" && len(validation.IsValidLabelValue(uid)) == 0 {
			s.UID = types.UID(uid) // JobSet's controller writes its UID on the pods of its Jobs
		}
		return s, ok
	case v1alpha1.IntegrationLeaderWorkerSet:
		// One gang per replica group: a leader and its workers.
		idx := l[labelLWSGroupIndex]
		if _, err := strconv.ParseUint(idx, 10, 32); err != nil {
			return GangSource{}, false
		}
		return src(LeaderWorkerSet, l[labelLWSName], idx)
	case v1alpha1.IntegrationJob:
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" && ref.APIVersion == "batch/v1" {
			return src(BatchJob, ref.Name)
		}
	}
	return GangSource{}, false
}

// LeaderFirstGroupSize is the size of the LeaderWorkerSet group whose pods are
// created leader first — LWS with exclusive placement creates the workers once the
// leader is bound — read from the annotations LWS writes on the group's pods; 0 for
// every other pod. The scheduler plans the leader's gang for the whole group.
func LeaderFirstGroupSize(pod *corev1.Pod) int {
	a := pod.Annotations
	if pod.Labels[labelLWSName] == "" || a[v1alpha1.AnnotationLWSExclusiveTopology] == "" {
		return 0
	}
	n, err := strconv.Atoi(a[annotationLWSSize])
	if err != nil || n < 1 || n > gang.MaxMinMember {
		return 0
	}
	return n
}

// SubgroupOf names the all-or-nothing part of a larger gang the pod belongs to, and
// its size: a LeaderWorkerSet group (its leader and workers, from the group-index
// label and the size annotation LWS writes on each of them) inside a PodGroup that
// spans several groups, such as a disaggregated serving deployment's prefill and
// decode sets. The scheduler releases such a group's members only together, also
// when the gang is already running (a scale-up adds whole groups). ok is false for
// every other pod, for groups of one, and for leader-first groups (exclusive
// topology: LWS creates the workers only once the leader is bound).
func SubgroupOf(pod *corev1.Pod) (key string, size int, ok bool) {
	l := pod.Labels
	name, idx := l[labelLWSName], l[labelLWSGroupIndex]
	if name == "" || LeaderFirstGroupSize(pod) > 0 {
		return "", 0, false
	}
	if _, err := strconv.ParseUint(idx, 10, 32); err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(pod.Annotations[annotationLWSSize])
	if err != nil || n < 2 || n > gang.MaxMinMember {
		return "", 0, false
	}
	return name + "/" + idx, n, true
}

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

// gangName is "<owner>-<framework>[-<extra>]", shortened with a hash to fit a label
// value (63 characters). owner is a DNS-1123 subdomain, so the result is one too.
func gangName(owner, framework string, extra ...string) string {
	name := owner + "-" + framework
	for _, e := range extra {
		name += "-" + e
	}
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:50], "-.") + "-" + hex.EncodeToString(sum[:])[:12]
}

// stageGang is the gang of stage k (k ≥ 1) of a staged JobSet.
func (s GangSource) stageGang(k int) string {
	return gangName(s.Name, string(v1alpha1.IntegrationJobSet), "stage"+strconv.Itoa(k))
}

// Forms reports whether name is a gang the source's pods are put in: its own, or
// a staged JobSet's later stage.
func (s GangSource) Forms(name string) bool {
	if name == s.Gang {
		return true
	}
	if s.GVK.GroupKind() != JobSet.GroupKind() {
		return false
	}
	for k := 1; k < maxJobSetStages; k++ {
		if s.stageGang(k) == name {
			return true
		}
	}
	return false
}
