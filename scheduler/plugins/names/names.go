// Package names holds the registered names of the KubeNexus scheduler plugins. It is
// a leaf package: the operator's configuration renderer imports it without pulling
// in plugin code.
package names

const (
	ProfileClassifier     = "ProfileClassifier"
	Coscheduling          = "Coscheduling"
	WorkloadAware         = "WorkloadAware"
	TopologyAware         = "TopologyAware"
	NetworkFabric         = "NetworkFabric"
	ResourceFragmentation = "ResourceFragmentation"
	TenantHardware        = "TenantHardware"
	NUMATopology          = "NUMATopology"
	VRAM                  = "VRAM"
	ResourceReservation   = "ResourceReservation"
	Backfill              = "Backfill"
	GangPreemption        = "GangPreemption"
	BindingBackpressure   = "BindingBackpressure"
)

// Implemented lists, in registration order, the plugins kubenexus-scheduler
// registers today. The operator renders only these into the scheduler configuration:
// a profile naming an unregistered plugin would stop the scheduler from starting.
// registry_test.go keeps this list and RegistryOptions in step.
var Implemented = []string{ProfileClassifier, Coscheduling, WorkloadAware, TopologyAware, NetworkFabric, ResourceFragmentation, TenantHardware, NUMATopology, VRAM, ResourceReservation, Backfill, GangPreemption, BindingBackpressure}
