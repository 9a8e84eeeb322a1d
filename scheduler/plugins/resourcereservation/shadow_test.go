package resourcereservation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	testutil "github.com/kube-nexus/kubenexus/test/util"

	"github.com/kube-nexus/kubenexus/test/util/snapshot"
)

func shadowNode(name string, pods ...*corev1.Pod) fwk.NodeInfo {
	return snapshot.NodeInfo(testutil.MakeNode(name).Capacity("cpu", "8", "pods", "110").Obj(), pods...)
}

func cpuPod(name string, cpu string, started time.Time, deadline *int64) *corev1.Pod {
	return testutil.MakePod(name, "").UID(name).Created(started).ActiveDeadline(deadline).Req("cpu", cpu).Obj()
}

// The gang's earliest start is when the bound pods that end soonest have freed
// room for the slots it does not hold yet; never while only unbound pods could.
func TestShadow(t *testing.T) {
	now := time.Now()
	r := &reservation{slot: map[corev1.ResourceName]int64{corev1.ResourceCPU: 8000}, slots: 2}
	none := func(types.UID) bool { return false }
	soon := cpuPod("soon", "8", now, ptr.To[int64](60))
	later := cpuPod("later", "8", now, ptr.To[int64](300))
	forever := cpuPod("forever", "8", now, nil)

	// One slot missing; two bound pods could free it: the sooner one decides.
	nodes := []fwk.NodeInfo{shadowNode("a", later), shadowNode("b", soon)}
	if got, want := shadow(r, 1, nodes, nil, nil, nil, none), now.Add(60*time.Second); !got.Equal(want) {
		t.Errorf("one missing slot: start %v, want %v (when the sooner pod ends)", got.Sub(now), want.Sub(now))
	}
	// Two missing: both must end.
	if got, want := shadow(r, 2, nodes, nil, nil, nil, none), now.Add(300*time.Second); !got.Equal(want) {
		t.Errorf("two missing slots: start %v, want %v", got.Sub(now), want.Sub(now))
	}
	// Only an unbound pod could free the second slot: never.
	nodes = []fwk.NodeInfo{shadowNode("a", forever), shadowNode("b", soon)}
	if got := shadow(r, 2, nodes, nil, nil, nil, none); !got.Equal(never) {
		t.Errorf("behind an unbound pod: start %v, want never", got.Sub(now))
	}
	// A borrower's room is in the hold already: its end frees nothing more.
	if got := shadow(r, 1, []fwk.NodeInfo{shadowNode("b", soon)}, nil, nil, nil, func(uid types.UID) bool { return uid == "soon" }); !got.Equal(never) {
		t.Errorf("a borrower counted as freeing room: start %v", got.Sub(now))
	}
	// A 4-CPU bound pod beside 4 free CPUs completes a slot when it ends.
	half := cpuPod("half", "4", now, ptr.To[int64](90))
	if got, want := shadow(r, 1, []fwk.NodeInfo{shadowNode("c", half)}, nil, nil, nil, none), now.Add(90*time.Second); !got.Equal(want) {
		t.Errorf("half-full node: start %v, want %v", got.Sub(now), want.Sub(now))
	}
}
