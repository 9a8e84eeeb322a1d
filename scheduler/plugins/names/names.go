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
)
