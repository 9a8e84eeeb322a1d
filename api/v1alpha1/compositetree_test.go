package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// nested builds a namespace's CompositePodGroups and PodGroups for tree tests.
type nested struct {
	t                  *testing.T
	composites, groups []*unstructured.Unstructured
}

// composite adds CompositePodGroup name under parent ("" for a root) needing need
// of its children (0: basic), with topology key ("" for none).
func (n *nested) composite(name, parent string, need int32, key string) *unstructured.Unstructured {
	c := &schedulingv1alpha3.CompositePodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}
	if parent != "" {
		c.Spec.ParentCompositePodGroupName = &parent
	}
	if need > 0 {
		c.Spec.SchedulingPolicy.Gang = &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: need}
	} else {
		c.Spec.SchedulingPolicy.Basic = &schedulingv1alpha3.CompositeBasicSchedulingPolicy{}
	}
	if key != "" {
		c.Spec.SchedulingConstraints = &schedulingv1alpha3.CompositePodGroupSchedulingConstraints{Topology: []schedulingv1alpha3.TopologyConstraint{{Key: key}}}
	}
	u := compositeUnstructured(n.t, c)
	n.composites = append(n.composites, u)
	return u
}

// group adds PodGroup name under parent with minCount min and topology key.
func (n *nested) group(name, parent string, min int32, key string) {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}
	pg.Spec.ParentCompositePodGroupName = &parent
	pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: min}
	if key != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}}
	}
	n.groups = append(n.groups, nativeUnstructured(n.t, pg))
}

func (n *nested) tree() CompositeTree {
	cl, gl := NewCompositePodGroupList(), NewNativePodGroupList()
	for _, c := range n.composites {
		cl.Items = append(cl.Items, *c)
	}
	for _, g := range n.groups {
		gl.Items = append(gl.Items, *g)
	}
	return TreeOf(cl, gl)
}

func (n *nested) lookup(name string) *unstructured.Unstructured {
	for _, c := range n.composites {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// A serving deployment of two replicas, each a composite of a prefill and a decode
// PodGroup that needs both, the deployment one of its replicas: one gang keyed by
// the root, every PodGroup a role, every composite a set.
func TestReadCompositeTree(t *testing.T) {
	n := &nested{t: t}
	root := n.composite("serve", "", 1, LabelRack)
	n.composite("r0", "serve", 2, LabelGPUClique)
	n.composite("r1", "serve", 2, "")
	n.group("r0-prefill", "r0", 2, "")
	n.group("r0-decode", "r0", 4, "")
	n.group("r1-prefill", "r1", 1, "")
	n.group("r1-decode", "r1", 2, LabelGPUClique)
	pg, err := ReadCompositeTree(root, n.tree())
	if err != nil {
		t.Fatal(err)
	}
	if pg.Spec.MinMember != 3 {
		t.Errorf("minMember %d, want 3 (r1's 1 + 2, the cheaper replica)", pg.Spec.MinMember)
	}
	if diff := cmp.Diff(map[string]int32{"r0-prefill": 2, "r0-decode": 4, "r1-prefill": 1, "r1-decode": 2}, pg.Spec.MinMemberPerRole); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	want := []RoleSet{{Name: "serve", Need: 1, Sets: []int{1, 2}}, {Name: "r0", Need: 2, Roles: []string{"r0-decode", "r0-prefill"}}, {Name: "r1", Need: 2, Roles: []string{"r1-decode", "r1-prefill"}}}
	if diff := cmp.Diff(want, pg.Spec.RoleSets); diff != "" {
		t.Errorf("sets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]NativeSetKey{{Name: "r0", Key: LabelGPUClique, Roles: []string{"r0-decode", "r0-prefill"}}}, pg.Spec.NativeSetKeys); diff != "" {
		t.Errorf("set keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]NativeGroupKey{{Role: "r1-decode", Key: LabelGPUClique}}, pg.Spec.NativeGroupKeys); diff != "" {
		t.Errorf("group keys (-want +got):\n%s", diff)
	}
	if pg.Spec.NativeTopologyKey != LabelRack || pg.Spec.MinRolesMet != 0 {
		t.Errorf("key %q, minRolesMet %d; want the root's key and no flat count", pg.Spec.NativeTopologyKey, pg.Spec.MinRolesMet)
	}
	// Each PodGroup of the tree is filed under the root.
	for _, g := range n.groups {
		if got, ok := CompositeRoot(g, n.lookup); !ok || got != "serve" {
			t.Errorf("CompositeRoot(%s) = %q, %v; want serve", g.GetName(), got, ok)
		}
	}
}

func TestReadCompositeTreeRefuses(t *testing.T) {
	tests := map[string]struct {
		build func(n *nested) *unstructured.Unstructured
		want  string
	}{
		"a basic composite inside a gang": {func(n *nested) *unstructured.Unstructured {
			root := n.composite("serve", "", 1, "")
			n.composite("r0", "serve", 0, "")
			n.group("a", "r0", 1, "")
			return root
		}, "CompositePodGroup ml/r0 (scheduling.k8s.io/v1alpha3): spec.schedulingPolicy is basic inside the gang of CompositePodGroup serve"},
		"too deep": {func(n *nested) *unstructured.Unstructured {
			root := n.composite("l1", "", 1, "")
			for i, parent := range []string{"l1", "l2", "l3", "l4"} {
				n.composite([]string{"l2", "l3", "l4", "l5"}[i], parent, 1, "")
			}
			n.group("a", "l5", 1, "")
			return root
		}, "CompositePodGroup ml/l5 (scheduling.k8s.io/v1alpha3): nested 5 CompositePodGroups deep; at most 4 are read"},
		"minGroupCount 0 below": {func(n *nested) *unstructured.Unstructured {
			root := n.composite("serve", "", 1, "")
			c := n.composite("r0", "serve", 1, "")
			_ = unstructured.SetNestedField(c.Object, int64(0), "spec", "schedulingPolicy", "gang", "minGroupCount")
			return root
		}, "CompositePodGroup ml/r0 (scheduling.k8s.io/v1alpha3): spec.schedulingPolicy.gang.minGroupCount is 0; it must be at least 1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := &nested{t: t}
			root := tc.build(n)
			_, err := ReadCompositeTree(root, n.tree())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Where a PodGroup's chain of parents leads.
func TestCompositeRoot(t *testing.T) {
	n := &nested{t: t}
	n.composite("basic-root", "", 0, "")
	n.composite("gang-under-basic", "basic-root", 1, "")
	n.composite("loop-a", "loop-b", 1, "")
	n.composite("loop-b", "loop-a", 1, "")
	pg := func(parent string) *unstructured.Unstructured {
		n := &nested{t: t}
		n.group("x", parent, 1, "")
		return n.groups[0]
	}
	tests := map[string]struct {
		parent string
		want   string
		ok     bool
	}{
		"no parent":                             {"", "", false},
		"a parent not seen yet: the gang waits": {"missing", "missing", true},
		"a basic parent: a gang of its own":     {"basic-root", "", false},
		"a gang composite under a basic one":    {"gang-under-basic", "gang-under-basic", true},
		"a cycle ends where it comes back":      {"loop-a", "loop-a", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := pg(tc.parent)
			if tc.parent == "" {
				unstructured.RemoveNestedField(u.Object, "spec", "parentCompositePodGroupName")
			}
			got, ok := CompositeRoot(u, n.lookup)
			if got != tc.want || ok != tc.ok {
				t.Errorf("CompositeRoot = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
