// Package lws is KubeNexus's knowledge of LeaderWorkerSet
// (leaderworkerset.x-k8s.io): each replica is a group of a leader and its workers,
// created by StatefulSets (a worker's by one its group's leader pod controls). A
// group is a gang; inside a PodGroup that spans several groups (a disaggregated
// serving deployment's prefill and decode sets) each group is an all-or-nothing
// part. With exclusive placement LWS creates a group's workers only once its
// leader is bound: the leader is the quorum, placed only where the whole group
// fits.
package lws

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// The manager reads the objects that size gangs (the pod webhook auto-groups pods
// by them).
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets,verbs=get

// Labels and the annotation LWS writes on every pod of a group.
const (
	LabelName        = "leaderworkerset.sigs.k8s.io/name"
	LabelWorkerIndex = "leaderworkerset.sigs.k8s.io/worker-index"
	LabelGroupIndex  = "leaderworkerset.sigs.k8s.io/group-index"
	// AnnotationSize is the group's size.
	AnnotationSize = "leaderworkerset.sigs.k8s.io/size"
)

// LeaderWorkerSet is the kind, at the version read by default.
var LeaderWorkerSet = schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}

// Framework is LeaderWorkerSet.
type Framework struct{ frameworks.Base }

// Recognise: the group's leader is worker 0; LWS serves inference.
func (Framework) Recognise(l map[string]string, _ string) (frameworks.Recognition, bool) {
	if l[LabelName] == "" {
		return frameworks.Recognition{}, false
	}
	role := v1alpha1.RoleWorker
	if l[LabelWorkerIndex] == "0" {
		role = v1alpha1.RoleLeader
	}
	return frameworks.Recognition{Integration: v1alpha1.IntegrationLeaderWorkerSet, Role: role, Class: v1alpha1.WorkloadClassInference}, true
}

// Source is the LeaderWorkerSet, one gang per replica group.
func (Framework) Source(pod *corev1.Pod, _ v1alpha1.Integration) (frameworks.Source, bool) {
	idx := pod.Labels[LabelGroupIndex]
	if _, err := strconv.ParseUint(idx, 10, 32); err != nil {
		return frameworks.Source{}, false
	}
	return frameworks.Source{GVK: LeaderWorkerSet, Name: pod.Labels[LabelName], Extra: []string{idx}}, true
}

func (Framework) Integrations() []v1alpha1.Integration {
	return []v1alpha1.Integration{v1alpha1.IntegrationLeaderWorkerSet}
}

func (Framework) Owners() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{LeaderWorkerSet}
}

func (Framework) Reads() []schema.GroupKind { return []schema.GroupKind{LeaderWorkerSet.GroupKind()} }

// Size is the group's size (leaderWorkerTemplate.size, default 1); with exclusive
// placement the leader alone (LeaderFirstGroupSize).
func (Framework) Size(_ frameworks.Source, obj *unstructured.Unstructured) (frameworks.Size, error) {
	spec := frameworks.Spec(obj)
	n := frameworks.Int(spec, "leaderWorkerTemplate", "size")
	if _, set := frameworks.Nested(spec, "leaderWorkerTemplate", "size").(int64); !set {
		n = 1
	}
	if obj.GetAnnotations()[v1alpha1.AnnotationLWSExclusiveTopology] != "" {
		n = 1
	}
	return frameworks.Size{Members: n}, nil
}

// Replicas is every group's leader, then its workers.
func (Framework) Replicas(obj *unstructured.Unstructured, add frameworks.Add) error {
	spec := frameworks.Spec(obj)
	groups := frameworks.Replicas(spec, "replicas")
	lwt, _ := spec["leaderWorkerTemplate"].(map[string]any)
	size := frameworks.Replicas(lwt, "size")
	leader := lwt["leaderTemplate"]
	if leader == nil {
		leader = lwt["workerTemplate"]
	}
	if err := add("leader", groups, leader); err != nil || size <= 1 {
		return err
	}
	return add("worker", frameworks.Bounded(groups*(size-1)), lwt["workerTemplate"])
}

// LeaderFirstGroupSize is the size of the group whose pods are created leader
// first (exclusive placement), read from the annotations LWS writes on the group's
// pods; 0 for every other pod.
func LeaderFirstGroupSize(pod *corev1.Pod) int {
	a := pod.Annotations
	if pod.Labels[LabelName] == "" || a[v1alpha1.AnnotationLWSExclusiveTopology] == "" {
		return 0
	}
	n, err := strconv.Atoi(a[AnnotationSize])
	if err != nil || n < 1 || n > gang.MaxMinMember {
		return 0
	}
	return n
}

// Subgroup names the group the pod belongs to inside a larger gang, and its size;
// ok is false for every other pod, for groups of one, and for leader-first groups.
func Subgroup(pod *corev1.Pod) (key string, size int, ok bool) {
	l := pod.Labels
	name, idx := l[LabelName], l[LabelGroupIndex]
	if name == "" || LeaderFirstGroupSize(pod) > 0 {
		return "", 0, false
	}
	if _, err := strconv.ParseUint(idx, 10, 32); err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(pod.Annotations[AnnotationSize])
	if err != nil || n < 2 || n > gang.MaxMinMember {
		return "", 0, false
	}
	return name + "/" + idx, n, true
}
