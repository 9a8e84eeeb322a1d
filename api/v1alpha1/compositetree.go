package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Nested CompositePodGroups: a CompositePodGroup may name another as its parent, so
// that a workload is a tree — a serving deployment whose replicas are composites of
// a prefill and a decode PodGroup, each replica needing both, the deployment needing
// some of its replicas. KubeNexus reads a tree whose root is of gang policy as one
// gang keyed by the root: its leaves are the PodGroups (each a role with its
// minCount), and each composite in it a set of its children of which minGroupCount
// must be met (PodGroupSpec.RoleSets).

// MaxCompositeDepth is how many CompositePodGroups deep a tree is read (the root
// counts); MaxCompositeNodes how many composites it may hold.
const (
	MaxCompositeDepth = 4
	MaxCompositeNodes = 64
)

// CompositeRoot is the gang a Kubernetes PodGroup pg belongs to through the
// CompositePodGroups above it (composite reads one by name; nil: not seen yet): the
// highest composite of gang policy on its chain of parents, or one not seen yet
// (the gang waits for it). Going up stops below a basic composite, whose children
// are scheduled each on its own; a PodGroup whose parent is basic, or that names
// none, is in no composite (ok false). A chain deeper than MaxCompositeDepth, or one
// that comes back to a composite already on it, ends at the composite where that is
// found: reading that gang says why (ReadCompositeTree).
func CompositeRoot(pg *unstructured.Unstructured, composite func(name string) *unstructured.Unstructured) (string, bool) {
	name := ParentCompositeOf(pg)
	if name == "" {
		return "", false
	}
	last := ""
	seen := map[string]bool{}
	for depth := 0; ; depth++ {
		c := composite(name)
		if c == nil {
			return name, true
		}
		g := CompositeGangOf(c)
		switch {
		case !g.Gang:
			return last, last != ""
		case g.Parent == "" || seen[name] || depth >= MaxCompositeDepth:
			return name, true
		}
		seen[name] = true
		last, name = name, g.Parent
	}
}

// +kubebuilder:object:generate=false

// CompositeTree reads the CompositePodGroups and Kubernetes PodGroups whose
// spec.parentCompositePodGroupName names a composite (its children).
type CompositeTree func(composite string) (composites []*unstructured.Unstructured, podGroups []*unstructured.Unstructured)

// ReadCompositeTree reads the gang of root, a CompositePodGroup of gang policy,
// with everything under it (children): FromCompositePodGroup when its children are
// all PodGroups; otherwise every PodGroup of the tree is a role with its minCount
// (NativeGroupKeys for those with a topology key), every composite a RoleSet whose
// minGroupCount of its children must be met (a topology key: NativeSetKeys, for all
// its leaves together), and minMember the fewest members that meet the root: the
// minGroupCount children of each set that need the fewest. The tree fails to read,
// naming the composite, when one of its composites is basic, has a minGroupCount
// below 1, is nested deeper than MaxCompositeDepth or in a cycle, or when it holds
// more than MaxCompositeNodes composites.
func ReadCompositeTree(root *unstructured.Unstructured, children CompositeTree) (*PodGroup, error) {
	kids, groups := children(root.GetName())
	if len(kids) == 0 {
		return FromCompositePodGroup(root, CompositeChildren(groups, root.GetName()))
	}
	pg, err := FromCompositePodGroup(root, nil)
	if err != nil {
		return nil, err
	}
	t := &treeReader{ns: root.GetNamespace(), children: children, pg: pg, onPath: map[string]bool{}}
	pg.Spec.MinMemberPerRole = map[string]int32{}
	pg.Spec.MinRolesMet = 0
	pg.Spec.NativeGroupKeys = nil
	cost, _, err := t.set(root, 1)
	if err != nil {
		return nil, err
	}
	if cost > MaxCompositeMembers {
		return nil, fmt.Errorf("%s: its tree's minCounts add up to %d members; at most %d", compositeName(root), cost, MaxCompositeMembers)
	}
	pg.Spec.MinMember = int32(cost)
	return pg, nil
}

// treeReader walks a composite tree into pg.
type treeReader struct {
	ns       string
	children CompositeTree
	pg       *PodGroup
	onPath   map[string]bool
}

func compositeName(u *unstructured.Unstructured) string {
	return fmt.Sprintf("CompositePodGroup %s/%s (%s)", u.GetNamespace(), u.GetName(), CompositePodGroupGVK.GroupVersion())
}

// set adds the composite u at depth (the root is 1) and everything under it, and
// returns the fewest members that meet it and the PodGroups (roles) under it.
func (t *treeReader) set(u *unstructured.Unstructured, depth int) (int64, []string, error) {
	name := u.GetName()
	switch {
	case t.onPath[name]:
		return 0, nil, fmt.Errorf("%s: spec.parentCompositePodGroupName: it is its own ancestor", compositeName(u))
	case depth > MaxCompositeDepth:
		return 0, nil, fmt.Errorf("%s: nested %d CompositePodGroups deep; at most %d are read", compositeName(u), depth, MaxCompositeDepth)
	case len(t.pg.Spec.RoleSets) >= MaxCompositeNodes:
		return 0, nil, fmt.Errorf("CompositePodGroup %s/%s (%s): its tree holds more than %d CompositePodGroups", t.ns, t.pg.Name, CompositePodGroupGVK.GroupVersion(), MaxCompositeNodes)
	}
	in := &schedulingv1alpha3.CompositePodGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, in); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", compositeName(u), err)
	}
	g := in.Spec.SchedulingPolicy.Gang
	switch {
	case g == nil:
		return 0, nil, fmt.Errorf("%s: spec.schedulingPolicy is basic inside the gang of CompositePodGroup %s: a composite nested in a gang must be of gang policy too", compositeName(u), t.pg.Name)
	case g.MinGroupCount < 1:
		return 0, nil, fmt.Errorf("%s: spec.schedulingPolicy.gang.minGroupCount is %d; it must be at least 1", compositeName(u), g.MinGroupCount)
	}
	t.onPath[name] = true
	defer delete(t.onPath, name)
	index := len(t.pg.Spec.RoleSets)
	t.pg.Spec.RoleSets = append(t.pg.Spec.RoleSets, RoleSet{Name: name, Need: g.MinGroupCount})
	kids, groups := t.children(name)
	slices.SortFunc(kids, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	var costs []int64
	var leaves []string
	for _, kid := range CompositeChildren(groups, name) {
		t.pg.Spec.MinMemberPerRole[kid.Name] = kid.Spec.MinMember
		t.pg.Spec.RoleSets[index].Roles = append(t.pg.Spec.RoleSets[index].Roles, kid.Name)
		if kid.Spec.NativeTopologyKey != "" {
			t.pg.Spec.NativeGroupKeys = append(t.pg.Spec.NativeGroupKeys, NativeGroupKey{Role: kid.Name, Key: kid.Spec.NativeTopologyKey})
		}
		costs = append(costs, int64(kid.Spec.MinMember))
		leaves = append(leaves, kid.Name)
	}
	slices.Sort(t.pg.Spec.RoleSets[index].Roles)
	for _, ku := range kids {
		if ParentCompositeOf(ku) != name {
			continue
		}
		sub := len(t.pg.Spec.RoleSets)
		cost, under, err := t.set(ku, depth+1)
		if err != nil {
			return 0, nil, err
		}
		t.pg.Spec.RoleSets[index].Sets = append(t.pg.Spec.RoleSets[index].Sets, sub)
		costs = append(costs, cost)
		leaves = append(leaves, under...)
	}
	if index > 0 {
		if c := in.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
			t.pg.Spec.NativeSetKeys = append(t.pg.Spec.NativeSetKeys, NativeSetKey{Name: name, Key: c.Topology[0].Key, Roles: slices.Sorted(slices.Values(leaves))})
		}
	}
	// The fewest members that meet it: its need cheapest children; a child missing
	// (fewer than need exist) counts one member, so that the gang waits for it.
	slices.Sort(costs)
	need := int(g.MinGroupCount)
	total := int64(max(need-len(costs), 0))
	for _, c := range costs[:min(need, len(costs))] {
		total += c
	}
	return total, leaves, nil
}

// NewCompositePodGroupList returns an empty list of CompositePodGroups to read into.
func NewCompositePodGroupList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(CompositePodGroupGVK.GroupVersion().WithKind("CompositePodGroupList"))
	return l
}

// TreeOf is the CompositeTree of a namespace's CompositePodGroups and PodGroups,
// listed once.
func TreeOf(composites, podGroups *unstructured.UnstructuredList) CompositeTree {
	kids, groups := map[string][]*unstructured.Unstructured{}, map[string][]*unstructured.Unstructured{}
	for i := range composites.Items {
		if p := ParentCompositeOf(&composites.Items[i]); p != "" {
			kids[p] = append(kids[p], &composites.Items[i])
		}
	}
	for i := range podGroups.Items {
		if p := ParentCompositeOf(&podGroups.Items[i]); p != "" {
			groups[p] = append(groups[p], &podGroups.Items[i])
		}
	}
	return func(composite string) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
		return kids[composite], groups[composite]
	}
}
