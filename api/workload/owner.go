package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxOwnerDepth bounds the walk up controller references. The deepest chain of a
// framework KubeNexus knows is a LeaderWorkerSet worker's: pod → worker StatefulSet →
// leader pod → leader StatefulSet → LeaderWorkerSet.
const maxOwnerDepth = 6

// ControllerOfFunc returns the controller reference of the object ref names in
// namespace (nil when the object has none). An error stops the walk.
type ControllerOfFunc func(namespace string, ref metav1.OwnerReference) (*metav1.OwnerReference, error)

// topOwner is the reference to the source object ref names, or to the object that
// created it (its framework's Creator) when that one controls it.
func (s GangSource) topOwner(namespace string, ref metav1.OwnerReference, controllerOf ControllerOfFunc) (metav1.OwnerReference, bool, error) {
	own := metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
	f := ownerOf(s.GVK.GroupKind())
	if f == nil {
		return own, true, nil
	}
	creator, ok := f.Creator(s.GVK.GroupKind())
	if !ok {
		return own, true, nil
	}
	up, err := controllerOf(namespace, ref)
	if err != nil {
		return metav1.OwnerReference{}, false, err
	}
	if up == nil {
		return own, true, nil
	}
	if gv, err := schema.ParseGroupVersion(up.APIVersion); err == nil && gv.Group == creator.Group && up.Kind == creator.Kind {
		return metav1.OwnerReference{APIVersion: up.APIVersion, Kind: up.Kind, Name: up.Name, UID: up.UID}, true, nil
	}
	return own, true, nil
}

// ResolveOwner follows controller references from the pod upward until it reaches
// the gang source's object (same API group, kind and name) and returns the
// reference to it, with the UID its controlled child names — or to the object that
// created it, where that is the workload (its framework's Creator). The chain is read from
// the API, so the UID is the owner's real one, whatever the pod's labels claim.
// JobSet v0.8 writes no jobset-uid label and its pods are controlled by a child Job;
// a LeaderWorkerSet's pods are controlled by StatefulSets (a worker's by one that
// the group's leader pod controls). ok is false when the chain ends, or reaches
// maxOwnerDepth, or comes back to an object already seen, without reaching the
// source, or at a malformed reference; references are anyone's to write, so none of
// these is an error to retry. Errors come only from controllerOf.
func (s GangSource) ResolveOwner(pod *corev1.Pod, controllerOf ControllerOfFunc) (metav1.OwnerReference, bool, error) {
	ref := metav1.GetControllerOfNoCopy(pod)
	seen := map[string]bool{}
	for depth := 0; ref != nil && depth < maxOwnerDepth; depth++ {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return metav1.OwnerReference{}, false, nil //nolint:nilerr // untrusted input: a malformed reference ends the walk
		}
		if gv.Group == s.GVK.Group && ref.Kind == s.GVK.Kind && ref.Name == s.Name {
			return s.topOwner(pod.Namespace, *ref, controllerOf)
		}
		id := string(ref.UID) + "/" + ref.Kind + "/" + ref.Name
		if seen[id] {
			return metav1.OwnerReference{}, false, nil // a loop of references ends the walk
		}
		seen[id] = true
		if ref, err = controllerOf(pod.Namespace, *ref); err != nil {
			return metav1.OwnerReference{}, false, err
		}
	}
	return metav1.OwnerReference{}, false, nil
}
