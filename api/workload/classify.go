// Package workload classifies pods: their class (service, batch, training,
// inference, interactive), their role in a distributed workload, the framework that
// created them and their tenant tier. The webhook writes the result on pods; the
// scheduler computes the same result itself for pods that arrive unannotated. Pod
// labels are untrusted: only known values are accepted, and the tier comes from the
// namespace, never from the pod.
package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Profile is what KubeNexus knows about a pod.
type Profile struct {
	Class     v1alpha1.WorkloadClass
	Role      v1alpha1.WorkloadRole // "" when the pod has no distributed role
	Framework v1alpha1.Integration  // "" for plain pods and services
	Tier      v1alpha1.TenantTier
	// Preemptible is set by workload.kubenexus.io/preemptible=true.
	Preemptible bool
	// Gang is the pod's gang membership, when it has one.
	Gang *gang.Membership
	// GangError explains malformed gang labels.
	GangError error
}

// Namespace is what classification needs to know about the pod's namespace.
type Namespace struct {
	Labels map[string]string
}

// Classify returns the pod's profile. defaultTier applies when the namespace carries
// no valid tenant.kubenexus.io/tier label.
func Classify(pod *corev1.Pod, ns Namespace, defaultTier v1alpha1.TenantTier) Profile {
	p := Profile{Tier: TierOf(ns, defaultTier)}
	if m, ok, err := gang.Of(pod); err != nil {
		p.GangError = err
	} else if ok {
		p.Gang = &m
	}
	p.Preemptible = pod.Labels[v1alpha1.LabelPreemptible] == "true"
	p.Framework, p.Role, p.Class = recognise(pod)
	if own := ownRole(pod); own != "" {
		p.Role = own
	}
	if c, ok := explicitClass(pod); ok {
		p.Class = c
	}
	if p.Class == "" {
		p.Class = fallbackClass(pod, p.Gang != nil)
	}
	return p
}

// TierOf reads the tenant tier from the namespace: its tenant.kubenexus.io/tier
// label when that is a tier, else defaultTier, else bronze. It never returns "".
func TierOf(ns Namespace, defaultTier v1alpha1.TenantTier) v1alpha1.TenantTier {
	if HasTier(ns.Labels) {
		return v1alpha1.TenantTier(ns.Labels[v1alpha1.LabelTenantTier])
	}
	if defaultTier == "" {
		return v1alpha1.TenantTierBronze
	}
	return defaultTier
}

// HasTier reports whether labels carry a tenant tier: a tenant.kubenexus.io/tier
// label whose value is gold, silver or bronze.
func HasTier(labels map[string]string) bool {
	switch v1alpha1.TenantTier(labels[v1alpha1.LabelTenantTier]) {
	case v1alpha1.TenantTierGold, v1alpha1.TenantTierSilver, v1alpha1.TenantTierBronze:
		return true
	}
	return false
}

func explicitClass(pod *corev1.Pod) (v1alpha1.WorkloadClass, bool) {
	switch c := v1alpha1.WorkloadClass(pod.Labels[v1alpha1.LabelWorkloadType]); c {
	case v1alpha1.WorkloadClassService, v1alpha1.WorkloadClassBatch, v1alpha1.WorkloadClassTraining,
		v1alpha1.WorkloadClassInference, v1alpha1.WorkloadClassInteractive:
		return c, true
	}
	return "", false
}

// recognise identifies the framework, role and class from well-known labels and
// owners (the first framework of the table that recognises the pod). It returns an
// empty class when nothing is recognised.
func recognise(pod *corev1.Pod) (v1alpha1.Integration, v1alpha1.WorkloadRole, v1alpha1.WorkloadClass) {
	owner := controllerKind(pod)
	for _, f := range table {
		if r, ok := f.Recognise(pod.Labels, owner); ok {
			return r.Integration, r.Role, r.Class
		}
	}
	return "", "", ""
}

// fallbackClass classifies pods no framework claimed: gang members and GPU pods are
// training, other pods are services (spread, never starved).
func fallbackClass(pod *corev1.Pod, inGang bool) v1alpha1.WorkloadClass {
	if inGang {
		return v1alpha1.WorkloadClassBatch
	}
	if RequestedGPUs(pod) > 0 {
		return v1alpha1.WorkloadClassTraining
	}
	return v1alpha1.WorkloadClassService
}

// RoleOf is the pod's role inside its workload: the Kubernetes PodGroup its
// spec.schedulingGroup names (the children of a CompositePodGroup are its roles;
// the API server validates the name, and it is immutable); else the KAI sub-group
// its kai.scheduler/subgroup-name label names (the leaf sub-groups of a KAI
// PodGroup are its roles); else its own workload.kubenexus.io/role label when that is a lower-case DNS label (a PodGroup's
// minMemberPerRole names roles such as prefill or decode freely, and two
// LeaderWorkerSets serving one model are prefill and decode rather than leader and
// worker), else the role its framework's labels give it, else "".
func RoleOf(pod *corev1.Pod) v1alpha1.WorkloadRole {
	if name, ok := v1alpha1.NativeGroupOf(pod); ok {
		return v1alpha1.WorkloadRole(name)
	}
	if sub := pod.Labels[v1alpha1.LabelKAISubGroupName]; sub != "" {
		return v1alpha1.WorkloadRole(sub)
	}
	if own := ownRole(pod); own != "" {
		return own
	}
	_, role, _ := recognise(pod)
	return role
}

// ownRole is the pod's workload.kubenexus.io/role label when it is a lower-case DNS
// label: a role the pod names itself. Roles only count members towards a PodGroup's
// per-role minimums, so a pod claiming one gains nothing over other pods.
func ownRole(pod *corev1.Pod) v1alpha1.WorkloadRole {
	v := pod.Labels[v1alpha1.LabelWorkloadRole]
	if v == "" || len(validation.IsDNS1123Label(v)) > 0 {
		return ""
	}
	return v1alpha1.WorkloadRole(v)
}

func controllerKind(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.Kind
	}
	return ""
}
