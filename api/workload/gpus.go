package workload

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Finished reports whether the pod has run to completion (phase Succeeded or
// Failed): it holds nothing on its node any more, and a gang no longer counts it
// as waiting.
func Finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Preempted reports whether a scheduler preempted the pod: its DisruptionTarget
// condition says so, or kubenexus-scheduler's GangPreemption marked it
// (v1alpha1.PodConditionPreempted) before evicting it through the Eviction API,
// which rewrites DisruptionTarget's reason.
func Preempted(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == v1alpha1.PodConditionPreempted ||
			c.Type == corev1.DisruptionTarget && c.Reason == corev1.PodReasonPreemptionByScheduler) {
			return true
		}
	}
	return false
}

// OccupiesNode reports whether the pod holds room on a node: bound and not
// finished. A terminating pod still occupies its node until it is gone, as
// kube-scheduler counts it.
func OccupiesNode(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && !Finished(p)
}

// NodeBound reports whether the pod runs on its node whatever a scheduler decides:
// a DaemonSet's pod or a static (mirror) pod. Such pods break no topology domain
// kept whole.
func NodeBound(p *corev1.Pod) bool {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// RequestedGPUs is the pod's effective request of the named GPU resources
// (nvidia.com/gpu when none are named) as kube-scheduler counts it: the larger of
// its containers' sum and its largest init container, sidecars and overhead
// included.
func RequestedGPUs(p *corev1.Pod, names ...corev1.ResourceName) int64 {
	if len(names) == 0 {
		names = []corev1.ResourceName{v1alpha1.ResourceNvidiaGPU}
	}
	reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	var n int64
	for _, name := range names {
		if q, ok := reqs[name]; ok {
			n += q.Value()
		}
	}
	return n
}

// NamesAny reports whether any container of the pod (init containers included)
// names one of the resources in its requests or limits: the cheap test, without
// summing, that most pods fail before RequestedGPUs is worth computing.
func NamesAny(p *corev1.Pod, names []corev1.ResourceName) bool {
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			for _, n := range names {
				if _, ok := list[i].Resources.Requests[n]; ok {
					return true
				}
				if _, ok := list[i].Resources.Limits[n]; ok {
					return true
				}
			}
		}
	}
	return false
}

// HeldGPUs is how many GPUs a pod holds on its node: RequestedGPUs while it
// OccupiesNode, 0 otherwise. The manager's HardwareTier status, the scheduler's
// largest-placeable-gang gauges and the demo report count allocation with it.
func HeldGPUs(p *corev1.Pod, names ...corev1.ResourceName) int64 {
	if !OccupiesNode(p) {
		return 0
	}
	return RequestedGPUs(p, names...)
}

// RequiredGPUModels are the GPU models (nvidia.com/gpu.product values, sorted, without
// duplicates) that the pod's node selector and required node affinity allow; nil when
// they allow any. A model constraint a pod places on itself narrows the nodes its
// demand competes for: ResourceFragmentation weighs a node only against the demand
// that may use it. Affinity terms are ORed: a term without a product requirement
// allows any model. Only the `In` operator names models; other operators on the
// label (NotIn, Exists) are treated as allowing any.
func RequiredGPUModels(p *corev1.Pod) []string {
	var selected []string
	if v, ok := p.Spec.NodeSelector[v1alpha1.LabelGPUProduct]; ok {
		selected = []string{v}
	}
	var fromAffinity []string
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			var termModels []string
			constrained := false
			for _, r := range term.MatchExpressions {
				if r.Key != v1alpha1.LabelGPUProduct || r.Operator != corev1.NodeSelectorOpIn {
					continue
				}
				if constrained {
					termModels = intersect(termModels, r.Values)
				} else {
					termModels, constrained = append([]string(nil), r.Values...), true
				}
			}
			if !constrained {
				fromAffinity = nil // this term allows any model, so the affinity does
				break
			}
			fromAffinity = append(fromAffinity, termModels...)
			if len(fromAffinity) == 0 {
				fromAffinity = []string{} // constrained to nothing so far
			}
		}
	}
	var models []string
	switch {
	case selected != nil && fromAffinity != nil:
		models = intersect(selected, fromAffinity)
	case selected != nil:
		models = selected
	case fromAffinity != nil:
		models = fromAffinity
	default:
		return nil
	}
	slices.Sort(models)
	models = slices.Compact(models)
	if models == nil {
		models = []string{} // allows no model: no GPU node can take it
	}
	return models
}

func intersect(a, b []string) []string {
	out := []string{}
	for _, v := range a {
		if slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}
