package networkfabric

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// A member's Reserve takes its whole share off the plan's claims, its pod slot
// included: claims that never shrink make the plan look stale and re-planned for
// every member.
func TestReserveReleasesTheMembersShare(t *testing.T) {
	key := gang.Key{Namespace: "ml", Name: "g"}
	ap := &activePlan{need: 2, created: time.Now(), claims: map[string]map[corev1.ResourceName]int64{
		"n1": {corev1.ResourceCPU: 2000, corev1.ResourcePods: 2000},
	}}
	pl, _ := newPlugin(t, nil)
	pl.plans[key] = ap
	cs := schedframework.NewCycleState()
	cs.Write(stateKey, &stateData{key: key, plan: ap})
	pod := testutil.MakePod("member", "ns").Req("cpu", "1").Obj()

	if st := pl.Reserve(context.Background(), cs, pod, "n1"); st != nil {
		t.Fatal(st)
	}
	if got := ap.claims["n1"]; got[corev1.ResourceCPU] != 1000 || got[corev1.ResourcePods] != 1000 {
		t.Errorf("after one member: claims %v, want 1 CPU and 1 pod slot left", got)
	}
	if st := pl.Reserve(context.Background(), cs, pod, "n1"); st != nil {
		t.Fatal(st)
	}
	if _, ok := ap.claims["n1"]; ok {
		t.Errorf("after both members: n1 still claimed %v", ap.claims["n1"])
	}
	if pl.plans[key] != nil {
		t.Error("the fully placed gang's plan was kept")
	}
}
