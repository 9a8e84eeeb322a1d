// Package topology normalises the network topology policies of gangs, from every
// source KubeNexus accepts, into one policy the scheduler's NetworkFabric plugin
// enforces: the PodGroup's spec.networkTopology, the scheduling.kubenexus.io/co-locate
// pod annotation, Kueue's TAS annotations, KAI's topology annotations and
// LeaderWorkerSet's exclusive-topology. Pod
// annotations are untrusted input: unknown values are errors naming the key.
package topology

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-nexus/kubenexus/api/internal/untrusted"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Level is one topology level: its name and the node label naming its domains.
type Level struct {
	Name      string
	NodeLabel string
	// KeepWhole: the level's domains are kept whole for the gangs that need a whole
	// one (at most one level of a list).
	KeepWhole bool
}

// DefaultLevels are the levels when the KubeNexusConfig declares none, smallest first.
var DefaultLevels = []Level{
	{Name: string(v1alpha1.NetworkLevelNVLink), NodeLabel: v1alpha1.LabelGPUClique, KeepWhole: true},
	{Name: string(v1alpha1.NetworkLevelToR), NodeLabel: v1alpha1.LabelToR},
	{Name: string(v1alpha1.NetworkLevelRack), NodeLabel: v1alpha1.LabelRack},
	{Name: string(v1alpha1.NetworkLevelZone), NodeLabel: v1alpha1.LabelTopologyZone},
}

// Policy is a gang's network policy: required (only one domain of the level, or a
// smaller one, may hold it) or preferred (as few domains as possible), at Level (an
// index into the levels).
type Policy struct {
	Required bool
	Level    int
	// Source names where the policy came from, for messages.
	Source string
	// Slices are the gang's slice layers, outermost first (SliceLayers); an array, so
	// that policies compare with ==.
	Slices [MaxSlices]Slice
	// Groups are the roles kept each in one domain of a level of their own, within
	// the gang's (GroupLayers); an array, so that policies compare with ==.
	Groups [MaxGroups]Group
	// Native: the policy is a Kubernetes PodGroup's spec.schedulingConstraints.topology,
	// which kube-scheduler's own placement algorithm also enforces when it runs.
	Native bool
	// Label is a node label that is no level of the levels the policy was read
	// against (a native PodGroup's topology key may name any): Level is then one past
	// the last level, a level over that label alone (LevelsWith).
	Label string
}

// LevelsWith returns the levels a policy is planned over: levels, and the policy's
// own label as one more level when it names one.
func (p Policy) LevelsWith(levels []Level) []Level {
	if p.Label == "" {
		return levels
	}
	return append(levels[:len(levels):len(levels)], Level{Name: p.Label, NodeLabel: p.Label})
}

// MaxGroups is how many roles a gang may keep each in a domain of its own.
const MaxGroups = 8

// Group keeps the members of Role in one domain of Level — or, Preferred, prefers
// to; NoLevel: no domain of its own. Set, when not "", names a set of roles (a KAI
// sub-group over several leaves, a CompositePodGroup nested in another) kept
// together in one domain of SetLevel, between their own levels and the gang's. A
// Group with no Role ends the list.
type Group struct {
	Role      string
	Level     int
	Preferred bool
	Set       string
	SetLevel  int
}

// NoLevel is the Level of a Group whose role has no domain of its own, only its
// set's.
const NoLevel = -1

// GroupLayers returns the policy's sub-groups.
func (p Policy) GroupLayers() []Group {
	for i, g := range p.Groups {
		if g.Role == "" {
			return p.Groups[:i]
		}
	}
	return p.Groups[:]
}

// MaxSlices is how many layers of slices a gang may ask for (as Kueue's multi-layer
// constraints).
const MaxSlices = 3

// Slice is one layer of a gang's slices: Size members in one domain of Level (an
// index into the levels). A layer of Size 0 ends the list.
type Slice struct {
	Level int
	Size  int
}

// SliceLayers returns the policy's slice layers, outermost first.
func (p Policy) SliceLayers() []Slice {
	for i, s := range p.Slices {
		if s.Size == 0 {
			return p.Slices[:i]
		}
	}
	return p.Slices[:]
}

// PolicyOf returns the network policy of a gang member. The PodGroup's
// spec.networkTopology wins; then the pod's scheduling.kubenexus.io/co-locate
// (strict: required at the smallest level that holds the gang, preferred: preferred,
// none: no policy); then Kueue's, KAI's and LeaderWorkerSet's required and Kueue's
// and KAI's preferred annotations. A gang
// with none of them is placed preferred, up to the largest level. ok is false when
// the gang asks for no co-location, and for pods Kueue's topology-aware scheduling
// placed (PlacedByKueue).
func PolicyOf(pod *corev1.Pod, pg *v1alpha1.PodGroup, levels []Level) (p Policy, ok bool, err error) {
	top := len(levels) - 1
	if pg != nil && pg.Spec.NetworkTopology != nil {
		nt := pg.Spec.NetworkTopology
		i := levelByName(levels, string(nt.Level))
		if i < 0 {
			return Policy{}, false, fmt.Errorf("PodGroup %s: spec.networkTopology.level %q is not a topology level; the levels are %s",
				pg.Name, nt.Level, names(levels))
		}
		p := Policy{Required: nt.Mode == v1alpha1.NetworkTopologyRequired, Level: i, Source: "PodGroup " + pg.Name + " spec.networkTopology"}
		if len(nt.Slices) > MaxSlices {
			return Policy{}, false, fmt.Errorf("PodGroup %s: spec.networkTopology.slices: %d layers, at most %d", pg.Name, len(nt.Slices), MaxSlices)
		}
		for k, sl := range nt.Slices {
			l := levelByName(levels, string(sl.Level))
			if l < 0 {
				return Policy{}, false, fmt.Errorf("PodGroup %s: spec.networkTopology.slices[%d].level %q is not a topology level; the levels are %s",
					pg.Name, k, sl.Level, names(levels))
			}
			p.Slices[k] = Slice{Level: l, Size: int(sl.Size)}
		}
		if err := ValidateSlices(p.SliceLayers(), p.Level, int(pg.Spec.MinMember), levels); err != nil {
			return Policy{}, false, fmt.Errorf("PodGroup %s: spec.networkTopology.%w", pg.Name, err)
		}
		if err := groupsOf(&p, nt, levels); err != nil {
			return Policy{}, false, fmt.Errorf("PodGroup %s: %w", pg.Name, err)
		}
		return p, true, nil
	}
	if pg != nil && (pg.Spec.NativeTopologyKey != "" || len(pg.Spec.NativeGroupKeys) > 0 || len(pg.Spec.NativeSetKeys) > 0) {
		return nativePolicy(pg, levels)
	}
	if PlacedByKueue(pod) {
		return Policy{}, false, nil
	}
	p, ok, err = annotationPolicy(pod.Annotations, levels)
	if err != nil {
		return Policy{}, false, err
	}
	slices, source, err := slicesOf(pod.Annotations, levels)
	if err != nil || len(slices) == 0 {
		return p, ok, err
	}
	if !ok || p.Source == "default" {
		// Slices alone: no domain for the whole gang (Kueue's unconstrained).
		p = Policy{Level: top, Source: source}
	}
	copy(p.Slices[:], slices)
	if err := ValidateSlices(slices, p.Level, 0, levels); err != nil {
		return Policy{}, false, fmt.Errorf("annotation %s: %w", source, err)
	}
	return p, true, nil
}

// kueueTopologyKeys are Kueue's TAS annotations on a pod set.
var kueueTopologyKeys = []string{
	v1alpha1.AnnotationKueueRequiredTopology, v1alpha1.AnnotationKueuePreferredTopology,
	v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.AnnotationKueueSliceSize,
	v1alpha1.AnnotationKueueSliceConstraints, v1alpha1.AnnotationKueueUnconstrainedTopology,
}

// PlacedByKueue reports whether Kueue's topology-aware scheduling placed the pod:
// it carries Kueue's TAS annotations and was started by Kueue for an admitted
// Workload. Kueue admits such a pod set only on a flavor with a Topology, chooses
// its domains itself (slices and ranks included) and gives each pod node selectors
// for them before it lifts its kueue.x-k8s.io/topology scheduling gate. KubeNexus
// places the gang whole inside those selectors and plans no domains of its own: a
// second plan could pick other domains than Kueue's, and members pinned to
// different nodes are no longer alike. The Topology may name node labels the
// KubeNexusConfig declares no level for; they are Kueue's to read. The annotations
// only ever narrow where the tenant's own pods go.
func PlacedByKueue(pod *corev1.Pod) bool {
	if pod.Annotations[v1alpha1.AnnotationKueueWorkload] == "" {
		return false
	}
	for _, k := range kueueTopologyKeys {
		if _, ok := pod.Annotations[k]; ok {
			return true
		}
	}
	return false
}

// annotationPolicy is the policy of the pod's annotations, without slices.
func annotationPolicy(a map[string]string, levels []Level) (Policy, bool, error) {
	top := len(levels) - 1
	if v, set := a[v1alpha1.AnnotationCoLocate]; set {
		switch v1alpha1.CoLocation(v) {
		case v1alpha1.CoLocationStrict:
			return Policy{Required: true, Level: top, Source: v1alpha1.AnnotationCoLocate}, true, nil
		case v1alpha1.CoLocationPreferred:
			return Policy{Level: top, Source: v1alpha1.AnnotationCoLocate}, true, nil
		case v1alpha1.CoLocationNone:
			return Policy{}, false, nil
		default:
			return Policy{}, false, fmt.Errorf("annotation %s=%q: must be strict, preferred or none", v1alpha1.AnnotationCoLocate, untrusted.Truncate(v))
		}
	}
	for _, k := range []struct {
		key      string
		required bool
		// anyLabel: the annotation may name a node label that is no topology level
		// (LeaderWorkerSet's exclusive-topology, e.g. per node pool): the framework
		// enforces it itself, and KubeNexus adds nothing.
		anyLabel bool
	}{
		{v1alpha1.AnnotationKueueRequiredTopology, true, false},
		{v1alpha1.AnnotationKAIRequiredPlacement, true, false},
		{v1alpha1.AnnotationLWSExclusiveTopology, true, true},
		{v1alpha1.AnnotationKueuePreferredTopology, false, false},
		{v1alpha1.AnnotationKAIPreferredPlacement, false, false},
	} {
		v, set := a[k.key]
		if !set {
			continue
		}
		i := levelByLabel(levels, v)
		if i < 0 && k.anyLabel {
			continue
		}
		if i < 0 {
			return Policy{}, false, fmt.Errorf("annotation %s=%q: not the node label of a topology level; the levels' labels are %s",
				k.key, untrusted.Truncate(v), labels(levels))
		}
		return Policy{Required: k.required, Level: i, Source: k.key}, true, nil
	}
	switch v, set := a[v1alpha1.AnnotationKueueUnconstrainedTopology]; {
	case !set || v == "false":
	case v == "true":
		return Policy{}, false, nil
	default:
		return Policy{}, false, fmt.Errorf("annotation %s=%q: must be true or false", v1alpha1.AnnotationKueueUnconstrainedTopology, untrusted.Truncate(v))
	}
	return Policy{Level: top, Source: "default"}, true, nil
}

// Levels converts the KubeNexusConfig's levels (DefaultLevels when empty).
func Levels(spec []v1alpha1.TopologyLevel) []Level {
	if len(spec) == 0 {
		return DefaultLevels
	}
	out := make([]Level, 0, len(spec))
	keep := make([]*bool, 0, len(spec))
	for _, l := range spec {
		out = append(out, Level{Name: l.Name, NodeLabel: l.NodeLabel})
		keep = append(keep, l.KeepWhole)
	}
	ResolveKeepWhole(out, keep)
	return out
}

// ResolveKeepWhole sets KeepWhole on levels from each level's keepWhole (nil:
// unset): the first level set true is kept whole; when none is, the level read
// from nvidia.com/gpu.clique, unless it is set false.
func ResolveKeepWhole(levels []Level, keep []*bool) {
	for i := range levels {
		if keep[i] != nil && *keep[i] {
			levels[i].KeepWhole = true
			return
		}
	}
	for i := range levels {
		if levels[i].NodeLabel == v1alpha1.LabelGPUClique && keep[i] == nil {
			levels[i].KeepWhole = true
			return
		}
	}
}

// KeptWhole returns the index of the level kept whole, -1 when none is.
func KeptWhole(levels []Level) int {
	for i, l := range levels {
		if l.KeepWhole {
			return i
		}
	}
	return -1
}

func levelByName(levels []Level, name string) int {
	for i, l := range levels {
		if l.Name == name {
			return i
		}
	}
	return -1
}

// nativePolicy is the policy of a Kubernetes PodGroup's or CompositePodGroup's
// spec.schedulingConstraints.topology (required), with a CompositePodGroup's
// children's keys as sub-groups; or of a KAI PodGroup's spec.topologyConstraint
// (required, or preferred), with its leaf sub-groups' required levels as sub-groups
// and its sub-groups over several leaves (and a tree's nested composites) as sets:
// their roles together in one domain of the set's level, one set per role below the
// gang's level. A key the KubeNexusConfig declares no level for
// is a level of its own over that label; a child's key must be a declared level or
// the gang's own key, at or below the gang's level. A gang with no key of its own
// keeps its children's sub-groups anywhere in the cluster.
func nativePolicy(pg *v1alpha1.PodGroup, levels []Level) (Policy, bool, error) {
	w := nativeWords
	if pg.APIVersion == v1alpha1.KAIPodGroupGVK.GroupVersion().String() {
		w = kaiWords
	}
	kind := "PodGroup"
	if pg.Kind != "" {
		kind = pg.Kind
	}
	p := Policy{Level: len(levels) - 1, Native: w.native, Source: kind + " " + pg.Name + " " + w.field}
	if key := pg.Spec.NativeTopologyKey; key != "" {
		p.Required, p.Level = !pg.Spec.NativeTopologyPreferred, levelByLabel(levels, key)
		if p.Level < 0 {
			// A label the KubeNexusConfig declares no level for: a level of its own.
			p.Level, p.Label = len(levels), key
		}
	}
	if len(pg.Spec.NativeGroupKeys) > MaxGroups {
		return Policy{}, false, fmt.Errorf("%s %s: %d %ss ask for a topology of their own, at most %d", kind, pg.Name, len(pg.Spec.NativeGroupKeys), w.child, MaxGroups)
	}
	levelOf := func(what, key string, mayBeAbove bool) (int, error) {
		l := levelByLabel(levels, key)
		if l < 0 && p.Label != "" && key == p.Label {
			l = p.Level
		}
		switch {
		case l < 0:
			return 0, fmt.Errorf("%s %s: %s: %s %q is the node label of no topology level; the levels are %s",
				kind, pg.Name, what, w.childField, untrusted.Truncate(key), names(levels))
		case l > p.Level && !mayBeAbove:
			return 0, fmt.Errorf("%s %s: %s: %s %s is above the %s's (%s): a %s must fit in the %s's domain",
				kind, pg.Name, what, w.childField, key, w.whole, pg.Spec.NativeTopologyKey, w.short, w.whole)
		}
		return l, nil
	}
	n := 0
	for _, g := range pg.Spec.NativeGroupKeys {
		l, err := levelOf(w.child+" "+g.Role, g.Key, false)
		switch {
		case err != nil && g.Preferred:
			continue // a preference no level can honour asks nothing
		case err != nil:
			return Policy{}, false, err
		}
		p.Groups[n] = Group{Role: g.Role, Level: l, Preferred: g.Preferred}
		n++
	}
	for _, set := range pg.Spec.NativeSetKeys {
		l, err := levelOf(w.child+" "+set.Name, set.Key, true)
		if err != nil {
			return Policy{}, false, err
		}
		if p.Required && l >= p.Level {
			continue // the gang's own domain holds them all
		}
		for _, role := range set.Roles {
			i := slices.IndexFunc(p.Groups[:n], func(g Group) bool { return g.Role == role })
			if i < 0 {
				if n == MaxGroups {
					return Policy{}, false, fmt.Errorf("%s %s: %s %s: more than %d %ss ask for a topology of their own or their %s's",
						kind, pg.Name, w.set, untrusted.Truncate(set.Name), MaxGroups, w.leaf, w.set)
				}
				i = n
				p.Groups[i] = Group{Role: role, Level: NoLevel}
				n++
			}
			g := &p.Groups[i]
			switch {
			case g.Set != "":
				// One set per role below the gang's level: the planner nests no deeper.
				return Policy{}, false, fmt.Errorf("%s %s: %s %s is in %s %s (%s %s) and in %s %s (%s %s), both below the %s's level: "+
					"KubeNexus keeps a %s in one %s below the %s's level; require the outer one's level for the %s (%s)",
					kind, pg.Name, w.leaf, untrusted.Truncate(role), w.set, untrusted.Truncate(g.Set), w.childField, p.LevelsWith(levels)[g.SetLevel].NodeLabel, w.set, untrusted.Truncate(set.Name), w.childField, set.Key,
					w.whole, w.leaf, w.set, w.whole, w.whole, w.require)
			case g.Level > l:
				return Policy{}, false, fmt.Errorf("%s %s: %s %s: %s %s is above its %s %s's (%s): a %s must fit in its %s's domain",
					kind, pg.Name, w.leaf, untrusted.Truncate(role), w.childField, p.LevelsWith(levels)[g.Level].NodeLabel, w.set, untrusted.Truncate(set.Name), set.Key, w.leaf, w.set)
			}
			g.Set, g.SetLevel = set.Name, l
		}
	}
	return p, true, nil
}

// nativeWording names a gang's topology fields in its own API, for messages.
type nativeWording struct {
	field, child, short, childField, whole string
	// require is the field that requires a level of the whole.
	require string
	// set names a node that holds several leaves, leaf one.
	set, leaf string
	// native: kube-scheduler's own placement algorithm enforces the constraint too.
	native bool
}

var (
	nativeWords = nativeWording{field: "spec.schedulingConstraints.topology", require: "spec.schedulingConstraints.topology", child: "child PodGroup", short: "child",
		childField: "spec.schedulingConstraints.topology key", whole: "composite", native: true,
		set: "nested CompositePodGroup", leaf: "PodGroup"}
	kaiWords = nativeWording{field: "spec.topologyConstraint", require: "spec.topologyConstraint.requiredTopologyLevel", child: "sub-group", short: "sub-group",
		childField: "topologyConstraint.requiredTopologyLevel", whole: "PodGroup",
		set: "sub-group", leaf: "leaf sub-group"}
)

func levelByLabel(levels []Level, label string) int {
	for i, l := range levels {
		if l.NodeLabel == label {
			return i
		}
	}
	return -1
}

func names(levels []Level) string {
	var out []string
	for _, l := range levels {
		out = append(out, l.Name)
	}
	return strings.Join(out, ", ")
}

func labels(levels []Level) string {
	var out []string
	for _, l := range levels {
		out = append(out, l.NodeLabel)
	}
	return strings.Join(out, ", ")
}

// DomainsOf returns a node's domain at each level: the value of the level's label,
// or "" where the node has none (a domain of its own).
func DomainsOf(levels []Level, nodeLabels map[string]string) []string {
	out := make([]string, len(levels))
	for i, l := range levels {
		out[i] = nodeLabels[l.NodeLabel]
	}
	return out
}
