package config

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// Every plugin's args decode the same way: nil gives the defaults, a field the
// plugin does not have is refused with the args' kind and the field named.
func TestEveryDecoderRefusesUnknownFields(t *testing.T) {
	decoders := map[string]func(runtime.Object) (any, error){
		"BackfillArgs":              func(o runtime.Object) (any, error) { return DecodeBackfillArgs(o) },
		"BindingBackpressureArgs":   func(o runtime.Object) (any, error) { return DecodeBindingBackpressureArgs(o) },
		"CoschedulingArgs":          func(o runtime.Object) (any, error) { return DecodeCoschedulingArgs(o) },
		"GangPreemptionArgs":        func(o runtime.Object) (any, error) { return DecodeGangPreemptionArgs(o) },
		"NetworkFabricArgs":         func(o runtime.Object) (any, error) { return DecodeNetworkFabricArgs(o) },
		"NUMATopologyArgs":          func(o runtime.Object) (any, error) { return DecodeNUMATopologyArgs(o) },
		"ProfileClassifierArgs":     func(o runtime.Object) (any, error) { return DecodeProfileClassifierArgs(o) },
		"ResourceFragmentationArgs": func(o runtime.Object) (any, error) { return DecodeResourceFragmentationArgs(o) },
		"ResourceReservationArgs":   func(o runtime.Object) (any, error) { return DecodeResourceReservationArgs(o) },
		"TenantHardwareArgs":        func(o runtime.Object) (any, error) { return DecodeTenantHardwareArgs(o) },
		"TopologyAwareArgs":         func(o runtime.Object) (any, error) { return DecodeTopologyAwareArgs(o) },
		"VRAMArgs":                  func(o runtime.Object) (any, error) { return DecodeVRAMArgs(o) },
		"WorkloadAwareArgs":         func(o runtime.Object) (any, error) { return DecodeWorkloadAwareArgs(o) },
	}
	for kind, decode := range decoders {
		if args, err := decode(nil); err != nil || args == nil {
			t.Errorf("%s from nil: %v, %v; want the defaults", kind, args, err)
		}
		_, err := decode(&runtime.Unknown{Raw: []byte(`{"notAField": 1}`)})
		if err == nil || !strings.Contains(err.Error(), kind) || !strings.Contains(err.Error(), `unknown field "notAField"`) {
			t.Errorf("%s with an unknown field: %v; want an error naming %s and the field", kind, err, kind)
		}
	}
}
