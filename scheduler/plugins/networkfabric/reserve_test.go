package networkfabric

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// A member's Reserve takes its whole share off the plan's claims, its pod slot
// included: claims that never shrink make the plan look stale and re-planned for
// every member. The plan is PreFilter's own: a gang of two 4-GPU members required in
// one rack, where only r1-n0 has room.
func TestReserveReleasesTheMembersShare(t *testing.T) {
	member := func(name string) *corev1.Pod {
		return testutil.MakePod(name, "ml").UID(name).GPUs(4).
			Label(v1alpha1.LabelPodGroup, "g").Label("pod-group.scheduling.kubenexus.io/min-available", "2").
			Annotation(v1alpha1.AnnotationCoLocate, "strict").Obj()
	}
	m0, m1 := member("m0"), member("m1")
	full := map[string]int64{}
	for _, n := range []string{"r0-n0", "r0-n1", "r0-n2", "r0-n3", "r1-n1", "r1-n2", "r1-n3"} {
		full[n] = 8
	}
	nodes := twoRacks(full)
	pl := testPlugin(t, m0, m1)
	key := gang.Key{Namespace: "ml", Name: "g"}

	cs := schedframework.NewCycleState()
	res, st := pl.PreFilter(context.Background(), cs, m0, nodes)
	if !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if got := res.NodeNames; !got.Equal(sets.New("r1-n0")) {
		t.Fatalf("PreFilter restricted the member to %v, want r1-n0", sets.List(got))
	}
	claims := func() map[string]int64 {
		pl.mu.Lock()
		defer pl.mu.Unlock()
		ap := pl.plans[key]
		if ap == nil {
			return nil
		}
		out := map[string]int64{}
		for node, c := range ap.claims {
			out[node+"/gpu"], out[node+"/pods"] = c["nvidia.com/gpu"], c["pods"]
		}
		return out
	}
	if got := claims(); got["r1-n0/gpu"] != 8000 || got["r1-n0/pods"] != 2000 {
		t.Fatalf("plan's claims %v, want 8 GPUs and 2 pod slots on r1-n0", got)
	}

	if st := pl.Reserve(context.Background(), cs, m0, "r1-n0"); st != nil {
		t.Fatal(st)
	}
	if got := claims(); got["r1-n0/gpu"] != 4000 || got["r1-n0/pods"] != 1000 {
		t.Errorf("after one member: claims %v, want 4 GPUs and 1 pod slot left on r1-n0", got)
	}
	if st := pl.Reserve(context.Background(), cs, m1, "r1-n0"); st != nil {
		t.Fatal(st)
	}
	if got := claims(); got != nil {
		t.Errorf("after both members: the fully placed gang's plan was kept, claims %v", got)
	}
}
