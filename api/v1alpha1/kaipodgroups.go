package v1alpha1

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KAIPodGroupGVK is KAI-Scheduler's PodGroup kind.
var KAIPodGroupGVK = schema.GroupVersionKind{Group: KAIPodGroupGroup, Version: KAIPodGroupVersion, Kind: "PodGroup"}

// NewKAIPodGroup returns an empty KAI PodGroup to read into.
func NewKAIPodGroup() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(KAIPodGroupGVK)
	return u
}

// kaiPodGroupSpec holds the fields of a KAI PodGroup's spec that KubeNexus reads.
type kaiPodGroupSpec struct {
	MinMember          int32          `json:"minMember,omitempty"`
	PriorityClassName  string         `json:"priorityClassName,omitempty"`
	TopologyConstraint *kaiConstraint `json:"topologyConstraint,omitempty"`
	SubGroups          []kaiSubGroup  `json:"subGroups,omitempty"`
}

type kaiSubGroup struct {
	Name               string         `json:"name"`
	MinMember          int32          `json:"minMember,omitempty"`
	Parent             *string        `json:"parent,omitempty"`
	TopologyConstraint *kaiConstraint `json:"topologyConstraint,omitempty"`
}

// kaiConstraint's levels are node label keys (the levels of KAI's Topology, which
// KubeNexus does not read: a key is matched against the KubeNexusConfig's levels).
type kaiConstraint struct {
	RequiredTopologyLevel  string `json:"requiredTopologyLevel,omitempty"`
	PreferredTopologyLevel string `json:"preferredTopologyLevel,omitempty"`
}

// FromKAIPodGroup reads a KAI-Scheduler PodGroup (scheduling.run.ai/v2alpha2) into
// the KubeNexus type, as KAI's own scheduler reads it:
//   - without spec.subGroups the gang is spec.minMember members;
//   - with them, each leaf sub-group (one no other names as its parent) is a role
//     (its members carry the kai.scheduler/subgroup-name label) whose minMember
//     must be met; the gang is their sum. spec.minMember and the minMember of a
//     sub-group that holds others are not counted (KAI v0.12's scheduler counts
//     leaves only);
//   - spec.topologyConstraint's requiredTopologyLevel (else preferredTopologyLevel)
//     is the gang's level; a leaf's requiredTopologyLevel keeps its members in one
//     domain of that label. A sub-group holding others passes its required level to
//     a single leaf below it without one of its own; over several leaves it keeps
//     them together in one domain of its label (NativeSetKeys: a set of roles).
//     A leaf with no required level but a preferredTopologyLevel of its own
//     prefers one domain of that label (NativeGroupKey.Preferred); a preferred
//     level of a sub-group that holds others is not read.
//
// spec.queue, preemptibility and the Topology's name are not read. The result's
// APIVersion is KAI's.
func FromKAIPodGroup(u *unstructured.Unstructured) (*PodGroup, error) {
	what := func() string {
		return fmt.Sprintf("PodGroup %s/%s (%s)", u.GetNamespace(), u.GetName(), KAIPodGroupGVK.GroupVersion())
	}
	var spec kaiPodGroupSpec
	if raw, ok := u.Object["spec"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
			return nil, fmt.Errorf("%s: spec: %w", what(), err)
		}
	}
	pg := &PodGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"metadata": u.Object["metadata"]}, pg); err != nil {
		return nil, fmt.Errorf("%s: %w", what(), err)
	}
	pg.APIVersion, pg.Kind = KAIPodGroupGVK.GroupVersion().String(), "PodGroup"
	pg.Spec.PriorityClassName = spec.PriorityClassName
	if c := spec.TopologyConstraint; c != nil {
		if c.RequiredTopologyLevel != "" {
			pg.Spec.NativeTopologyKey = c.RequiredTopologyLevel
		} else if c.PreferredTopologyLevel != "" {
			pg.Spec.NativeTopologyKey, pg.Spec.NativeTopologyPreferred = c.PreferredTopologyLevel, true
		}
	}
	if len(spec.SubGroups) == 0 {
		pg.Spec.MinMember = max(spec.MinMember, 1)
		return pg, nil
	}
	tree, err := kaiTreeOf(spec.SubGroups)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what(), err)
	}
	pg.Spec.MinMemberPerRole = map[string]int32{}
	var total int64
	for _, sg := range spec.SubGroups {
		if len(tree.children[sg.Name]) > 0 {
			continue
		}
		if sg.MinMember > 0 {
			pg.Spec.MinMemberPerRole[sg.Name] = sg.MinMember
			total += int64(sg.MinMember)
		}
		if key := tree.keyOf(sg); key != "" {
			pg.Spec.NativeGroupKeys = append(pg.Spec.NativeGroupKeys, NativeGroupKey{Role: sg.Name, Key: key})
		} else if c := sg.TopologyConstraint; c != nil && c.PreferredTopologyLevel != "" {
			pg.Spec.NativeGroupKeys = append(pg.Spec.NativeGroupKeys, NativeGroupKey{Role: sg.Name, Key: c.PreferredTopologyLevel, Preferred: true})
		}
	}
	for _, sg := range spec.SubGroups {
		key := required(sg.TopologyConstraint)
		if key == "" {
			continue
		}
		if leaves := tree.leavesUnder(sg.Name); len(leaves) > 1 {
			pg.Spec.NativeSetKeys = append(pg.Spec.NativeSetKeys, NativeSetKey{Name: sg.Name, Key: key, Roles: leaves})
		}
	}
	if total > MaxCompositeMembers {
		return nil, fmt.Errorf("%s: the minMembers of its leaf spec.subGroups add up to %d members; at most %d", what(), total, MaxCompositeMembers)
	}
	pg.Spec.MinMember = int32(max(total, 1))
	return pg, nil
}

func required(c *kaiConstraint) string {
	if c == nil {
		return ""
	}
	return c.RequiredTopologyLevel
}

// MaxKAISubGroups is how many sub-groups KubeNexus reads in one KAI PodGroup.
const MaxKAISubGroups = 128

// kaiTree is a KAI PodGroup's sub-groups by name and their children.
type kaiTree struct {
	byName   map[string]kaiSubGroup
	children map[string][]string
}

// kaiTreeOf checks that the sub-groups form a forest — unique names, parents that
// exist, no cycle (KAI's webhook checks these; its CRD does not) — and indexes it.
func kaiTreeOf(subGroups []kaiSubGroup) (kaiTree, error) {
	if len(subGroups) > MaxKAISubGroups {
		return kaiTree{}, fmt.Errorf("spec.subGroups: %d sub-groups, at most %d", len(subGroups), MaxKAISubGroups)
	}
	t := kaiTree{byName: make(map[string]kaiSubGroup, len(subGroups)), children: map[string][]string{}}
	for i, sg := range subGroups {
		if _, dup := t.byName[sg.Name]; dup {
			return kaiTree{}, fmt.Errorf("spec.subGroups[%d].name %q: names must be unique", i, Shorten(sg.Name, 64))
		}
		t.byName[sg.Name] = sg
	}
	for i, sg := range subGroups {
		if sg.Parent == nil {
			continue
		}
		if _, ok := t.byName[*sg.Parent]; !ok {
			return kaiTree{}, fmt.Errorf("spec.subGroups[%d].parent %q: no sub-group has that name", i, Shorten(*sg.Parent, 64))
		}
		t.children[*sg.Parent] = append(t.children[*sg.Parent], sg.Name)
	}
	for _, sg := range subGroups {
		seen := map[string]bool{}
		for at := sg; at.Parent != nil; at = t.byName[*at.Parent] {
			if seen[at.Name] {
				return kaiTree{}, fmt.Errorf("spec.subGroups: sub-group %q is its own ancestor", Shorten(sg.Name, 64))
			}
			seen[at.Name] = true
		}
	}
	return t, nil
}

// keyOf is the required level of a leaf: its own, else that of the nearest
// sub-group above it that holds no other leaf.
func (t kaiTree) keyOf(leaf kaiSubGroup) string {
	if key := required(leaf.TopologyConstraint); key != "" {
		return key
	}
	for at := leaf; at.Parent != nil; {
		at = t.byName[*at.Parent]
		if len(t.leavesUnder(at.Name)) > 1 {
			return ""
		}
		if key := required(at.TopologyConstraint); key != "" {
			return key
		}
	}
	return ""
}

// leavesUnder lists the leaf sub-groups at or below name, sorted.
func (t kaiTree) leavesUnder(name string) []string {
	kids := t.children[name]
	if len(kids) == 0 {
		return []string{name}
	}
	var out []string
	for _, k := range kids {
		out = append(out, t.leavesUnder(k)...)
	}
	slices.Sort(out)
	return out
}

// KAI's scheduling-condition words (scheduling.run.ai/v2alpha2 SchedulingCondition),
// and the pod-group label that names its node pool.
const (
	KAIUnschedulableOnNodePool = "UnschedulableOnNodePool"
	KAIReasonUnschedulable     = "Unschedulable"
	LabelKAINodePool           = "kai.scheduler/node-pool"
	kaiDefaultNodePool         = "default"
)

// KAIPodGroupStatus returns the status u (a KAI PodGroup) should have for its gang's
// KubeNexus status st, as KAI's own scheduler keeps it: the running, succeeded and
// failed counts, and in schedulingConditions one UnschedulableOnNodePool entry for
// the PodGroup's node pool (its kai.scheduler/node-pool label, else "default") while
// the gang is not placed — reason Unschedulable, the gang's reason and message as
// its one explanation — dropped once it is. An unchanged entry keeps its
// transitionID and time; a changed one counts its transitionID up. Everything else
// in the status (phase, conditions, resourcesStatus, other node pools' entries) is
// kept as it is.
func KAIPodGroupStatus(u *unstructured.Unstructured, st PodGroupStatus, now metav1.Time) (map[string]any, error) {
	out := map[string]any{}
	if current, ok := u.Object["status"].(map[string]any); ok {
		out = runtime.DeepCopyJSON(current)
	}
	for k, v := range map[string]int32{"running": st.Running, "succeeded": st.Succeeded, "failed": st.Failed} {
		if v > 0 {
			out[k] = int64(v)
		} else {
			delete(out, k)
		}
	}
	pool := u.GetLabels()[LabelKAINodePool]
	if pool == "" {
		pool = kaiDefaultNodePool
	}
	var kept []any
	var last map[string]any
	entries, _ := out["schedulingConditions"].([]any)
	for _, e := range entries {
		c, ok := e.(map[string]any)
		if ok && c["type"] == KAIUnschedulableOnNodePool && (c["nodePool"] == pool || c["nodePool"] == nil && pool == kaiDefaultNodePool) {
			last = c
			continue
		}
		kept = append(kept, e)
	}
	ours := meta.FindStatusCondition(st.Conditions, PodGroupConditionScheduled)
	if ours != nil && ours.Status != metav1.ConditionTrue {
		want := map[string]any{
			"type": KAIUnschedulableOnNodePool, "nodePool": pool, "reason": KAIReasonUnschedulable, "message": ours.Message, "status": string(metav1.ConditionTrue),
			"reasons": []any{map[string]any{"reason": ours.Reason, "message": ours.Message}},
		}
		id := int64(1)
		if last != nil {
			if last["message"] == want["message"] && last["reason"] == want["reason"] && last["status"] == want["status"] {
				want["transitionID"], want["lastTransitionTime"] = last["transitionID"], last["lastTransitionTime"]
			} else if prev, err := strconv.ParseInt(fmt.Sprint(last["transitionID"]), 10, 64); err == nil {
				id = prev + 1
			}
		}
		if want["transitionID"] == nil {
			want["transitionID"], want["lastTransitionTime"] = strconv.FormatInt(id, 10), now.UTC().Format(time.RFC3339)
		}
		kept = append(kept, want)
	}
	if len(kept) > 0 {
		out["schedulingConditions"] = kept
	} else {
		delete(out, "schedulingConditions")
	}
	return out, nil
}
