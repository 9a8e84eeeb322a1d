package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGroupSpec describes a gang: a set of pods that is scheduled all-or-nothing.
// It is field-compatible with scheduler-plugins' PodGroup (minMember, minResources,
// scheduleTimeoutSeconds).
//
// +kubebuilder:validation:XValidation:rule="!has(self.minMemberPerRole) || self.minMemberPerRole.all(r, self.minMemberPerRole[r] <= self.minMember)",message="spec.minMemberPerRole: every per-role minimum must be at most spec.minMember"
// +kubebuilder:validation:XValidation:rule="!has(self.networkTopology) || !has(self.networkTopology.slices) || size(self.networkTopology.slices) == 0 || self.minMember % self.networkTopology.slices[0].size == 0",message="spec.networkTopology.slices[0].size must divide spec.minMember"
type PodGroupSpec struct {
	// minMember is the number of member pods that must be schedulable together
	// before any of them is bound.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +required
	MinMember int32 `json:"minMember"`

	// minResources is the total of resources the gang needs to start. The scheduler
	// checks that the cluster has this much free before it lets members in, which is
	// how spark-operator's minMember=1 groups express their real requirement.
	// Every quantity must be greater than zero.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=12
	// +kubebuilder:validation:XValidation:rule="self.all(r, quantity(string(self[r])).isGreaterThan(quantity('0')))",message="spec.minResources: every quantity must be greater than zero"
	// +optional
	MinResources corev1.ResourceList `json:"minResources,omitempty"`

	// scheduleTimeoutSeconds is how long members that already fit wait at Permit
	// for the rest of the gang before the whole gang is rejected and backs off.
	// Unset means the scheduler's default (Coscheduling's defaultScheduleTimeoutSeconds).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`

	// priorityClassName is the PriorityClass of the gang as a whole: kubenexus-scheduler
	// orders every member in its queue, and weighs the gang in preemption (as
	// preemptor and as victim), at this class's value capped at the lowest priority
	// of its members (each pod's own spec.priority, as the API server admitted it).
	// The class can give a gang one priority, or lower it, but never lift it above
	// what its pods were admitted with. Unset, or naming a PriorityClass that does not
	// exist, means each member's own priority. The PodGroup webhook refuses a class
	// that does not exist, a system- class outside kube-system, and a class the
	// namespace's ResourceQuotas allow no pods of.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// minMemberPerRole sets a minimum per role (e.g. driver: 1, executor: 4, or
	// prefill: 2, decode: 2) on top of minMember: the gang starts only when every
	// role named here has that many members, and is released together only when
	// they are all placed. A member's role is its own workload.kubenexus.io/role
	// label (a lower-case DNS label), else the one KubeNexus recognises from its
	// framework's labels (driver, executor, master, worker, launcher, head, leader,
	// ...). Each value must be between 1 and minMember.
	// +kubebuilder:validation:MaxProperties=12
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(r) <= 63)",message="spec.minMemberPerRole: role names must be lower-case DNS labels (e.g. driver, executor, worker)"
	// +kubebuilder:validation:XValidation:rule="self.all(r, self[r] >= 1)",message="spec.minMemberPerRole: every per-role minimum must be at least 1"
	// +optional
	MinMemberPerRole map[string]int32 `json:"minMemberPerRole,omitempty"`

	// networkTopology asks for the gang's members to share a network domain.
	// +optional
	NetworkTopology *NetworkTopologyPolicy `json:"networkTopology,omitempty"`

	// numaSpread is how the gang's members are spread over NUMA cells of a node:
	// packed (fill one cell first), balanced (spread evenly) or isolated (one
	// member per cell).
	// +kubebuilder:validation:Enum=packed;balanced;isolated
	// +optional
	NUMASpread NUMASpreadPolicy `json:"numaSpread,omitempty"`

	// reserveCapacity opts the gang into holding capacity while it waits. Once its
	// members are rejected for lack of capacity (and preemption found no room), the
	// scheduler creates a ResourceReservation named "<podgroup>-accumulate", labelled
	// scheduling.kubenexus.io/accumulate=true, that holds free room for the members
	// still missing wherever it frees, so that smaller pods do not take it: the room
	// accumulates until the gang fits or ttlSeconds pass.
	// +optional
	ReserveCapacity *CapacityReservationPolicy `json:"reserveCapacity,omitempty"`

	// recovery is what KubeNexus does when the running gang loses members — their
	// node goes NotReady or is deleted, a device they use is tainted NoExecute, they
	// are evicted, preempted or fail — so that it falls below minMember. Unset means
	// timeoutSeconds 300 and the policy of the PodGroup's workload (its owner):
	// RestartGang for an MPIJob's gang (mpirun takes no replacement rank), Repair
	// for any other.
	// +optional
	Recovery *GangRecovery `json:"recovery,omitempty"`

	// MinRolesMet is, for a gang read from a Kubernetes CompositePodGroup whose
	// minGroupCount is below its number of children, how many of the roles of
	// MinMemberPerRole (one per child) must meet their minimum; 0: every one.
	// Never stored.
	MinRolesMet int32 `json:"-"`

	// NativeTopologyKey is, for a PodGroup read from Kubernetes' own API
	// (FromNativePodGroup), the node label its spec.schedulingConstraints.topology
	// names: all its pods in one domain of it. Never stored.
	NativeTopologyKey string `json:"-"`
	// NativeTopologyPreferred is, for a KAI PodGroup whose
	// spec.topologyConstraint names only a preferredTopologyLevel
	// (FromKAIPodGroup), that NativeTopologyKey is a preference. Never stored.
	NativeTopologyPreferred bool `json:"-"`
	// DisruptWhole is, for a native PodGroup whose spec.disruptionMode is All, that
	// it is disrupted only as a whole: preemption never shrinks it. Never stored.
	DisruptWhole bool `json:"-"`
	// NativeParent is, for a native PodGroup, the CompositePodGroup its
	// spec.parentCompositePodGroupName names ("" for none). Never stored.
	NativeParent string `json:"-"`
	// NativeGroupKeys are, for a gang read from a Kubernetes CompositePodGroup
	// (FromCompositePodGroup), its child PodGroups that ask for a topology of their
	// own: each child's members (its role) in one domain of the node label Key,
	// within the gang's. Never stored.
	NativeGroupKeys []NativeGroupKey `json:"-"`
	// NativeSetKeys are, for a KAI PodGroup, its sub-groups that hold several leaf
	// sub-groups (roles) and require one domain of the node label Key for all of
	// them together. Never stored.
	NativeSetKeys []NativeSetKey `json:"-"`
	// RoleSets are, for a gang read from a tree of CompositePodGroups (one nested
	// in another), its composites, the root first: of each, Need of its members
	// must meet their minimums — child PodGroups (roles of MinMemberPerRole) and
	// nested composites (Sets, indexes into RoleSets). Never stored.
	RoleSets []RoleSet `json:"-"`
}

// RoleSet is one CompositePodGroup of a nested gang (PodGroupSpec.RoleSets).
type RoleSet struct {
	Name  string
	Need  int32
	Roles []string
	Sets  []int
}

// NativeGroupKey keeps the members of Role in one domain of the node label Key —
// or, Preferred, prefers to: a plan that cannot keep them so places them anywhere
// in the gang's domain.
type NativeGroupKey struct {
	Role      string
	Key       string
	Preferred bool
}

// NativeSetKey asks for the members of Roles (the leaves under the sub-group Name)
// in one domain of the node label Key together.
type NativeSetKey struct {
	Name  string
	Key   string
	Roles []string
}

// GangRecovery is how a running gang that lost members is made whole again.
type GangRecovery struct {
	// policy is Repair (the manager holds the room the lost members held, in the
	// network domain the gang runs in, for their replacements, which the
	// workload's controller creates; the gang is restarted whole if it is not whole
	// again within timeoutSeconds), RestartGang (every member is deleted at once so
	// that the workload's controller starts the gang anew, placed whole), or None
	// (the loss is only reported).
	// +kubebuilder:validation:Enum=Repair;RestartGang;None
	// +kubebuilder:default=Repair
	// +optional
	Policy RecoveryPolicy `json:"policy,omitempty"`

	// timeoutSeconds bounds each step: how long a Repair waits for the
	// replacements before the gang is restarted whole, and how long a restarted
	// gang may take to be whole again (at least 60 s: its controller recreates
	// every member) before the manager gives up (condition Repairing=False,
	// reason GaveUp; the room is no longer held).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=300
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// RecoveryPolicy is what happens to a running gang that lost members.
type RecoveryPolicy string

const (
	RecoveryRepair      RecoveryPolicy = "Repair"
	RecoveryRestartGang RecoveryPolicy = "RestartGang"
	RecoveryNone        RecoveryPolicy = "None"
)

// DefaultRecoveryTimeoutSeconds is spec.recovery.timeoutSeconds when unset.
const DefaultRecoveryTimeoutSeconds = 300

// CapacityReservationPolicy bounds the capacity a waiting gang holds.
type CapacityReservationPolicy struct {
	// ttlSeconds is how long the room is held for the gang, from the reservation's
	// creation, unless its members consume it first.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=600
	// +optional
	TTLSeconds int32 `json:"ttlSeconds,omitempty"`
}

// NetworkTopologyPolicy constrains where a gang's members land on the network.
type NetworkTopologyPolicy struct {
	// mode is required (members may only be placed within one domain of the level;
	// the gang waits otherwise) or preferred (the scheduler packs members into as
	// few domains as it can).
	// +kubebuilder:validation:Enum=required;preferred
	// +kubebuilder:default=preferred
	// +optional
	Mode NetworkTopologyMode `json:"mode,omitempty"`

	// level is the network domain, one of the topology levels of the
	// KubeNexusConfig's spec.topology.levels (by default nvlink, tor, rack, zone). With
	// required, a lower level that holds the whole gang is used when one does (one
	// ToR is better than one rack).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Level NetworkTopologyLevel `json:"level"`

	// slices split the gang, within its domain of level, into groups of members each
	// in one domain of a lower level, outermost first: [{level: block, size: 48},
	// {level: nvlink, size: 16}] puts every 48 members in one block, made of groups of
	// 16 in one NVLink domain. Each slice's level must be below the one before it (and
	// not above level), and each size must divide the one before it and the first
	// minMember; a slice is always required, whatever mode says.
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:XValidation:rule="size(self) < 2 || self[0].size % self[1].size == 0",message="slices[1].size must divide slices[0].size"
	// +kubebuilder:validation:XValidation:rule="size(self) < 3 || self[1].size % self[2].size == 0",message="slices[2].size must divide slices[1].size"
	// +listType=atomic
	// +optional
	Slices []NetworkTopologySlice `json:"slices,omitempty"`

	// subGroups put the members of a role (workload.kubenexus.io/role, or the role
	// their framework gives them) in one domain of a level of their own, within the
	// gang's domain of level: a disaggregated inference group's prefill members in
	// one NVLink domain and its decode members in another, both in one rack. The gang
	// still starts only whole (minMember, and minMemberPerRole per role). Each level
	// must not be above level.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=role
	// +optional
	SubGroups []NetworkTopologySubGroup `json:"subGroups,omitempty"`
}

// NetworkTopologySubGroup keeps one role's members in one domain of level.
type NetworkTopologySubGroup struct {
	// role is the members' role, a lower-case DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Role string `json:"role"`

	// level is a topology level of the KubeNexusConfig's spec.topology.levels.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Level NetworkTopologyLevel `json:"level"`
}

// NetworkTopologySlice is one layer of a gang's slices: size members in one domain
// of level.
type NetworkTopologySlice struct {
	// level is a topology level of the KubeNexusConfig's spec.topology.levels.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Level NetworkTopologyLevel `json:"level"`

	// size is how many members each slice holds.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +required
	Size int32 `json:"size"`
}

// NetworkTopologyMode is how strictly a network topology policy applies.
type NetworkTopologyMode string

const (
	NetworkTopologyRequired  NetworkTopologyMode = "required"
	NetworkTopologyPreferred NetworkTopologyMode = "preferred"
)

// NetworkTopologyLevel is a network domain.
type NetworkTopologyLevel string

const (
	NetworkLevelZone   NetworkTopologyLevel = "zone"
	NetworkLevelRack   NetworkTopologyLevel = "rack"
	NetworkLevelToR    NetworkTopologyLevel = "tor"
	NetworkLevelNVLink NetworkTopologyLevel = "nvlink"
)

// NUMASpreadPolicy is how a gang spreads over the NUMA cells of a node.
type NUMASpreadPolicy string

const (
	NUMASpreadPacked   NUMASpreadPolicy = "packed"
	NUMASpreadBalanced NUMASpreadPolicy = "balanced"
	NUMASpreadIsolated NUMASpreadPolicy = "isolated"
)

// PodGroupPhase is the lifecycle phase of a gang.
// +kubebuilder:validation:Enum=Pending;Scheduling;Scheduled;Running;Succeeded;Failed;Unknown
type PodGroupPhase string

const (
	// PodGroupPending: fewer than minMember members exist yet.
	PodGroupPending PodGroupPhase = "Pending"
	// PodGroupScheduling: the quorum exists and the scheduler is placing the gang.
	PodGroupScheduling PodGroupPhase = "Scheduling"
	// PodGroupScheduled: at least minMember members are bound.
	PodGroupScheduled PodGroupPhase = "Scheduled"
	// PodGroupRunning: at least minMember members are running.
	PodGroupRunning PodGroupPhase = "Running"
	// PodGroupSucceeded: at least minMember members succeeded and none is left running.
	PodGroupSucceeded PodGroupPhase = "Succeeded"
	// PodGroupFailed: the gang cannot reach minMember any more (members failed, or
	// it timed out and gave up).
	PodGroupFailed PodGroupPhase = "Failed"
	// PodGroupUnknown: the members' state cannot be determined.
	PodGroupUnknown PodGroupPhase = "Unknown"
)

// PodGroup condition types and reasons.
const (
	// PodGroupConditionScheduled is True once the gang is bound.
	PodGroupConditionScheduled = "Scheduled"

	ReasonWaitingForMembers    = "WaitingForMembers"
	ReasonInsufficientCapacity = "InsufficientCapacity"
	ReasonTimeout              = "Timeout"
	ReasonGangScheduled        = "GangScheduled"
	// ReasonTopologyUnsatisfiable: the gang's required network topology fits no
	// domain of its level; the message names the level, the need and the best domain.
	ReasonTopologyUnsatisfiable = "TopologyUnsatisfiable"

	// PodGroupConditionRepairing is True while a running gang that lost members is
	// being made whole again (its reason is the cause of the loss), and False with
	// the outcome (Repaired, Restarted, GaveUp) once that ends.
	PodGroupConditionRepairing = "Repairing"

	// Causes of a loss (the Repairing condition's reason while True).
	RepairCauseNodeLost      = "NodeLost"
	RepairCauseDeviceTainted = "DeviceTainted"
	RepairCauseEvicted       = "Evicted"
	RepairCausePreempted     = "Preempted"
	RepairCauseMemberFailed  = "MemberFailed"
	RepairCauseMemberDeleted = "MemberDeleted"

	// Outcomes of a repair (the Repairing condition's reason once False).
	RepairOutcomeRepaired  = "Repaired"
	RepairOutcomeRestarted = "Restarted"
	RepairOutcomeGaveUp    = "GaveUp"
)

// PodGroupStatus is the observed state of a gang, computed from its member pods.
type PodGroupStatus struct {
	// phase is the lifecycle phase of the gang.
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`

	// occupiedBy is the owner (namespace/name of the controller) whose pods form
	// this gang, for groups created on behalf of a workload.
	// +optional
	OccupiedBy string `json:"occupiedBy,omitempty"`

	// scheduled is the number of members bound to a node.
	// +optional
	Scheduled int32 `json:"scheduled,omitempty"`
	// running is the number of members in phase Running.
	// +optional
	Running int32 `json:"running,omitempty"`
	// succeeded is the number of members in phase Succeeded.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// failed is the number of members in phase Failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// scheduleStartTime is when the scheduler first tried to place the gang.
	// +optional
	ScheduleStartTime *metav1.Time `json:"scheduleStartTime,omitempty"`

	// observedGeneration is the spec generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// repair is the recovery of the running gang from lost members, while it lasts
	// (spec.recovery); the Repairing condition tells how the last one ended.
	// +optional
	Repair *GangRepairStatus `json:"repair,omitempty"`

	// conditions say why the gang is where it is (WaitingForMembers 3/8,
	// InsufficientCapacity, Timeout), and Repairing while lost members are replaced.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodGroup is a gang of pods scheduled all-or-nothing by kubenexus-scheduler. Pods
// join it with the label scheduling.x-k8s.io/pod-group=<name>.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName={knpg,knpgs},categories={kubenexus}
// +kubebuilder:printcolumn:name="MinMember",type=integer,JSONPath=`.spec.minMember`
// +kubebuilder:printcolumn:name="Scheduled",type=integer,JSONPath=`.status.scheduled`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.running`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].reason`
// +kubebuilder:printcolumn:name="Since",type=date,JSONPath=`.status.conditions[?(@.type=="Scheduled")].lastTransitionTime`
// +kubebuilder:printcolumn:name="Topology",type=string,JSONPath=`.spec.networkTopology.level`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the gang's requirement.
	// +required
	Spec PodGroupSpec `json:"spec"`
	// status is the gang's observed state.
	// +optional
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupList is a list of PodGroups.
//
// +kubebuilder:object:root=true
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PodGroup{}, &PodGroupList{})
}

// GangRepairStatus is a running gang's recovery from lost members.
type GangRepairStatus struct {
	// startTime is when the manager saw the gang lose members.
	// +required
	StartTime metav1.Time `json:"startTime"`

	// cause is why the first lost member was lost: NodeLost, DeviceTainted,
	// Evicted, Preempted, MemberFailed or MemberDeleted.
	// +kubebuilder:validation:MaxLength=63
	// +required
	Cause string `json:"cause"`

	// lostMembers is how many members the gang lacked for minMember when the
	// repair started.
	// +kubebuilder:validation:Minimum=1
	// +required
	LostMembers int32 `json:"lostMembers"`

	// nodes are the nodes the lost members ran on (at most 16 are listed).
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Nodes []string `json:"nodes,omitempty"`

	// domain is the network domain the room for the replacements is held in, as
	// <node label>=<value> (the smallest topology level whose domain holds every
	// remaining member, up to the gang's required level); empty: any node.
	// +kubebuilder:validation:MaxLength=317
	// +optional
	Domain string `json:"domain,omitempty"`

	// reservation is the ResourceReservation holding that room ("": none).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Reservation string `json:"reservation,omitempty"`

	// restartTime is when the manager deleted every member to restart the gang
	// whole (policy RestartGang, or a Repair past its timeout).
	// +optional
	RestartTime *metav1.Time `json:"restartTime,omitempty"`
}
