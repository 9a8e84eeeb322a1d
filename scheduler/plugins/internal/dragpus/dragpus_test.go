package dragpus

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

func TestAllocationPrintChangesWithTheNodesAllocations(t *testing.T) {
	gpu0, gpu1 := structured.MakeDeviceID("gpu.example.com", "n", "gpu-0"), structured.MakeDeviceID("gpu.example.com", "n", "gpu-1")
	other := structured.MakeDeviceID("gpu.example.com", "m", "gpu-0")
	state := func(allocated []structured.DeviceID, consumed map[structured.DeviceID]int64) allocation {
		s := &structured.AllocatedState{AllocatedDevices: sets.New(allocated...), AggregatedCapacity: structured.ConsumedCapacityCollection{}}
		for id, v := range consumed {
			s.AggregatedCapacity[id] = structured.ConsumedCapacity{resourceapi.QualifiedName("memory"): resource.NewQuantity(v, resource.BinarySI)}
		}
		return allocation{s}
	}
	ids := []structured.DeviceID{gpu0, gpu1}
	base := state(nil, map[structured.DeviceID]int64{gpu0: 20 << 30}).print(ids)
	for name, a := range map[string]allocation{
		"more of the shared GPU consumed": state(nil, map[structured.DeviceID]int64{gpu0: 40 << 30}),
		"the other GPU allocated":         state([]structured.DeviceID{gpu1}, map[structured.DeviceID]int64{gpu0: 20 << 30}),
		"the share on the other GPU":      state(nil, map[structured.DeviceID]int64{gpu1: 20 << 30}),
		"nothing consumed":                state(nil, nil),
	} {
		if a.print(ids) == base {
			t.Errorf("%s: print unchanged, the node's cards would be read from the cache", name)
		}
	}
	// Another node's allocations leave this node's print as it was.
	if got := state([]structured.DeviceID{other}, map[structured.DeviceID]int64{gpu0: 20 << 30, other: 1 << 30}).print(ids); got != base {
		t.Errorf("another node's allocation changed the print: the node's cards would be rebuilt every cycle")
	}
}
