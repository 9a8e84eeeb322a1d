package v1alpha1

import (
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
