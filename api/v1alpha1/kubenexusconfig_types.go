package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeNexusConfigSpec configures the scheduler KubeNexus deploys, its plugins and the
// pod webhook.
type KubeNexusConfigSpec struct {
	// scheduler is the kubenexus-scheduler deployment and its client settings.
	// +kubebuilder:default={}
	// +optional
	Scheduler SchedulerSpec `json:"scheduler,omitempty"`

	// plugins enables, weighs and configures each KubeNexus scheduler plugin.
	// +kubebuilder:default={}
	// +optional
	Plugins PluginsSpec `json:"plugins,omitempty"`

	// webhook configures the pod classification webhook.
	// +kubebuilder:default={}
	// +optional
	Webhook WebhookSpec `json:"webhook,omitempty"`

	// topology declares the network topology levels gangs are placed by.
	// +kubebuilder:default={}
	// +optional
	Topology TopologySpec `json:"topology,omitempty"`

	// volcano lets KubeNexus take the Volcano scheduler's role for workloads written
	// for Volcano, for clusters that move from Volcano to KubeNexus.
	// +kubebuilder:default={}
	// +optional
	Volcano VolcanoSpec `json:"volcano,omitempty"`

	// kueue configures how KubeNexus reads Kueue's objects.
	// +kubebuilder:default={}
	// +optional
	Kueue KueueSpec `json:"kueue,omitempty"`

	// reservations bounds what one ResourceReservation may hold. The manager's
	// ResourceReservation webhook refuses one above these limits, as it refuses one
	// that its namespace's ResourceQuotas or its tenant tier do not allow.
	// +kubebuilder:default={}
	// +optional
	Reservations ReservationsSpec `json:"reservations,omitempty"`
}

// ReservationsSpec bounds ResourceReservations.
type ReservationsSpec struct {
	// maxTTLSeconds is the longest spec.ttlSeconds a ResourceReservation may ask
	// for, and the longest spec.reserveCapacity.ttlSeconds of a PodGroup (whose
	// reservation the scheduler creates).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=604800
	// +kubebuilder:default=86400
	// +optional
	MaxTTLSeconds int32 `json:"maxTTLSeconds,omitempty"`

	// maxSlots is the most slots (spec.slots) one ResourceReservation may hold.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=1000
	// +optional
	MaxSlots int32 `json:"maxSlots,omitempty"`
}

// Defaults of ReservationsSpec, for a cluster without a KubeNexusConfig.
const (
	DefaultReservationMaxTTLSeconds int32 = 86400
	DefaultReservationMaxSlots      int32 = 1000
)

// Limits returns the limits with the defaults where unset.
func (r ReservationsSpec) Limits() (maxTTLSeconds, maxSlots int32) {
	maxTTLSeconds, maxSlots = r.MaxTTLSeconds, r.MaxSlots
	if maxTTLSeconds <= 0 {
		maxTTLSeconds = DefaultReservationMaxTTLSeconds
	}
	if maxSlots <= 0 {
		maxSlots = DefaultReservationMaxSlots
	}
	return maxTTLSeconds, maxSlots
}

// KueueSpec configures how KubeNexus reads Kueue's objects.
type KueueSpec struct {
	// tenantTierFrom says where the tenant tier of a pod that Kueue admitted comes
	// from: Namespace (its namespace's tenant.kubenexus.io/tier label, as for every
	// other pod), or ClusterQueue (the tenant.kubenexus.io/tier label of the
	// ClusterQueue that admitted its Workload, else its namespace's). Both are
	// objects tenants cannot write; a pod's own labels never count.
	// +kubebuilder:validation:Enum=Namespace;ClusterQueue
	// +kubebuilder:default=Namespace
	// +optional
	TenantTierFrom TenantTierSource `json:"tenantTierFrom,omitempty"`

	// retryAfterSeconds is how long Kueue waits before it tries again a Workload
	// the placement-feasibility check sent back (Retry): the check writes it as the
	// check state's requeueAfterSeconds, which Kueue 0.15 and later honour (earlier
	// Kueues use their own backoff).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=10
	// +optional
	RetryAfterSeconds *int32 `json:"retryAfterSeconds,omitempty"`
}

// DefaultKueueRetryAfterSeconds is spec.kueue.retryAfterSeconds when unset.
const DefaultKueueRetryAfterSeconds = 10

// TenantTierSource is where a pod's tenant tier is read.
type TenantTierSource string

const (
	TenantTierFromNamespace    TenantTierSource = "Namespace"
	TenantTierFromClusterQueue TenantTierSource = "ClusterQueue"
)

// SchedulerSpec is the scheduler deployment.
//
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.replicas <= 1 || !has(self.leaderElection) || !has(self.leaderElection.enabled) || self.leaderElection.enabled",message="spec.scheduler.replicas greater than 1 requires spec.scheduler.leaderElection.enabled=true"
type SchedulerSpec struct {
	// schedulerName is the name pods put in spec.schedulerName to use KubeNexus,
	// and the name of the scheduler profile.
	// +kubebuilder:default=kubenexus-scheduler
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// image is the kubenexus-scheduler container image. Unset means the image the
	// operator was installed with.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	Image string `json:"image,omitempty"`

	// imagePullPolicy is the pull policy of the scheduler container.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// replicas is the number of scheduler pods; more than one requires leader election.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:default=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// leaderElection configures the scheduler's leader election.
	// +kubebuilder:default={}
	// +optional
	LeaderElection LeaderElectionSpec `json:"leaderElection,omitempty"`

	// resources are the scheduler container's resource requests and limits.
	// +kubebuilder:default={requests: {cpu: "500m", memory: "512Mi"}}
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// clientConnection is the scheduler's API client rate limit.
	// +kubebuilder:default={}
	// +optional
	ClientConnection ClientConnectionSpec `json:"clientConnection,omitempty"`

	// percentageOfNodesToScore is the share of feasible nodes the scheduler scores
	// per pod; 0 means kube-scheduler's adaptive default.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=0
	// +optional
	PercentageOfNodesToScore int32 `json:"percentageOfNodesToScore,omitempty"`

	// verbosity is the scheduler's log level (klog -v).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=2
	// +optional
	Verbosity int32 `json:"verbosity,omitempty"`

	// imagePullSecrets are the Secrets (in the operator's namespace) the scheduler's
	// pods pull their image with.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// nodeSelector limits the scheduler's pods to nodes with these labels.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the scheduler's pods.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity of the scheduler's pods. With more than one replica and no
	// podAntiAffinity given, the replicas prefer different nodes.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// priorityClassName of the scheduler's pods (e.g. system-cluster-critical, so
	// that the scheduler is not evicted before the pods it places).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// servingCertSecretName names a Secret of type kubernetes.io/tls, in the
	// manager's namespace, whose tls.crt and tls.key the scheduler serves on its
	// secure port (metrics, health) instead of the self-signed certificate
	// kube-scheduler generates, so that scrapers can verify it (the chart sets
	// it to the Secret cert-manager issues in cert-manager mode). The scheduler's
	// pods do not start until the Secret exists.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ServingCertSecretName string `json:"servingCertSecretName,omitempty"`
}

// LeaderElectionSpec configures leader election between scheduler replicas.
//
// +kubebuilder:validation:XValidation:rule="!has(self.renewDeadlineSeconds) || !has(self.leaseDurationSeconds) || self.renewDeadlineSeconds < self.leaseDurationSeconds",message="spec.scheduler.leaderElection.renewDeadlineSeconds must be less than leaseDurationSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.retryPeriodSeconds) || !has(self.renewDeadlineSeconds) || self.retryPeriodSeconds < self.renewDeadlineSeconds",message="spec.scheduler.leaderElection.retryPeriodSeconds must be less than renewDeadlineSeconds"
type LeaderElectionSpec struct {
	// enabled turns leader election on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// leaseDurationSeconds is how long a non-leader waits before taking over.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=300
	// +kubebuilder:default=15
	// +optional
	LeaseDurationSeconds int32 `json:"leaseDurationSeconds,omitempty"`

	// renewDeadlineSeconds is how long the leader retries renewing before giving up.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +kubebuilder:default=10
	// +optional
	RenewDeadlineSeconds int32 `json:"renewDeadlineSeconds,omitempty"`

	// retryPeriodSeconds is the wait between leader election attempts.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +kubebuilder:default=2
	// +optional
	RetryPeriodSeconds int32 `json:"retryPeriodSeconds,omitempty"`
}

// ClientConnectionSpec is the scheduler's API client rate limit.
//
// +kubebuilder:validation:XValidation:rule="!has(self.burst) || !has(self.qps) || self.burst >= self.qps",message="spec.scheduler.clientConnection.burst must be greater than or equal to qps"
type ClientConnectionSpec struct {
	// qps is the sustained request rate to the API server.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=50
	// +optional
	QPS int32 `json:"qps,omitempty"`

	// burst is the short-term request allowance above qps.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20000
	// +kubebuilder:default=100
	// +optional
	Burst int32 `json:"burst,omitempty"`
}

// PluginsSpec configures each KubeNexus plugin. An unset plugin gets its defaults
// (enabled, default weight).
type PluginsSpec struct {
	// profileClassifier computes each pod's class, role, tier and gang once per
	// scheduling cycle for the other plugins.
	// +kubebuilder:default={}
	// +optional
	ProfileClassifier ProfileClassifierPlugin `json:"profileClassifier,omitempty"`
	// coscheduling schedules gangs all-or-nothing.
	// +kubebuilder:default={}
	// +optional
	Coscheduling CoschedulingPlugin `json:"coscheduling,omitempty"`
	// workloadAware packs batch and training pods and spreads services.
	// +kubebuilder:default={}
	// +optional
	WorkloadAware WorkloadAwarePlugin `json:"workloadAware,omitempty"`
	// topologyAware spreads services across zones and packs gangs into few zones.
	// +kubebuilder:default={}
	// +optional
	TopologyAware TopologyAwarePlugin `json:"topologyAware,omitempty"`
	// networkFabric places gang members on the same ToR, else rack, else zone.
	// +kubebuilder:default={}
	// +optional
	NetworkFabric NetworkFabricPlugin `json:"networkFabric,omitempty"`
	// resourceFragmentation keeps whole GPU islands free for jobs that need them.
	// +kubebuilder:default={}
	// +optional
	ResourceFragmentation ResourceFragmentationPlugin `json:"resourceFragmentation,omitempty"`
	// tenantHardware matches tenant tiers to HardwareTiers.
	// +kubebuilder:default={}
	// +optional
	TenantHardware TenantHardwarePlugin `json:"tenantHardware,omitempty"`
	// numaTopology filters and scores nodes by single-NUMA fit.
	// +kubebuilder:default={}
	// +optional
	NUMATopology NUMATopologyPlugin `json:"numaTopology,omitempty"`
	// vram filters and scores nodes by free GPU memory.
	// +kubebuilder:default={}
	// +optional
	VRAM VRAMPlugin `json:"vram,omitempty"`
	// resourceReservation honours ResourceReservation objects.
	// +kubebuilder:default={}
	// +optional
	ResourceReservation ResourceReservationPlugin `json:"resourceReservation,omitempty"`
	// backfill lets preemptible batch use idle or reserved-but-unused capacity.
	// +kubebuilder:default={}
	// +optional
	Backfill BackfillPlugin `json:"backfill,omitempty"`
	// gangPreemption evicts whole lower-priority gangs or preemptible pods to make
	// room for a gang.
	// +kubebuilder:default={}
	// +optional
	GangPreemption GangPreemptionPlugin `json:"gangPreemption,omitempty"`
	// bindingBackpressure keeps the scheduler from running ahead of the API server:
	// bindings in flight are bounded, and scheduling waits for them.
	// +kubebuilder:default={}
	// +optional
	BindingBackpressure BindingBackpressurePlugin `json:"bindingBackpressure,omitempty"`
}

// ProfileClassifierPlugin configures ProfileClassifier.
type ProfileClassifierPlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// CoschedulingPlugin configures Coscheduling.
type CoschedulingPlugin struct {
	// enabled turns the plugin on. Without it, PodGroups are not gang-scheduled.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// defaultScheduleTimeoutSeconds is the Permit wait for gangs whose PodGroup
	// sets no scheduleTimeoutSeconds.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=60
	// +optional
	DefaultScheduleTimeoutSeconds int32 `json:"defaultScheduleTimeoutSeconds,omitempty"`

	// backoffSeconds is how long a rejected gang waits, as a unit, before its
	// members are tried again.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=10
	// +optional
	BackoffSeconds int32 `json:"backoffSeconds,omitempty"`

	// starvationAgingSeconds turns on starvation aging in the queue: every this many
	// seconds a pod or gang has waited count as one point of priority. 0 orders by
	// priority alone, like kube-scheduler.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=0
	// +optional
	StarvationAgingSeconds int32 `json:"starvationAgingSeconds,omitempty"`
}

// WorkloadAwarePlugin configures WorkloadAware.
type WorkloadAwarePlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// weight is the plugin's score weight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=2
	// +optional
	Weight int32 `json:"weight,omitempty"`

	// resources are the resources whose allocation drives packing and spreading,
	// with their relative weights.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:default={{name: cpu, weight: 1}, {name: memory, weight: 1}, {name: "nvidia.com/gpu", weight: 3}}
	// +listType=map
	// +listMapKey=name
	// +optional
	Resources []ResourceWeight `json:"resources,omitempty"`
}

// ResourceWeight weighs one resource in a score.
type ResourceWeight struct {
	// name is the resource name (cpu, memory, nvidia.com/gpu, ...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`
	// +required
	Name string `json:"name"`

	// weight is the resource's relative weight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +required
	Weight int32 `json:"weight"`
}

// TopologyAwarePlugin configures TopologyAware.
type TopologyAwarePlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// weight is the plugin's score weight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=2
	// +optional
	Weight int32 `json:"weight,omitempty"`
}

// NetworkFabricPlugin configures NetworkFabric.
type NetworkFabricPlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// weight is the plugin's score weight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=3
	// +optional
	Weight int32 `json:"weight,omitempty"`
}

// ResourceFragmentationPlugin configures ResourceFragmentation.
type ResourceFragmentationPlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// weight is the plugin's score weight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=2
	// +optional
	Weight int32 `json:"weight,omitempty"`

	// gpuResourceName is the extended resource that counts GPUs, for every plugin
	// that counts them (ResourceFragmentation, VRAM, NUMATopology, WorkloadAware's
	// accelerator nodes, GangPreemption's GPU time lost).
	// +kubebuilder:default="nvidia.com/gpu"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`
	// +optional
	GPUResourceName string `json:"gpuResourceName,omitempty"`

	// additionalGPUResources are more extended resources that count as GPUs (e.g.
	// amd.com/gpu), for every plugin as gpuResourceName; a node's GPUs are the sum
	// over all of them.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`
	// +listType=set
	// +optional
	AdditionalGPUResources []string `json:"additionalGPUResources,omitempty"`

	// gpuDeviceClasses are the DRA DeviceClasses whose devices are GPUs, besides
	// those whose extendedResourceName is a GPU resource: a node's devices that
	// match one are its GPUs (a device several claims share, or the card
	// partitions draw on, counts by its free share), and a pod's ResourceClaim
	// request for one asks for GPUs or a share of one. Unset or empty: NVIDIA's
	// gpu.nvidia.com and mig.nvidia.com.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	// +optional
	GPUDeviceClasses []string `json:"gpuDeviceClasses,omitempty"`

	// arrivalHalfLifeSeconds is how fast the plugin forgets the sizes of GPU pods that
	// arrived recently (queued pods always count): an arrival counts half after this
	// long.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=600
	// +optional
	ArrivalHalfLifeSeconds int32 `json:"arrivalHalfLifeSeconds,omitempty"`

	// keepHostsForQueued turns the plugin's preference into a filter: a GPU pod is
	// refused a node when placing it there would leave a larger GPU size that queued
	// pods need with fewer nodes that host it than pods queued for it. Off by
	// default: queued pods that never start would keep that room from smaller pods.
	// +kubebuilder:default=false
	// +optional
	KeepHostsForQueued *bool `json:"keepHostsForQueued,omitempty"`
}

// TenantHardwarePlugin configures TenantHardware.
type TenantHardwarePlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// weight is the plugin's score weight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=3
	// +optional
	Weight int32 `json:"weight,omitempty"`
}

// NUMATopologyPlugin configures NUMATopology.
type NUMATopologyPlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// weight is the plugin's score weight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	// +optional
	Weight int32 `json:"weight,omitempty"`
}

// VRAMPlugin configures VRAM.
type VRAMPlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// weight is the plugin's score weight: how strongly a pod that asks for GPU
	// memory is drawn to the tightest card that holds it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=3
	// +optional
	Weight int32 `json:"weight,omitempty"`
}

// ResourceReservationPlugin configures ResourceReservation.
type ResourceReservationPlugin struct {
	// enabled turns the plugin on. Without it, ResourceReservations hold nothing.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// weight is the plugin's score weight: how strongly an owner's pod is drawn to
	// the node its reservation holds. High by default, so that the owner consumes its
	// reservation before other placement preferences count.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=10
	// +optional
	Weight int32 `json:"weight,omitempty"`
}

// BackfillPlugin configures Backfill.
type BackfillPlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// weight is the plugin's score weight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	// +optional
	Weight int32 `json:"weight,omitempty"`

	// safetyMarginSeconds is how long before a waiting gang can start a pod whose
	// runtime is bounded must end to borrow the room accumulating for that gang.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=30
	// +optional
	SafetyMarginSeconds *int32 `json:"safetyMarginSeconds,omitempty"`
}

// GangPreemptionPlugin configures GangPreemption.
type GangPreemptionPlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// preemptServicesForBatch lets batch and training gangs evict service pods of
	// lower priority. Off by default: services are only preempted by services.
	// +kubebuilder:default=false
	// +optional
	PreemptServicesForBatch *bool `json:"preemptServicesForBatch,omitempty"`
}

// BindingBackpressurePlugin configures BindingBackpressure.
type BindingBackpressurePlugin struct {
	// enabled turns the plugin on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// maxBindingsInFlight is how many binding requests may be in flight to the API
	// server at once; pods past it wait in their binding step for one to end, and a
	// scheduling cycle waits (at most 5s) while this many pods are in the binding
	// step. Pods in PreBind (volume provisioning) or waiting for their gang at Permit
	// are not counted.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=64
	// +optional
	MaxBindingsInFlight *int32 `json:"maxBindingsInFlight,omitempty"`
}

// WebhookSpec configures the pod classification webhook.
type WebhookSpec struct {
	// namespaceSelector selects the namespaces whose pods the webhook classifies and
	// groups (pods that name the KubeNexus scheduler are handled everywhere).
	// +kubebuilder:default={matchLabels: {"kubenexus.io/enabled": "true"}}
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// autoGang lists the integrations whose pods get a PodGroup created for them.
	// +kubebuilder:default={spark,pytorch,tensorflow,xgboost,mpi,ray,jobset,leaderworkerset}
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	AutoGang []Integration `json:"autoGang,omitempty"`

	// defaultTier is the tenant tier of opted-in namespaces that carry no
	// tenant.kubenexus.io/tier label.
	// +kubebuilder:default=bronze
	// +optional
	DefaultTier TenantTier `json:"defaultTier,omitempty"`
}

// TopologySpec declares the network topology.
type TopologySpec struct {
	// levels are the topology levels, from the smallest domain to the largest, each
	// read from a node label. A node without a level's label is a domain of its own
	// at that level. PodGroups name a level in spec.networkTopology.level; Kueue's
	// and KAI's topology annotations name the node label.
	// +kubebuilder:default={{name: nvlink, nodeLabel: "nvidia.com/gpu.clique"}, {name: tor, nodeLabel: "network.kubenexus.io/tor"}, {name: rack, nodeLabel: "network.kubenexus.io/rack"}, {name: zone, nodeLabel: "topology.kubernetes.io/zone"}}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:XValidation:rule="self.filter(l, has(l.keepWhole) && l.keepWhole).size() <= 1",message="at most one level may set keepWhole: true"
	// +optional
	Levels []TopologyLevel `json:"levels,omitempty"`
}

// TopologyLevel is one level of the network topology.
type TopologyLevel struct {
	// name is the level's name (e.g. rack).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// nodeLabel is the node label whose value names the node's domain at this level.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`
	// +required
	NodeLabel string `json:"nodeLabel"`

	// keepWhole marks the level whose domains KubeNexus keeps whole for the gangs
	// that need a whole one (an NVLink domain for a rack-scale job): pods that do not
	// need a domain (pods of no gang, members of gangs that ask for no co-location)
	// go first to nodes outside these domains, then to the fullest domain already
	// broken, and a gang's plan prefers the domain it leaves least stranded. A
	// domain is broken once a pod other than a DaemonSet's or a static pod runs on
	// one of its nodes. At most one level is kept whole. Unset: the level read from
	// nvidia.com/gpu.clique is kept whole unless another level sets keepWhole: true.
	// +optional
	KeepWhole *bool `json:"keepWhole,omitempty"`
}

// VolcanoSpec configures KubeNexus's Volcano compatibility.
type VolcanoSpec struct {
	// enabled makes KubeNexus do for Volcano's PodGroups (scheduling.volcano.sh/v1beta1)
	// what the Volcano scheduler does, so that jobs written for Volcano run unchanged:
	// the manager moves a PodGroup to phase Inqueue once its spec.minResources fit the
	// cluster's free capacity (controllers such as Kubeflow's training-operator create
	// pods only then), and keeps Running / Completed and the running / succeeded /
	// failed counts; in the webhook's namespaces, pods that name the volcano scheduler
	// are sent to kubenexus-scheduler, which gangs them by their
	// scheduling.k8s.io/group-name annotation. Off by default. While a Volcano scheduler
	// holds its leader lease (schedulerLease) KubeNexus leaves Volcano's PodGroups alone
	// and reports Degraded.
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// schedulerLease is the Lease a running Volcano scheduler holds.
	// +kubebuilder:default={}
	// +optional
	SchedulerLease LeaseReference `json:"schedulerLease,omitempty"`

	// schedulerName is the scheduler name Volcano's pods carry.
	// +kubebuilder:default=volcano
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`
}

// LeaseReference names a coordination.k8s.io Lease.
type LeaseReference struct {
	// namespace of the Lease.
	// +kubebuilder:default=volcano-system
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// name of the Lease.
	// +kubebuilder:default=volcano
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Name string `json:"name,omitempty"`
}

// Integration is a workload framework whose pods the webhook recognises.
// +kubebuilder:validation:Enum=spark;pytorch;tensorflow;xgboost;mpi;ray;jobset;leaderworkerset;job
type Integration string

const (
	IntegrationSpark           Integration = "spark"
	IntegrationPyTorch         Integration = "pytorch"
	IntegrationTensorFlow      Integration = "tensorflow"
	IntegrationXGBoost         Integration = "xgboost"
	IntegrationMPI             Integration = "mpi"
	IntegrationRay             Integration = "ray"
	IntegrationJobSet          Integration = "jobset"
	IntegrationLeaderWorkerSet Integration = "leaderworkerset"
	IntegrationJob             Integration = "job"
)

// KubeNexusConfig condition types and reasons.
const (
	ConditionAvailable   = "Available"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"

	// ReasonIgnored is set on KubeNexusConfigs not named "default".
	ReasonIgnored = "Ignored"
)

// KubeNexusConfigStatus is the observed state of the deployed scheduler.
type KubeNexusConfigStatus struct {
	// configHash is the hash of the rendered scheduler configuration; the scheduler
	// Deployment rolls when it changes.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`

	// readyReplicas is the number of ready scheduler pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// observedGeneration is the spec generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Available, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KubeNexusConfig configures a KubeNexus installation. The operator acts on the
// one named "default" and reports any other as ignored.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={knc},categories={kubenexus}
// +kubebuilder:printcolumn:name="Scheduler",type=string,JSONPath=`.spec.scheduler.schedulerName`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.scheduler.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Hash",type=string,JSONPath=`.status.configHash`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KubeNexusConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired configuration.
	// +kubebuilder:default={}
	// +optional
	Spec KubeNexusConfigSpec `json:"spec,omitempty"`
	// status is the observed state.
	// +optional
	Status KubeNexusConfigStatus `json:"status,omitempty"`
}

// KubeNexusConfigList is a list of KubeNexusConfigs.
//
// +kubebuilder:object:root=true
type KubeNexusConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KubeNexusConfig `json:"items"`
}

func init() {
	SchemeBuilder.Register(&KubeNexusConfig{}, &KubeNexusConfigList{})
}
