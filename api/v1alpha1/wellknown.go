package v1alpha1

import "unicode/utf8"

// The pod → webhook → scheduler contract. Every label, annotation and node key that
// KubeNexus reads or writes is declared here once; the webhook, the controllers and
// the scheduler plugins import these constants rather than spelling keys themselves.

const (
	// DefaultSchedulerName is the scheduler name KubeNexus registers unless a
	// KubeNexusConfig says otherwise.
	DefaultSchedulerName = "kubenexus-scheduler"

	// DefaultConfigName is the name of the only KubeNexusConfig the operator acts on.
	DefaultConfigName = "default"
)

// Namespace keys, set by cluster admins.
const (
	// LabelNamespaceEnabled opts a namespace in to KubeNexus ("true").
	LabelNamespaceEnabled = "kubenexus.io/enabled"
	// LabelTenantTier is the tenant tier of a namespace (gold|silver|bronze). It is
	// authoritative: the webhook overwrites the same key on pods, and the scheduler
	// ignores it on pods.
	LabelTenantTier = "tenant.kubenexus.io/tier"
)

// TenantTier is a tenant's service tier, taken from its namespace.
// +kubebuilder:validation:Enum=gold;silver;bronze
type TenantTier string

const (
	TenantTierGold   TenantTier = "gold"
	TenantTierSilver TenantTier = "silver"
	TenantTierBronze TenantTier = "bronze"
)

// Keys the webhook writes on pods (and the scheduler recomputes when absent).
const (
	// LabelWorkloadType is the pod's workload class (see WorkloadClass).
	LabelWorkloadType = "workload.kubenexus.io/type"
	// LabelWorkloadRole is the pod's role inside its workload (see WorkloadRole).
	LabelWorkloadRole = "workload.kubenexus.io/role"
	// LabelPreemptible marks a pod that may be evicted to make room ("true").
	LabelPreemptible = "workload.kubenexus.io/preemptible"
)

// Annotations a pod declares its checkpoints and minimum runtime with; GangPreemption
// reads them to lose the least work (api/workload/checkpoint.go).
const (
	// AnnotationLastCheckpoint is when the pod last saved its work (RFC 3339); the
	// job updates it as it checkpoints. Evicting the pod loses the work since.
	AnnotationLastCheckpoint = "workload.kubenexus.io/last-checkpoint"
	// AnnotationCheckpointInterval is how often the pod saves its work (a Go
	// duration such as "30m"), when it does not write AnnotationLastCheckpoint:
	// the work since the last interval boundary counts as lost.
	AnnotationCheckpointInterval = "workload.kubenexus.io/checkpoint-interval"
	// AnnotationMinRuntime is how long after it starts the pod is not preempted
	// for work of its own tenant tier or a lower one (a Go duration; at most
	// MaxMinRuntime counts).
	AnnotationMinRuntime = "workload.kubenexus.io/min-runtime"
)

// WorkloadClass is the scheduling class of a pod.
// +kubebuilder:validation:Enum=service;batch;training;inference;interactive
type WorkloadClass string

const (
	WorkloadClassService     WorkloadClass = "service"
	WorkloadClassBatch       WorkloadClass = "batch"
	WorkloadClassTraining    WorkloadClass = "training"
	WorkloadClassInference   WorkloadClass = "inference"
	WorkloadClassInteractive WorkloadClass = "interactive"
)

// WorkloadRole is a pod's role inside a distributed workload.
type WorkloadRole string

const (
	RoleDriver    WorkloadRole = "driver"
	RoleExecutor  WorkloadRole = "executor"
	RoleMaster    WorkloadRole = "master"
	RoleWorker    WorkloadRole = "worker"
	RolePS        WorkloadRole = "ps"
	RoleChief     WorkloadRole = "chief"
	RoleEvaluator WorkloadRole = "evaluator"
	RoleLauncher  WorkloadRole = "launcher"
	RoleHead      WorkloadRole = "head"
	RoleLeader    WorkloadRole = "leader"
)

// Gang membership dialects. All of them resolve to one internal gang identity.
const (
	// LabelPodGroup names a PodGroup object (scheduler-plugins' dialect, also used
	// for KubeNexus PodGroups).
	LabelPodGroup = "scheduling.x-k8s.io/pod-group"

	// LabelKubeNexusGangName and LabelKubeNexusGangMinAvailable form a label-only
	// gang; the PodGroup is created for it.
	LabelKubeNexusGangName         = "pod-group.scheduling.kubenexus.io/name"
	LabelKubeNexusGangMinAvailable = "pod-group.scheduling.kubenexus.io/min-available"

	// LabelSigsGangName and LabelSigsGangMinAvailable are the lightweight
	// scheduler-plugins / Koordinator labels.
	LabelSigsGangName         = "pod-group.scheduling.sigs.k8s.io/name"
	LabelSigsGangMinAvailable = "pod-group.scheduling.sigs.k8s.io/min-available"

	// AnnotationVolcanoGroupName is Volcano's pod → PodGroup annotation.
	AnnotationVolcanoGroupName = "scheduling.k8s.io/group-name"

	// LabelKueuePodGroupName and AnnotationKueuePodGroupTotalCount are Kueue's
	// plain-pod group keys.
	LabelKueuePodGroupName            = "kueue.x-k8s.io/pod-group-name"
	AnnotationKueuePodGroupTotalCount = "kueue.x-k8s.io/pod-group-total-count"
	// LabelKueueQueueName is the Kueue LocalQueue a pod is submitted to.
	LabelKueueQueueName = "kueue.x-k8s.io/queue-name"

	// KueueAdmissionGate and KueueTopologyGate are Kueue's scheduling gates.
	// KubeNexus never removes another system's gate.
	KueueAdmissionGate = "kueue.x-k8s.io/admission"
	KueueTopologyGate  = "kueue.x-k8s.io/topology"
)

// Hints users may set on pods.
const (
	// AnnotationNUMAPolicy is the pod's NUMA placement policy (see NUMAPolicy).
	AnnotationNUMAPolicy = "numa.scheduling.kubenexus.io/policy"
	// AnnotationNUMAPolicyLegacy is the predecessor's key for the same hint, read
	// when AnnotationNUMAPolicy is absent (values single-numa-node, best-effort, none).
	AnnotationNUMAPolicyLegacy = "scheduling.kubenexus.io/numa-policy"
	// AnnotationVRAMRequest is the GPU memory a pod needs per GPU, as a quantity ("40Gi").
	AnnotationVRAMRequest = "scheduling.kubenexus.io/vram-request"
	// AnnotationCoLocate asks for network co-location of a gang (see CoLocation).
	AnnotationCoLocate = "scheduling.kubenexus.io/co-locate"
)

// NUMAPolicy is a pod's NUMA placement policy.
// +kubebuilder:validation:Enum=best-effort;restricted;single-numa;isolated
type NUMAPolicy string

const (
	NUMAPolicyBestEffort NUMAPolicy = "best-effort"
	NUMAPolicyRestricted NUMAPolicy = "restricted"
	NUMAPolicySingleNUMA NUMAPolicy = "single-numa"
	NUMAPolicyIsolated   NUMAPolicy = "isolated"
)

// CoLocation is how strictly a gang's members should share a network domain.
// +kubebuilder:validation:Enum=strict;preferred;none
type CoLocation string

const (
	CoLocationStrict    CoLocation = "strict"
	CoLocationPreferred CoLocation = "preferred"
	CoLocationNone      CoLocation = "none"
)

// Node facts. Real sources first (GPU Feature Discovery, well-known topology labels);
// the kubenexus.io keys are the fallback for what no standard component publishes.
const (
	LabelTopologyZone = "topology.kubernetes.io/zone"

	LabelGPUProduct = "nvidia.com/gpu.product"
	LabelGPUMemory  = "nvidia.com/gpu.memory" // MiB per GPU, as GFD publishes it
	LabelGPUCount   = "nvidia.com/gpu.count"
	LabelGPUClique  = "nvidia.com/gpu.clique" // NVLink domain (cluster UUID.clique id)

	// ResourceNvidiaGPU is the extended resource of NVIDIA's device plugin.
	ResourceNvidiaGPU = "nvidia.com/gpu"

	LabelRack = "network.kubenexus.io/rack"
	LabelToR  = "network.kubenexus.io/tor"

	// LabelNUMANodeCount is the fallback NUMA cell count of a node when no
	// NodeResourceTopology object describes it.
	LabelNUMANodeCount = "numa.kubenexus.io/node-count"
	// LabelNUMACellPrefix starts the fallback per-cell labels
	// numa.kubenexus.io/node-<i>-cpus (a whole number of CPUs), -memory (a
	// quantity) and -gpus (a whole number); a cell without them gets an even share of
	// the node's allocatable.
	LabelNUMACellPrefix = "numa.kubenexus.io/node-"
	// LabelGPUModelFallback and LabelGPUVRAMFallback describe GPUs on nodes without
	// GPU Feature Discovery.
	LabelGPUModelFallback = "gpu.kubenexus.io/model"
	LabelGPUVRAMFallback  = "gpu.kubenexus.io/vram"
)

// Keys KubeNexus writes on its own objects.
const (
	// LabelManagedBy marks objects KubeNexus created (for example auto-created PodGroups).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on KubeNexus-created objects.
	ManagedByValue = "kubenexus"
)

// Overrides users may set on framework pods (usually through the pod template).
const (
	// AnnotationGangMinMember overrides the gang size the webhook reads from the
	// owning object (a positive integer).
	AnnotationGangMinMember = "scheduling.kubenexus.io/min-member"
	// AnnotationAutoGang set to "false" keeps the webhook from putting the pod in a gang.
	AnnotationAutoGang = "scheduling.kubenexus.io/auto-gang"
	// AnnotationAutoGangSkipped is written by the webhook on a recognised framework
	// pod it did not put in a gang, saying why.
	AnnotationAutoGangSkipped = "scheduling.kubenexus.io/auto-gang-skipped"
)

// DefaultAutoGang is the integrations whose pods get a gang when no KubeNexusConfig
// says otherwise (the default of spec.webhook.autoGang).
var DefaultAutoGang = []Integration{
	IntegrationSpark, IntegrationPyTorch, IntegrationTensorFlow, IntegrationXGBoost,
	IntegrationMPI, IntegrationRay, IntegrationJobSet, IntegrationLeaderWorkerSet,
}

// scheduler-plugins' PodGroup API (kubernetes-sigs/scheduler-plugins). Its spec
// fields (minMember, minResources, scheduleTimeoutSeconds) are a subset of ours, so
// KubeNexus reads those objects as gang definitions when the CRD is installed, and
// keeps their status as scheduler-plugins' controller would.
const (
	SigsPodGroupGroup   = "scheduling.x-k8s.io"
	SigsPodGroupVersion = "v1alpha1"
	// SigsPodGroupFinished is scheduler-plugins' phase for a gang whose members
	// succeeded (KubeNexus's Succeeded).
	SigsPodGroupFinished = "Finished"
)

// Volcano's PodGroup API (volcano.sh). Pods name their PodGroup with the
// scheduling.k8s.io/group-name annotation (AnnotationVolcanoGroupName).
const (
	VolcanoPodGroupGroup   = "scheduling.volcano.sh"
	VolcanoPodGroupVersion = "v1beta1"
)

// KAI-Scheduler's PodGroup API (scheduling.run.ai). Pods name their PodGroup with
// the unprefixed pod-group-name annotation (AnnotationKAIPodGroupName) and the leaf
// sub-group of its spec.subGroups they belong to with LabelKAISubGroupName.
const (
	KAIPodGroupGroup          = "scheduling.run.ai"
	KAIPodGroupVersion        = "v2alpha2"
	AnnotationKAIPodGroupName = "pod-group-name"
	LabelKAISubGroupName      = "kai.scheduler/subgroup-name"
)

// Topology annotations of other systems that KubeNexus honours on gang members. Their
// values are node label keys, mapped to the KubeNexusConfig's topology levels.
const (
	AnnotationKueueRequiredTopology  = "kueue.x-k8s.io/podset-required-topology"
	AnnotationKueuePreferredTopology = "kueue.x-k8s.io/podset-preferred-topology"
	AnnotationKAIRequiredPlacement   = "kai.scheduler/topology-required-placement"
	AnnotationKAIPreferredPlacement  = "kai.scheduler/topology-preferred-placement"
	// AnnotationLWSExclusiveTopology is LeaderWorkerSet's: each group alone in one
	// domain of the node label it names. LWS copies it from the LeaderWorkerSet to
	// every pod of the group and keeps groups apart with pod (anti-)affinity;
	// KubeNexus places the group's gang in one such domain as a whole.
	AnnotationLWSExclusiveTopology = "leaderworkerset.sigs.k8s.io/exclusive-topology"
	// Kueue's slices: the pod template's members in groups of
	// AnnotationKueueSliceSize, each group in one domain of the node label
	// AnnotationKueueSliceRequiredTopology names; or up to three such layers at once
	// (AnnotationKueueSliceConstraints, a JSON list of {"topology": <node label>,
	// "size": <members>}, outermost first). AnnotationKueueUnconstrainedTopology
	// "true" asks for no domain for the whole set.
	AnnotationKueueSliceRequiredTopology = "kueue.x-k8s.io/podset-slice-required-topology"
	AnnotationKueueSliceSize             = "kueue.x-k8s.io/podset-slice-size"
	AnnotationKueueSliceConstraints      = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
	AnnotationKueueUnconstrainedTopology = "kueue.x-k8s.io/podset-unconstrained-topology"
	// AnnotationKueueWorkload names the Kueue Workload a pod was started for; Kueue
	// sets it on the pods of every Job it admits while its topology-aware scheduling
	// is on (the default since Kueue 0.14).
	AnnotationKueueWorkload = "kueue.x-k8s.io/workload"
)

// AnnotationEstimatedStart is when the manager forecasts a waiting gang starts
// (RFC 3339, UTC), or "unknown": set on its PodGroup and on the Kueue Workload its
// pods were started for, removed once it no longer waits.
const AnnotationEstimatedStart = "kubenexus.io/estimated-start"

// PodConditionPreempted (True) is the pod condition kubenexus-scheduler's
// GangPreemption sets on a victim, beside DisruptionTarget, before it evicts it: the
// Eviction API rewrites DisruptionTarget's reason to EvictionByEvictionAPI, and a
// gang's repair must know that its member's room went to a preemptor (it holds none
// for it). workload.Preempted reads both.
const PodConditionPreempted = "scheduling.kubenexus.io/Preempted"

// Keys on ResourceReservations.
const (
	// LabelReservationAccumulate ("true") marks a reservation that holds free room for
	// its PodGroup's missing members wherever it frees, rather than on one node (see
	// PodGroupSpec.ReserveCapacity). The scheduler creates them.
	LabelReservationAccumulate = "scheduling.kubenexus.io/accumulate"
	// LabelReservationRepair ("true"), beside LabelReservationAccumulate, marks the
	// reservation the manager creates to hold a repairing gang's room for its
	// replacements (PodGroupSpec.Recovery), in the gang's domain
	// (spec.nodeSelector); the manager deletes it when the repair ends.
	LabelReservationRepair = "scheduling.kubenexus.io/repair"
)

// Keys of other projects KubeNexus reads.
const (
	// LabelKueueMaxExecTime is Kueue's maximum execution time of a workload, in
	// seconds, as a label on the job and its pods: a bound on the pod's runtime that
	// Backfill trusts like activeDeadlineSeconds.
	LabelKueueMaxExecTime = "kueue.x-k8s.io/max-exec-time-seconds"
	// LabelKueuePriorityClass names the WorkloadPriorityClass of a job queued by
	// Kueue: its Workload's priority in Kueue's queues (whatif reads it).
	LabelKueuePriorityClass = "kueue.x-k8s.io/priority-class"
)

// Reasons of the events the manager writes where it decides (kubectl describe and
// kubectl events show them on the object named).
const (
	// EventReportingController is the manager's name on its events.
	EventReportingController = "kubenexus-manager"
	// EventReasonAutoGangSkipped (Warning, on the framework object): its pods were
	// not put in a gang; the note says why and what to set.
	EventReasonAutoGangSkipped = "AutoGangSkipped"
	// EventReasonPodGroupCreated (Normal, on the PodGroup): created for a label-only
	// gang.
	EventReasonPodGroupCreated = "PodGroupCreated"
	// EventReasonPlacementRetry (Warning, on the Kueue Workload): the
	// placement-feasibility check said Retry; the note is the check's message.
	EventReasonPlacementRetry = "PlacementRetry"
	// EventReasonDispatched (Normal, on the manager cluster's Kueue Workload): the
	// MultiKueue dispatcher nominated a worker cluster; the note names it and says
	// what every worker cluster would give the gang.
	EventReasonDispatched = "Dispatched"
	// EventReasonDispatchRefused (Warning, on the manager cluster's Kueue Workload):
	// no worker cluster can hold the gang whole; the note says why for each.
	EventReasonDispatchRefused = "DispatchRefused"
	// EventReasonGangMembersLost (Warning, on the PodGroup): the running gang lost
	// members; the note says which cause, where, and what the manager does.
	EventReasonGangMembersLost = "GangMembersLost"
	// EventReasonGangRestarted (Warning, on the PodGroup): every member was deleted
	// so that the workload's controller restarts the gang whole.
	EventReasonGangRestarted = "GangRestarted"
	// EventReasonGangRepaired (Normal, on the PodGroup): the gang is whole again.
	EventReasonGangRepaired = "GangRepaired"
	// EventReasonGangRepairGaveUp (Warning, on the PodGroup): not whole again within
	// the recovery's bounds; nothing is held for it any more.
	EventReasonGangRepairGaveUp = "GangRepairGaveUp"
	// EventReasonRepairHoldRefused (Warning, on the PodGroup): the reservation
	// holding a repairing gang's room could not be created (the note has the API
	// server's answer: a quota, the KubeNexusConfig's bounds).
	EventReasonRepairHoldRefused = "RepairHoldRefused"
)

// MaxEventNote is the longest note events.k8s.io/v1 accepts, in bytes.
const MaxEventNote = 1024

// EventNote shortens note to what an event may carry; the API server refuses a longer
// note and the event would be lost.
func EventNote(note string) string { return Shorten(note, MaxEventNote) }

// Shorten returns s if it fits in max bytes, else its longest start that fits with
// "…" after it, cut at a character boundary so that the result stays valid UTF-8.
// Messages bound for fields with a size limit (event notes, condition and admission
// check messages) and quoted values from untrusted input go through it.
func Shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
