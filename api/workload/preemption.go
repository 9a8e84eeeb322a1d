package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// The preemption rules GangPreemption evicts by and kubectl kubenexus explains by.

// PreemptionPriority is a pod's priority in preemption: the value of the
// PriorityClass its gang's PodGroup names (gangValue; nil: none, or no gang), never
// above the pod's own. A PodGroup, which a tenant writes, can lower its members'
// priority or give them one value, but cannot lift a preemptor above what its pods
// were admitted with nor shield a victim.
func PreemptionPriority(p *corev1.Pod, gangValue *int32) int32 {
	own := corev1helpers.PodPriority(p)
	if gangValue != nil {
		return min(*gangValue, own)
	}
	return own
}

// MayPreempt says whether a running pod (its profile and preemption priority) may
// be evicted for a preemptor of profile prof and priority prio: it is of lower
// priority, not of the preemptor's own gang, and not a service (service,
// inference, interactive) when the preemptor is batch or training, unless
// servicesForBatch (the KubeNexusConfig's preemptServicesForBatch). A gang is
// evicted whole or not at all: it is a victim only when every member may be.
func MayPreempt(prof Profile, prio int32, victim Profile, victimPrio int32, servicesForBatch bool) bool {
	if victimPrio >= prio {
		return false
	}
	if prof.Gang != nil && victim.Gang != nil && victim.Gang.Key == prof.Gang.Key {
		return false
	}
	batch := prof.Class == v1alpha1.WorkloadClassBatch || prof.Class == v1alpha1.WorkloadClassTraining
	return !batch || servicesForBatch || !IsService(victim.Class)
}

// IsService reports whether pods of the class serve requests (service, inference,
// interactive): batch and training do not evict them unless told to.
func IsService(c v1alpha1.WorkloadClass) bool {
	return c == v1alpha1.WorkloadClassService || c == v1alpha1.WorkloadClassInference || c == v1alpha1.WorkloadClassInteractive
}

// Sheddable says whether a member of this role may be shed from a gang that runs
// above its minimum — evicted alone, the gang running on: a worker, executor,
// evaluator or a member of no role may; a coordinator (driver, master, launcher,
// head, leader, chief, parameter server) never — its gang would not outlive it.
// A role is what the pod's labels say; a pod that calls a worker a coordinator
// only makes its whole gang the victim instead.
func Sheddable(role v1alpha1.WorkloadRole) bool {
	switch role {
	case v1alpha1.RoleDriver, v1alpha1.RoleMaster, v1alpha1.RoleLauncher, v1alpha1.RoleHead,
		v1alpha1.RoleLeader, v1alpha1.RoleChief, v1alpha1.RolePS:
		return false
	}
	return true
}

// RecreatedElsewhere reports whether evicting the pod leaves a controller to
// recreate it, free to place the replacement on another node: it has a controller
// that is not a DaemonSet (a bare pod evicted is gone; a DaemonSet's is bound to
// its node). Consolidation moves only such pods.
func RecreatedElsewhere(p *corev1.Pod) bool {
	ctrl := metav1.GetControllerOf(p)
	return ctrl != nil && ctrl.Kind != "DaemonSet"
}

// MayMove says whether a running pod (its profile and preemption priority) may be
// moved — evicted to be recreated on another node — to make one whole place for a
// preemptor of profile prof and priority prio (consolidation): it belongs to no
// gang (one member moved would break its gang), its priority is not above the
// preemptor's, its tenant tier is not above the preemptor's, it is labelled
// preemptible (or, with checkpointed, declares its checkpoints), and it is not a
// service when the preemptor is batch or training, unless servicesForBatch.
func MayMove(prof Profile, prio int32, victim Profile, victimPrio int32, victimCkpt Checkpointing, checkpointed, servicesForBatch bool) bool {
	if victim.Gang != nil || victimPrio > prio || TierRank(victim.Tier) > TierRank(prof.Tier) {
		return false
	}
	if !victim.Preemptible && (!checkpointed || !victimCkpt.Declared()) {
		return false
	}
	batch := prof.Class == v1alpha1.WorkloadClassBatch || prof.Class == v1alpha1.WorkloadClassTraining
	return !batch || servicesForBatch || !IsService(victim.Class)
}
