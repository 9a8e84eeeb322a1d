package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kube-nexus/kubenexus/api/internal/untrusted"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// slicesOf reads the slice layers a pod's annotations ask for — Kueue's
// podset-slice-required-topology with podset-slice-size, or its multi-layer
// podset-slice-required-topology-constraints (not both) — and the annotation they
// came from. Values are untrusted: errors name the annotation and what is allowed.
func slicesOf(a map[string]string, levels []Level) ([]Slice, string, error) {
	multi, hasMulti := a[v1alpha1.AnnotationKueueSliceConstraints]
	label, hasLabel := a[v1alpha1.AnnotationKueueSliceRequiredTopology]
	size, hasSize := a[v1alpha1.AnnotationKueueSliceSize]
	switch {
	case hasMulti && (hasLabel || hasSize):
		return nil, "", fmt.Errorf("annotations %s and %s/%s: set one or the other, not both",
			v1alpha1.AnnotationKueueSliceConstraints, v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.AnnotationKueueSliceSize)
	case hasMulti:
		s, err := parseSliceConstraints(multi, levels)
		return s, v1alpha1.AnnotationKueueSliceConstraints, err
	case hasSize && !hasLabel:
		return nil, "", fmt.Errorf("annotation %s is set without %s: a slice needs the node label of its domain",
			v1alpha1.AnnotationKueueSliceSize, v1alpha1.AnnotationKueueSliceRequiredTopology)
	case !hasLabel:
		return nil, "", nil
	}
	l := levelByLabel(levels, label)
	if l < 0 {
		return nil, "", fmt.Errorf("annotation %s=%q: not the node label of a topology level; the levels' labels are %s",
			v1alpha1.AnnotationKueueSliceRequiredTopology, untrusted.Truncate(label), labels(levels))
	}
	if !hasSize {
		return nil, "", fmt.Errorf("annotation %s is set without %s: the number of members per slice is needed",
			v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.AnnotationKueueSliceSize)
	}
	n, err := sliceSize(size)
	if err != nil {
		return nil, "", fmt.Errorf("annotation %s=%q: %w", v1alpha1.AnnotationKueueSliceSize, untrusted.Truncate(size), err)
	}
	return []Slice{{Level: l, Size: n}}, v1alpha1.AnnotationKueueSliceRequiredTopology, nil
}

// parseSliceConstraints reads Kueue's multi-layer list: [{"topology": <node label>,
// "size": <members, a number or a string of one>}, …], outermost first.
func parseSliceConstraints(v string, levels []Level) ([]Slice, error) {
	var entries []struct {
		Topology string          `json:"topology"`
		Size     json.RawMessage `json:"size"`
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	key := v1alpha1.AnnotationKueueSliceConstraints
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("annotation %s=%q: not a JSON list of {\"topology\": <node label>, \"size\": <members>}: %s",
			key, untrusted.Truncate(v), untrusted.Truncate(err.Error()))
	}
	if len(entries) == 0 || len(entries) > MaxSlices {
		return nil, fmt.Errorf("annotation %s: %d layers; 1 to %d are allowed", key, len(entries), MaxSlices)
	}
	out := make([]Slice, len(entries))
	for i, e := range entries {
		l := levelByLabel(levels, e.Topology)
		if l < 0 {
			return nil, fmt.Errorf("annotation %s: layer %d: topology %q is not the node label of a topology level; the levels' labels are %s",
				key, i, untrusted.Truncate(e.Topology), labels(levels))
		}
		raw := string(bytes.Trim(e.Size, `"`))
		n, err := sliceSize(raw)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: layer %d: size %s: %w", key, i, untrusted.Truncate(string(e.Size)), err)
		}
		out[i] = Slice{Level: l, Size: n}
	}
	return out, nil
}

// sliceSize parses a number of members per slice: a whole number from 1 to 100000.
func sliceSize(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100000 {
		return 0, fmt.Errorf("must be a whole number from 1 to 100000")
	}
	return n, nil
}

// ValidateSlices checks slice layers against a gang whose whole domain is at level
// outer and that has the given number of members (0: not known here): each layer's level below
// the one before it and not above outer, each size at least 1 and dividing the one
// before it, and the outermost dividing the members. The error names the layer
// (slices[i]) and what is allowed.
func ValidateSlices(slices []Slice, outer, members int, levels []Level) error {
	name := func(l int) string {
		if l >= 0 && l < len(levels) {
			return levels[l].Name
		}
		return "cluster"
	}
	for i, l := range slices {
		switch {
		case l.Size < 1:
			return fmt.Errorf("slices[%d].size %d: must be at least 1", i, l.Size)
		case i == 0 && l.Level > outer:
			return fmt.Errorf("slices[0].level %s is above the level that holds the whole gang (%s): a slice must fit in it", name(l.Level), name(outer))
		case i > 0 && l.Level >= slices[i-1].Level:
			return fmt.Errorf("slices[%d].level %s must be below slices[%d].level (%s)", i, name(l.Level), i-1, name(slices[i-1].Level))
		case i > 0 && slices[i-1].Size%l.Size != 0:
			return fmt.Errorf("slices[%d].size %d must divide slices[%d].size (%d)", i, l.Size, i-1, slices[i-1].Size)
		case i == 0 && members > 0 && members%l.Size != 0:
			return fmt.Errorf("slices[0].size %d must divide the gang's %d members", l.Size, members)
		}
	}
	return nil
}

// DescribeSlices names the layers, e.g. "slices of 48 in one block, of 16 in one
// nvlink".
func DescribeSlices(slices []Slice, levels []Level) string {
	parts := make([]string, len(slices))
	for i, l := range slices {
		name := "cluster"
		if l.Level < len(levels) {
			name = levels[l.Level].Name
		}
		parts[i] = fmt.Sprintf("of %d in one %s", l.Size, name)
	}
	return "slices " + strings.Join(parts, ", ")
}

// groupsOf reads a PodGroup's spec.networkTopology.subGroups into p: each level
// declared and not above the gang's, at most MaxGroups, no role twice.
func groupsOf(p *Policy, nt *v1alpha1.NetworkTopologyPolicy, levels []Level) error {
	if len(nt.SubGroups) > MaxGroups {
		return fmt.Errorf("spec.networkTopology.subGroups: %d sub-groups, at most %d", len(nt.SubGroups), MaxGroups)
	}
	if len(nt.SubGroups) > 0 && len(p.SliceLayers()) > 0 {
		return fmt.Errorf("spec.networkTopology: set slices or subGroups, not both")
	}
	seen := map[string]bool{}
	for i, g := range nt.SubGroups {
		l := levelByName(levels, string(g.Level))
		switch {
		case g.Role == "" || seen[g.Role]:
			return fmt.Errorf("spec.networkTopology.subGroups[%d].role %q: must be set, once per role", i, untrusted.Truncate(g.Role))
		case l < 0:
			return fmt.Errorf("spec.networkTopology.subGroups[%d].level %q is not a topology level; the levels are %s", i, g.Level, names(levels))
		case l > p.Level:
			return fmt.Errorf("spec.networkTopology.subGroups[%d].level %s is above spec.networkTopology.level (%s): a sub-group must fit in the gang's domain", i, g.Level, levels[p.Level].Name)
		}
		seen[g.Role] = true
		p.Groups[i] = Group{Role: g.Role, Level: l}
	}
	return nil
}
