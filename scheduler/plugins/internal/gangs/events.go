package gangs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// PodGroupResource is how the scheduler names events of KubeNexus PodGroups
// (<resource>.<version>.<group>).
var PodGroupResource = fwk.EventResource("podgroups." + v1alpha1.GroupVersion.Version + "." + v1alpha1.GroupVersion.Group)

// IsSchedulableAfterPodGroupChange is the queueing hint for PodGroup events (of any
// dialect): a member is re-queued when its own gang's PodGroup appears or its spec
// changes. Status updates, which the PodGroup controller writes as members come and
// go, leave the generation alone and re-queue nobody.
func IsSchedulableAfterPodGroupChange(_ klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	ns, name, gen, err := podGroupMeta(newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if oldObj != nil {
		if _, _, oldGen, err := podGroupMeta(oldObj); err == nil && oldGen == gen {
			return fwk.QueueSkip, nil
		}
	}
	if m, ok, _ := gang.Of(pod); ok && m.Key == (gang.Key{Namespace: ns, Name: name}) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// podGroupMeta reads namespace, name and generation of a PodGroup delivered by the
// scheduler's dynamic informer (unstructured) or typed.
func podGroupMeta(obj any) (string, string, int64, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o.GetNamespace(), o.GetName(), o.GetGeneration(), nil
	case *v1alpha1.PodGroup:
		return o.Namespace, o.Name, o.Generation, nil
	}
	return "", "", 0, fmt.Errorf("unexpected object %T", obj)
}

// PodGroupRef is the reference events about a gang are recorded against: the
// PodGroup of whichever API defines the gang (KubeNexus's when none exists).
func PodGroupRef(key gang.Key, pg *v1alpha1.PodGroup) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       "PodGroup",
		Namespace:  key.Namespace,
		Name:       key.Name,
	}
	if pg != nil {
		ref.UID = pg.UID
		if pg.APIVersion != "" {
			ref.APIVersion = pg.APIVersion
		}
	}
	return ref
}
