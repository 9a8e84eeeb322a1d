package config

import (
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-nexus/kubenexus/api/topology"
)

// NetworkFabricArgs are the arguments of the NetworkFabric plugin, which places each
// gang by one plan: the smallest topology domain that holds all its members.
type NetworkFabricArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Levels are the topology levels, smallest domain first, each read from a node
	// label (default: nvlink nvidia.com/gpu.clique, tor network.kubenexus.io/tor, rack
	// network.kubenexus.io/rack, zone topology.kubernetes.io/zone).
	Levels []TopologyLevel `json:"levels,omitempty"`
}

// TopologyLevel is one topology level.
type TopologyLevel struct {
	Name      string `json:"name"`
	NodeLabel string `json:"nodeLabel"`
	// KeepWhole marks the level whose domains are kept whole for gangs that need a
	// whole one (nil: the level read from nvidia.com/gpu.clique, unless another
	// level sets it); at most one level sets it.
	KeepWhole *bool `json:"keepWhole,omitempty"`
}

// DefaultTopologyLevels mirror the KubeNexusConfig's default spec.topology.levels.
var DefaultTopologyLevels = []TopologyLevel{
	{Name: "nvlink", NodeLabel: "nvidia.com/gpu.clique"},
	{Name: "tor", NodeLabel: "network.kubenexus.io/tor"},
	{Name: "rack", NodeLabel: "network.kubenexus.io/rack"},
	{Name: "zone", NodeLabel: "topology.kubernetes.io/zone"},
}

// Levels converts args' topology levels to the ones api/topology works with.
func Levels(ls []TopologyLevel) []topology.Level {
	out := make([]topology.Level, 0, len(ls))
	keep := make([]*bool, 0, len(ls))
	for _, l := range ls {
		out = append(out, topology.Level{Name: l.Name, NodeLabel: l.NodeLabel})
		keep = append(keep, l.KeepWhole)
	}
	topology.ResolveKeepWhole(out, keep)
	return out
}

// SetDefaultsNetworkFabricArgs fills unset fields.
func SetDefaultsNetworkFabricArgs(a *NetworkFabricArgs) {
	if len(a.Levels) == 0 {
		a.Levels = append([]TopologyLevel(nil), DefaultTopologyLevels...)
	}
}

var levelName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateNetworkFabricArgs checks defaulted args.
func ValidateNetworkFabricArgs(path *field.Path, a *NetworkFabricArgs) field.ErrorList {
	return validateLevels(path, a.Levels)
}

// validateLevels checks topology levels: DNS-label names and node label keys, each
// once.
func validateLevels(path *field.Path, levels []TopologyLevel) field.ErrorList {
	var errs field.ErrorList
	names, labels := map[string]bool{}, map[string]bool{}
	kept := -1
	for i, l := range levels {
		p := path.Child("levels").Index(i)
		if !levelName.MatchString(l.Name) || len(l.Name) > 63 {
			errs = append(errs, field.Invalid(p.Child("name"), l.Name, "must be a lower-case DNS label (e.g. rack)"))
		}
		if names[l.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), l.Name))
		}
		names[l.Name] = true
		if msgs := validation.IsQualifiedName(l.NodeLabel); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("nodeLabel"), l.NodeLabel, fmt.Sprintf("must be a node label key: %v", msgs)))
		}
		if labels[l.NodeLabel] {
			errs = append(errs, field.Duplicate(p.Child("nodeLabel"), l.NodeLabel))
		}
		labels[l.NodeLabel] = true
		if l.KeepWhole != nil && *l.KeepWhole {
			if kept >= 0 {
				errs = append(errs, field.Invalid(p.Child("keepWhole"), true, fmt.Sprintf("at most one level may be kept whole; levels[%d] (%s) is already", kept, levels[kept].Name)))
			} else {
				kept = i
			}
		}
	}
	return errs
}

// DecodeNetworkFabricArgs decodes, defaults and validates NetworkFabric's args.
func DecodeNetworkFabricArgs(obj runtime.Object) (*NetworkFabricArgs, error) {
	return decode(obj, "NetworkFabricArgs", SetDefaultsNetworkFabricArgs, ValidateNetworkFabricArgs)
}

// CheckNetworkFabricArgs decodes, defaults and validates NetworkFabric's args as the scheduler
// would, reporting errors under path (the KubeNexusConfig field they come from).
func CheckNetworkFabricArgs(obj runtime.Object, path *field.Path) (*NetworkFabricArgs, field.ErrorList) {
	return check(obj, path, SetDefaultsNetworkFabricArgs, ValidateNetworkFabricArgs)
}
