package feasibility

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/workload"
)

// PodSetsOf reads a Workload's pod sets as the check places them: the count Kueue
// assigned (else the spec's), the ResourceFlavors it assigned, and the topology level
// a pod set requires (Kueue's TAS).
func PodSetsOf(wl *kueue.Workload) []PodSet {
	assigned := map[kueue.PodSetReference]kueue.PodSetAssignment{}
	if wl.Status.Admission != nil {
		for _, a := range wl.Status.Admission.PodSetAssignments {
			assigned[a.Name] = a
		}
	}
	var out []PodSet
	for _, ps := range wl.Spec.PodSets {
		p := PodSet{Name: string(ps.Name), Count: int(ps.Count), Template: ps.Template}
		a, ok := assigned[ps.Name]
		if ok && a.Count != nil {
			p.Count = int(*a.Count)
		}
		seen := map[string]bool{}
		for _, f := range a.Flavors {
			if !seen[string(f)] {
				seen[string(f)] = true
				p.Flavors = append(p.Flavors, string(f))
			}
		}
		sort.Strings(p.Flavors)
		if tr := ps.TopologyRequest; tr != nil {
			if tr.Required != nil {
				p.RequiredTopology = *tr.Required
			}
			if tr.PodSetSliceRequiredTopology != nil && tr.PodSetSliceSize != nil {
				p.Slices = []SliceLayer{{Label: *tr.PodSetSliceRequiredTopology, Size: int(*tr.PodSetSliceSize)}}
			}
			for _, l := range tr.PodsetSliceRequiredTopologyConstraints {
				p.Slices = append(p.Slices, SliceLayer{Label: l.Topology, Size: int(l.Size)})
			}
		}
		out = append(out, p)
	}
	return out
}

// RuntimeOf is how long a Workload runs once started: Kueue's
// spec.maximumExecutionTimeSeconds (up to workload.MaxRuntimeBound; longer is no
// bound), else the longest runtime bound of its pods (0: one has none).
func RuntimeOf(wl *kueue.Workload) time.Duration {
	if s := wl.Spec.MaximumExecutionTimeSeconds; s != nil && *s > 0 {
		if d := time.Duration(*s) * time.Second; d <= workload.MaxRuntimeBound {
			return d
		}
		return 0
	}
	var runtime time.Duration
	for _, ps := range wl.Spec.PodSets {
		p := &corev1.Pod{ObjectMeta: ps.Template.ObjectMeta, Spec: ps.Template.Spec}
		r, ok := workload.RuntimeBound(p)
		if !ok {
			return 0
		}
		runtime = max(runtime, r)
	}
	return runtime
}

// QuotaNeed is what a job's pod sets ask of a ClusterQueue's quota: the requests of
// all their pods, with the pods resource counting them.
func QuotaNeed(sets []PodSet) corev1.ResourceList {
	need := corev1.ResourceList{}
	add := func(name corev1.ResourceName, q resource.Quantity) {
		sum := need[name]
		sum.Add(q)
		need[name] = sum
	}
	for _, ps := range sets {
		pod := &corev1.Pod{Spec: ps.Template.Spec}
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			q.Mul(int64(ps.Count))
			add(name, q)
		}
		add(corev1.ResourcePods, *resource.NewQuantity(int64(ps.Count), resource.DecimalSI))
	}
	return need
}
