package feasibility

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// Bounded is a running pod with a runtime bound.
type Bounded struct {
	Pod      types.NamespacedName
	Ends     time.Time
	Requests corev1.ResourceList
}

// Held is room a ResourceReservation holds on a node for its owner's pods.
type Held struct {
	Reservation types.NamespacedName
	Node        string
	// Owner is the PodGroup the room is held for (its namespace and name); empty for
	// an owner of another kind.
	Owner types.NamespacedName
	// Requests is what the unconsumed slots hold together; Expires when the
	// reservation lets the room go (zero: when its owner consumes it).
	Requests corev1.ResourceList
	Expires  time.Time
}

// Workload is what a Kueue Workload asks for, as the check reads it.
type Workload struct {
	// ClusterQueue admitted the workload's quota; Tenant is its namespace's tier.
	ClusterQueue string
	Tenant       v1alpha1.TenantTier
	// Gang is the PodGroup the pods belong to, whose ResourceReservations hold room
	// they may use (nil: none).
	Gang    *types.NamespacedName
	PodSets []PodSet
	// PlacedOn are the nodes the gang's members already placed run on (one entry
	// per member): as in the scheduler's gang plan, the pods must join their domain
	// of the required level.
	PlacedOn []string
}

// PodSet is one group of identical pods of a workload.
type PodSet struct {
	Name  string
	Count int
	// Template is the pods' template (requests, node selector and affinity,
	// tolerations, labels).
	Template corev1.PodTemplateSpec
	// Flavors are the ResourceFlavors Kueue assigned the pod set; their node labels
	// restrict its nodes.
	Flavors []string
	// RequiredTopology is the node label of the topology level all its pods must
	// share (Kueue's TAS required topology); "" for none.
	RequiredTopology string
	// Slices are the pod set's slice layers, outermost first (Kueue's TAS slices):
	// the pods in groups, each group in one domain of its layer's node label.
	Slices []SliceLayer
	// GroupTopology is the node label of the domain that must hold all the pod
	// set's pods inside the workload's (a sub-group: a PodGroup's
	// spec.networkTopology.subGroups for the pods' role); "" for none. Role names
	// the sub-group (else Name).
	GroupTopology, Role string
	// Set names the roles' set the pod set's role is kept with in one domain of the
	// node label SetTopology, inside the workload's (a KAI sub-group over several
	// leaves, a CompositePodGroup nested in another); "" for none.
	Set, SetTopology string
	// DRAGPUs are the whole GPUs each pod asks for through its ResourceClaim
	// templates (hardware.WholeGPUs; a share of a GPU is not counted).
	DRAGPUs int64
}

// Decision is the answer, as one message (the check's) and as the facts it is made
// of (for explain, which says each once, on its own line).
type Decision struct {
	Fits    bool
	Message string
	// Shapes says what the pods ask for ("8 × 8 nvidia.com/gpu"); Level is the level
	// whose one domain must hold them ("cluster" when none is required).
	Shapes, Level string
	// Domains hold the pods when they fit (now, or at Start): domains of Level, named
	// by Level's node label.
	Domains []string
	// Anchored is the domain of Level the gang's placed members run in, when they run
	// in one ("": none placed, or no required level); Free then counts its nodes only.
	Anchored string
	// Short says why no domain of Level holds them (nil when they fit, or when no
	// node may take them at all).
	Short *placement.Shortage
	// SliceShort says, for a pod set in slices, which layer no domain holds enough
	// slices of, and the most the best domain holds.
	SliceShort *placement.SliceShortage
	// Slices describes a pod set's slices ("slices of 48 in one block, of 16 in
	// one nvlink"; "" for none), and SliceWhy why no domain holds them.
	Slices, SliceWhy string
	// Groups describes a workload's sub-groups ("prefill in one nvlink, decode in
	// one nvlink"; "" for none); GroupShort and GroupWhy say which sub-group no
	// domain holds and the most of its members the best domain holds.
	Groups     string
	GroupShort *placement.GroupShortage
	GroupWhy   string
	// Nodes is the number of nodes; Eligible those the pods may use (node selector
	// and affinity, taints, flavors, HardwareTiers); TierRefused those that only a
	// HardwareTier keeps them from, and RefusingTiers those tiers' names.
	Nodes, Eligible, TierRefused int
	RefusingTiers                []string
	// GPUMemory is the most GPU memory per GPU a pod set asks for, in bytes (0: none);
	// MemoryRefused the nodes otherwise open whose GPUs have less, by their labels or
	// their DRA devices' memory capacity (nodes that publish neither are not refused
	// here).
	GPUMemory     int64
	MemoryRefused int
	// NUMARefused are the nodes otherwise open whose NUMA cells could not hold a pod
	// under its NUMA policy even with no other pod on them; NUMAWhy says why for the
	// first of them ("node a: single-numa: no NUMA cell with 48 CPUs free; best cell
	// has 32 CPUs").
	NUMARefused int
	NUMAWhy     string
	// Resource is the pods' scarcest extended resource (else CPU); Free how much of
	// it is free on the nodes they may use and Need how much they ask for, in
	// milli-units.
	Resource   corev1.ResourceName
	Free, Need int64
	// Start is the earliest time the pods fit if running pods end at their runtime
	// bounds and reservations of others at their expiry (zero: they fit now, or no
	// such time is known); StartWhen says which of them frees the room by then.
	Start     time.Time
	StartWhen string
}

// Anywhere is the pseudo-level that holds every node: a workload without a required
// topology fits when the whole cluster holds it.
const Anywhere = placement.AnyDomain

// Quantity says an amount of Resource in its unit ("64", "3500m").
func (d *Decision) Quantity(v int64) string {
	if d.Resource == corev1.ResourceCPU {
		return fmt.Sprintf("%dm", v)
	}
	return fmt.Sprint(v / 1000)
}

// Fragmented reports that the free amount of the scarcest resource would hold the
// pods were it not in pieces.
func (d *Decision) Fragmented() bool { return d.Free >= d.Need }

// freeNote says how much of the scarcest resource is free on the nodes the pods may
// use, and that it would be enough were it not in pieces.
func (d *Decision) freeNote() string {
	if d.Fragmented() {
		return fmt.Sprintf("; %s %s free on those nodes, but fragmented", d.Quantity(d.Free), d.Resource)
	}
	return fmt.Sprintf("; %s %s free on those nodes, %s needed", d.Quantity(d.Free), d.Resource, d.Quantity(d.Need))
}
