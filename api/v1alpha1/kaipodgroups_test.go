package v1alpha1

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kaiPodGroup is a KAI PodGroup ml/serve as the API server stores it.
func kaiPodGroup(spec map[string]any) *unstructured.Unstructured {
	u := NewKAIPodGroup()
	u.SetNamespace("ml")
	u.SetName("serve")
	u.SetUID("k1")
	u.Object["spec"] = spec
	return u
}

// kaiSub is one entry of a KAI PodGroup's spec.subGroups: its parent ("" for none)
// and required level ("" for none).
func kaiSub(name string, min int64, parent, required string) map[string]any {
	sg := map[string]any{"name": name}
	if min > 0 {
		sg["minMember"] = min
	}
	if parent != "" {
		sg["parent"] = parent
	}
	if required != "" {
		sg["topologyConstraint"] = map[string]any{"requiredTopologyLevel": required}
	}
	return sg
}

func subGroups(sgs ...map[string]any) []any {
	out := make([]any, len(sgs))
	for i, sg := range sgs {
		out[i] = sg
	}
	return out
}

func TestFromKAIPodGroup(t *testing.T) {
	tests := map[string]struct {
		spec      map[string]any
		wantMin   int32
		wantRoles map[string]int32
		wantKey   string
		preferred bool
		wantGroup []NativeGroupKey
		wantSets  []NativeSetKey
		wantErr   string
	}{
		"no sub-groups: spec.minMember, the required level": {
			spec:    map[string]any{"minMember": int64(4), "topologyConstraint": map[string]any{"requiredTopologyLevel": LabelRack, "preferredTopologyLevel": LabelGPUClique}},
			wantMin: 4, wantKey: LabelRack,
		},
		"no minMember: one member, a preferred level": {
			spec:    map[string]any{"topologyConstraint": map[string]any{"preferredTopologyLevel": LabelRack, "topology": "cluster"}},
			wantMin: 1, wantKey: LabelRack, preferred: true,
		},
		"leaves: the sum of their minimums, each a role; spec.minMember is not counted": {
			spec: map[string]any{"minMember": int64(2), "subGroups": subGroups(
				kaiSub("prefill", 2, "", LabelGPUClique), kaiSub("decode", 4, "", LabelGPUClique))},
			wantMin: 6, wantRoles: map[string]int32{"prefill": 2, "decode": 4},
			wantGroup: []NativeGroupKey{{Role: "prefill", Key: LabelGPUClique}, {Role: "decode", Key: LabelGPUClique}},
		},
		"a sub-group over two leaves: only the leaves count; its level is a set": {
			spec: map[string]any{"subGroups": subGroups(
				kaiSub("decode", 2, "", LabelRack), kaiSub("decode-workers", 4, "decode", LabelGPUClique), kaiSub("decode-leaders", 1, "decode", ""))},
			wantMin: 5, wantRoles: map[string]int32{"decode-workers": 4, "decode-leaders": 1},
			wantGroup: []NativeGroupKey{{Role: "decode-workers", Key: LabelGPUClique}},
			wantSets:  []NativeSetKey{{Name: "decode", Key: LabelRack, Roles: []string{"decode-leaders", "decode-workers"}}},
		},
		"a sub-group over one leaf passes its level to that leaf": {
			spec:    map[string]any{"subGroups": subGroups(kaiSub("prefill", 0, "", LabelGPUClique), kaiSub("prefill-workers", 3, "prefill", ""))},
			wantMin: 3, wantRoles: map[string]int32{"prefill-workers": 3},
			wantGroup: []NativeGroupKey{{Role: "prefill-workers", Key: LabelGPUClique}},
		},
		"a leaf without minMember: a role with no minimum": {
			spec:    map[string]any{"subGroups": subGroups(kaiSub("a", 0, "", ""), kaiSub("b", 2, "", ""))},
			wantMin: 2, wantRoles: map[string]int32{"b": 2},
		},
		"duplicate names": {
			spec:    map[string]any{"subGroups": subGroups(kaiSub("a", 1, "", ""), kaiSub("a", 2, "", ""))},
			wantErr: `spec.subGroups[1].name "a": names must be unique`,
		},
		"a parent that does not exist": {
			spec:    map[string]any{"subGroups": subGroups(kaiSub("a", 1, "nope", ""))},
			wantErr: `spec.subGroups[0].parent "nope": no sub-group has that name`,
		},
		"a cycle": {
			spec:    map[string]any{"subGroups": subGroups(kaiSub("a", 1, "b", ""), kaiSub("b", 1, "a", ""))},
			wantErr: "is its own ancestor",
		},
		"too many sub-groups": {
			spec: map[string]any{"subGroups": func() []any {
				var out []any
				for i := range MaxKAISubGroups + 1 {
					out = append(out, kaiSub(fmt.Sprintf("s%d", i), 1, "", ""))
				}
				return out
			}()},
			wantErr: "spec.subGroups: 129 sub-groups, at most 128",
		},
		"too many members": {
			spec:    map[string]any{"subGroups": subGroups(kaiSub("a", 60000, "", ""), kaiSub("b", 60000, "", ""))},
			wantErr: "add up to 120000 members; at most 100000",
		},
		"a field of the wrong type": {
			spec:    map[string]any{"minMember": "four"},
			wantErr: "spec: unrecognized type",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.spec["priorityClassName"] = "high"
			pg, err := FromKAIPodGroup(kaiPodGroup(tc.spec))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "PodGroup ml/serve (scheduling.run.ai/v2alpha2)") {
					t.Fatalf("error %v, want one naming ml/serve and %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pg.Spec.MinMember != tc.wantMin || pg.Spec.NativeTopologyKey != tc.wantKey || pg.Spec.NativeTopologyPreferred != tc.preferred ||
				pg.Spec.PriorityClassName != "high" || pg.UID != "k1" || pg.APIVersion != "scheduling.run.ai/v2alpha2" || pg.Kind != "PodGroup" {
				t.Errorf("read as minMember %d, key %q (preferred %v), priorityClassName %q, uid %q, %s %s",
					pg.Spec.MinMember, pg.Spec.NativeTopologyKey, pg.Spec.NativeTopologyPreferred, pg.Spec.PriorityClassName, pg.UID, pg.APIVersion, pg.Kind)
			}
			if diff := cmp.Diff(tc.wantRoles, pg.Spec.MinMemberPerRole); diff != "" {
				t.Errorf("minMemberPerRole (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantGroup, pg.Spec.NativeGroupKeys); diff != "" {
				t.Errorf("group keys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSets, pg.Spec.NativeSetKeys); diff != "" {
				t.Errorf("set keys (-want +got):\n%s", diff)
			}
		})
	}
}

// The status KubeNexus keeps on a KAI PodGroup: counts, and one scheduling
// condition for its node pool while the gang waits, whose transitionID counts its
// changes; what others wrote stays.
func TestKAIPodGroupStatus(t *testing.T) {
	then, now := metav1.NewTime(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)), metav1.NewTime(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	waiting := func(reason, msg string) PodGroupStatus {
		return PodGroupStatus{Conditions: []metav1.Condition{{Type: PodGroupConditionScheduled, Status: metav1.ConditionFalse, Reason: reason, Message: msg}}}
	}
	entry := func(pool, msg, reason, id, at string) map[string]any {
		return map[string]any{"type": KAIUnschedulableOnNodePool, "nodePool": pool, "reason": KAIReasonUnschedulable, "message": msg, "status": "True",
			"reasons": []any{map[string]any{"reason": reason, "message": msg}}, "transitionID": id, "lastTransitionTime": at}
	}
	other := map[string]any{"type": KAIUnschedulableOnNodePool, "nodePool": "a100", "reason": KAIReasonUnschedulable, "message": "theirs", "status": "True"}
	thenS, nowS := then.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)
	tests := map[string]struct {
		current map[string]any
		labels  map[string]string
		st      PodGroupStatus
		want    map[string]any
	}{
		"first wait": {nil, nil, waiting(ReasonWaitingForMembers, "WaitingForMembers 4/6"),
			map[string]any{"schedulingConditions": []any{entry("default", "WaitingForMembers 4/6", ReasonWaitingForMembers, "1", nowS)}}},
		"the same wait keeps its transition": {map[string]any{"phase": "Pending", "schedulingConditions": []any{other, entry("default", "WaitingForMembers 4/6", ReasonWaitingForMembers, "1", thenS)}}, nil,
			waiting(ReasonWaitingForMembers, "WaitingForMembers 4/6"),
			map[string]any{"phase": "Pending", "schedulingConditions": []any{other, entry("default", "WaitingForMembers 4/6", ReasonWaitingForMembers, "1", thenS)}}},
		"a new reason counts up": {map[string]any{"schedulingConditions": []any{entry("default", "WaitingForMembers 4/6", ReasonWaitingForMembers, "1", thenS)}}, nil,
			waiting(ReasonInsufficientCapacity, "no room"),
			map[string]any{"schedulingConditions": []any{entry("default", "no room", ReasonInsufficientCapacity, "2", nowS)}}},
		"its node pool's label": {nil, map[string]string{LabelKAINodePool: "h100"}, waiting(ReasonInsufficientCapacity, "no room"),
			map[string]any{"schedulingConditions": []any{entry("h100", "no room", ReasonInsufficientCapacity, "1", nowS)}}},
		"placed: the entry goes, others stay, counts come": {map[string]any{"resourcesStatus": map[string]any{"allocated": map[string]any{"cpu": "4"}},
			"schedulingConditions": []any{other, entry("default", "no room", ReasonInsufficientCapacity, "2", thenS)}}, nil,
			PodGroupStatus{Running: 5, Failed: 1, Conditions: []metav1.Condition{{Type: PodGroupConditionScheduled, Status: metav1.ConditionTrue, Reason: ReasonGangScheduled}}},
			map[string]any{"resourcesStatus": map[string]any{"allocated": map[string]any{"cpu": "4"}}, "schedulingConditions": []any{other}, "running": int64(5), "failed": int64(1)}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := kaiPodGroup(map[string]any{"minMember": int64(1)})
			u.SetLabels(tc.labels)
			if tc.current != nil {
				u.Object["status"] = tc.current
			}
			got, err := KAIPodGroupStatus(u, tc.st, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}
