package crdcache

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/kueuecompat"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// OnWorkloadAdmitted calls f when a Kueue Workload arrives or the ClusterQueue that
// admitted it changes (admission is status: no generation bump). Nothing is watched
// when Kueue's Workloads are not served.
func (c *Cache) OnWorkloadAdmitted(f func()) error {
	if !c.kueue {
		return nil
	}
	inf, err := c.cache.GetInformer(context.Background(), kueuecompat.Object(&kueue.Workload{}, c.kueueAPI), cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	admittedBy := func(obj any) kueue.ClusterQueueReference {
		wl := &kueue.Workload{}
		if o, ok := obj.(runtime.Object); ok && kueuecompat.ToCurrent(o, wl) == nil && wl.Status.Admission != nil {
			return wl.Status.Admission.ClusterQueue
		}
		return ""
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { f() },
		UpdateFunc: func(oldObj, newObj any) {
			if admittedBy(oldObj) != admittedBy(newObj) {
				f()
			}
		},
	})
	return err
}

// ClusterQueueOf returns the ClusterQueue through which Kueue admitted the pod's
// Workload — the Workload owned by the pod itself or by its controller — and
// whether there is one. Written by Kueue in the Workload's status, so the pod
// cannot claim it.
func (c *Cache) ClusterQueueOf(pod *corev1.Pod) (string, bool) {
	if !c.kueue {
		return "", false
	}
	c.wait()
	var list kueue.WorkloadList
	if err := c.kueueReader.List(context.Background(), &list, client.InNamespace(pod.Namespace), client.MatchingFields{workloadOwnerIndex: string(pod.UID)}); err == nil {
		for i := range list.Items {
			if a := list.Items[i].Status.Admission; a != nil {
				return string(a.ClusterQueue), true
			}
		}
	}
	// The pod's controller is an ownerReference its author writes: the Workload of
	// the object it names vouches for the pod only when it is that object's (same
	// kind and name, not only the UID), and only for as many pods as it was admitted
	// with — the oldest of those that claim it — so that pods made up to claim an
	// admitted job's queue neither take its tier nor run beyond its quota.
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return "", false
	}
	if err := c.kueueReader.List(context.Background(), &list, client.InNamespace(pod.Namespace), client.MatchingFields{workloadOwnerIndex: string(ref.UID)}); err != nil {
		return "", false
	}
	for i := range list.Items {
		wl := &list.Items[i]
		a := wl.Status.Admission
		if a == nil || !ownedBy(wl, ref) || !c.vouchedFor(pod, ref.UID, admittedPods(wl)) {
			continue
		}
		return string(a.ClusterQueue), true
	}
	return "", false
}

// ownedBy reports whether the Workload's owner with ref's UID is the object ref
// names (kind and name too).
func ownedBy(wl *kueue.Workload, ref *metav1.OwnerReference) bool {
	for _, o := range wl.OwnerReferences {
		if o.UID == ref.UID {
			return o.Kind == ref.Kind && o.Name == ref.Name && groupOf(o.APIVersion) == groupOf(ref.APIVersion)
		}
	}
	return false
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion
	}
	return gv.Group
}

// admittedPods is how many pods the Workload was admitted with: its pod sets'
// admitted counts (their spec counts where the admission gives none).
func admittedPods(wl *kueue.Workload) int {
	n := 0
	for i, ps := range wl.Spec.PodSets {
		count := int(ps.Count)
		if a := wl.Status.Admission; a != nil && i < len(a.PodSetAssignments) && a.PodSetAssignments[i].Count != nil {
			count = int(*a.PodSetAssignments[i].Count)
		}
		n += count
	}
	return n
}

// vouchedFor reports whether pod is among the first admitted (by creation, then
// name) of the unfinished pods that claim the controller uid. Without a pod lister
// (SetControllerPods) every claimant is.
func (c *Cache) vouchedFor(pod *corev1.Pod, uid types.UID, admitted int) bool {
	list := c.controllerPods.Load()
	if list == nil {
		return true
	}
	claimants := (*list)(pod.Namespace, uid)
	if !slices.ContainsFunc(claimants, func(p *corev1.Pod) bool { return p.UID == pod.UID }) {
		claimants = append(claimants, pod)
	}
	older := func(a, b *corev1.Pod) bool {
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	}
	ahead := 0
	for _, p := range claimants {
		if p.UID != pod.UID && !workload.Finished(p) && older(p, pod) {
			ahead++
		}
	}
	return ahead < admitted
}

// ClusterQueueLabels returns the labels of a Kueue ClusterQueue, and whether it
// exists (and Kueue is installed).
func (c *Cache) ClusterQueueLabels(name string) (map[string]string, bool) {
	if !c.kueue {
		return nil, false
	}
	c.wait()
	cq := &kueue.ClusterQueue{}
	if err := c.kueueReader.Get(context.Background(), client.ObjectKey{Name: name}, cq); err != nil {
		return nil, false
	}
	return cq.Labels, true
}
