package v1alpha1

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

	// consolidation moves running pods to make one whole place for a gang (or a
	// pod) that the free room holds only in pieces.
	// +optional
	Consolidation *GangConsolidation `json:"consolidation,omitempty"`
}

// GangConsolidation configures consolidation: when a gang (or a pod) that
// preemption cannot place fits the free room of the fleet in total, GangPreemption
// evicts the fewest running pods that may move — each to be recreated by its
// controller on a node where the scheduler found its replacement fits — so that the
// gang fits in one piece, within the domain its topology policy requires, and holds
// that room for it until it binds. A pod moves only if it is labelled
// workload.kubenexus.io/preemptible=true (or, with checkpointedPods, declares its
// checkpoints), has a controller that recreates it (not a DaemonSet), belongs to no
// gang, is of a priority and tenant tier not above the gang's, is past its
// minimum runtime, and its PodDisruptionBudgets allow it.
type GangConsolidation struct {
	// enabled turns consolidation on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// checkpointedPods also moves pods that declare their checkpoints
	// (workload.kubenexus.io/last-checkpoint or checkpoint-interval) without the
	// preemptible label. Off by default: only pods labelled preemptible move.
	// +kubebuilder:default=false
	// +optional
	CheckpointedPods *bool `json:"checkpointedPods,omitempty"`

	// maxEvictionsPerGang is the most pods moved to place one gang: a gang that
	// needs more waits for pods to end instead.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=4
	// +optional
	MaxEvictionsPerGang *int32 `json:"maxEvictionsPerGang,omitempty"`

	// maxEvictionsPerHour is the most pods the scheduler moves in any hour,
	// across gangs.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +kubebuilder:default=32
	// +optional
	MaxEvictionsPerHour *int32 `json:"maxEvictionsPerHour,omitempty"`
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
