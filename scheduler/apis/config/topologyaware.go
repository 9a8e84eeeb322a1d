package config

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TopologyAwareArgs are the arguments of the TopologyAware plugin, which spreads a
// service's replicas over zones, then nodes.
type TopologyAwareArgs struct {
	metav1.TypeMeta `json:",inline"`

	// ZoneLabel is the node label naming a node's zone (default
	// topology.kubernetes.io/zone). Nodes without it form one zone.
	ZoneLabel string `json:"zoneLabel,omitempty"`
}

// SetDefaultsTopologyAwareArgs fills unset fields.
func SetDefaultsTopologyAwareArgs(a *TopologyAwareArgs) {
	if a.ZoneLabel == "" {
		a.ZoneLabel = "topology.kubernetes.io/zone"
	}
}

// ValidateTopologyAwareArgs checks defaulted args.
func ValidateTopologyAwareArgs(path *field.Path, a *TopologyAwareArgs) field.ErrorList {
	if msgs := validation.IsQualifiedName(a.ZoneLabel); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(path.Child("zoneLabel"), a.ZoneLabel, fmt.Sprintf("must be a node label key: %v", msgs))}
	}
	return nil
}

// DecodeTopologyAwareArgs decodes, defaults and validates TopologyAware's args.
func DecodeTopologyAwareArgs(obj runtime.Object) (*TopologyAwareArgs, error) {
	return decode(obj, "TopologyAwareArgs", SetDefaultsTopologyAwareArgs, ValidateTopologyAwareArgs)
}
