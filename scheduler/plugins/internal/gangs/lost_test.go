package gangs

import (
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/lws"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// runningGang files a label-only gang of three members bound to n0..n2.
func runningGang(x *Service) []*corev1.Pod {
	var pods []*corev1.Pod
	for i, node := range []string{"n0", "n1", "n2"} {
		p := testutil.MakePod("g-"+string(rune('0'+i)), "ns").UID("g-"+string(rune('0'+i))).SchedulerName("kubenexus-scheduler").
			Label(v1alpha1.LabelKubeNexusGangName, "g").Label(v1alpha1.LabelKubeNexusGangMinAvailable, "3").Req("cpu", "8").Node(node).Phase(corev1.PodRunning).Obj()
		x.Upsert(p)
		pods = append(pods, p)
	}
	return pods
}

func TestLostRooms(t *testing.T) {
	clock := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	key := gang.Key{Namespace: "ns", Name: "g"}
	for _, tc := range []struct {
		name string
		lose func(p *corev1.Pod)
		held bool
	}{
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, true},
		{"its node lost: terminating, disrupted", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: clock}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
		}, true},
		{"preempted by GangPreemption, evicted", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: clock}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"},
				{Type: v1alpha1.PodConditionPreempted, Status: corev1.ConditionTrue}}
		}, false},
		{"deleted with nothing shown", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: clock} }, false},
		{"succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := clock
			x := NewService("kubenexus-scheduler", func() time.Time { return now })
			pods := runningGang(x)
			if x.HasLost() {
				t.Fatal("a whole gang has lost rooms")
			}
			lost := pods[1].DeepCopy()
			tc.lose(lost)
			x.Upsert(lost)
			rooms := x.LostRooms(now)
			if !tc.held {
				if len(rooms) != 0 {
					t.Errorf("rooms held: %+v", rooms)
				}
				return
			}
			if len(rooms) != 1 || rooms[0].Key != key || rooms[0].Node != "n1" || rooms[0].Requests[corev1.ResourceCPU] != 8000 {
				t.Fatalf("rooms %+v, want n1's 8 CPUs for ns/g", rooms)
			}
			// The replacement binds: whole again, nothing held.
			repl := testutil.MakePod("g-1b", "ns").UID("g-1b").SchedulerName("kubenexus-scheduler").
				Label(v1alpha1.LabelKubeNexusGangName, "g").Label(v1alpha1.LabelKubeNexusGangMinAvailable, "3").Req("cpu", "8").Node("n1").Obj()
			x.Upsert(repl)
			if rooms := x.LostRooms(now); len(rooms) != 0 || x.HasLost() {
				t.Errorf("after the replacement bound: rooms %+v", rooms)
			}
		})
	}

	// A minute without a replacement: no longer held.
	now := clock
	x := NewService("kubenexus-scheduler", func() time.Time { return now })
	pods := runningGang(x)
	failed := pods[0].DeepCopy()
	failed.Status.Phase = corev1.PodFailed
	x.Upsert(failed)
	if len(x.LostRooms(now.Add(LostHoldWindow-time.Second))) != 1 || len(x.LostRooms(now.Add(LostHoldWindow))) != 0 {
		t.Error("the hold does not end after LostHoldWindow")
	}
}

// kube-scheduler's pod informer watches non-terminal pods only: a member that
// fails reaches the Service as the deletion of its last running state, and the
// failed pods' watch tells it failed — in either order. One that succeeded is no
// loss.
func TestLostRoomsOfAMemberThatLeftTheInformer(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	failed := func(p *corev1.Pod) *corev1.Pod {
		f := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}, Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}}
		f.Status.Phase = corev1.PodFailed
		return f
	}
	for _, tc := range []struct {
		name string
		lose func(x *Service, p *corev1.Pod)
		held bool
	}{
		{"left, then seen failed", func(x *Service, p *corev1.Pod) { x.Remove(p); x.Failed(failed(p)) }, true},
		{"seen failed, then left", func(x *Service, p *corev1.Pod) { x.Failed(failed(p)); x.Remove(p) }, true},
		{"left, never seen failed (it succeeded)", func(x *Service, p *corev1.Pod) { x.Remove(p) }, false},
		{"left, seen failed after the hold window", func(x *Service, p *corev1.Pod) {
			x.Remove(p)
			now = now.Add(LostHoldWindow)
			x.Failed(failed(p))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := NewService("kubenexus-scheduler", func() time.Time { return now })
			pods := runningGang(x)
			tc.lose(x, pods[1])
			rooms := x.LostRooms(now)
			if !tc.held {
				if len(rooms) != 0 {
					t.Errorf("rooms held: %+v", rooms)
				}
				return
			}
			if len(rooms) != 1 || rooms[0].Node != "n1" || rooms[0].Requests[corev1.ResourceCPU] != 8000 {
				t.Fatalf("rooms %+v, want n1's 8 CPUs (the requests of the member as filed)", rooms)
			}
		})
	}
}

// A LeaderWorkerSet group created leader first is a gang of its leader (minMember
// 1) that runs whole only with its workers. When a worker is evicted, LWS
// recreates the group: it deletes the leader and the other workers, with nothing
// shown on them. Every member's room is held for the new group until it is whole
// again, also while none of its members exists (its PodGroup stays).
func TestLostRoomsOfALeaderWorkerSetGroup(t *testing.T) {
	now := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	key := gang.Key{Namespace: "ns", Name: "vllm-0"}
	x := NewService("kubenexus-scheduler", func() time.Time { return now })
	x.adm.pgs = &fakePodGroups{synced: true, pgs: map[gang.Key]*v1alpha1.PodGroup{key: testutil.MakePodGroup("vllm-0", "ns").MinMember(1).Obj()}}
	member := func(name, node string) *corev1.Pod {
		return testutil.MakePod(name, "ns").UID(name).SchedulerName("kubenexus-scheduler").Label(v1alpha1.LabelPodGroup, "vllm-0").
			Label(lws.LabelName, "vllm").Label(lws.LabelGroupIndex, "0").
			Annotation(lws.AnnotationSize, "3").Annotation(v1alpha1.AnnotationLWSExclusiveTopology, v1alpha1.LabelRack).
			Req("cpu", "8").Node(node).Phase(corev1.PodRunning).Obj()
	}
	pods := []*corev1.Pod{member("vllm-0", "n0"), member("vllm-0-1", "n1"), member("vllm-0-2", "n2")}
	for _, p := range pods {
		x.Upsert(p)
	}
	held := func() []string {
		var nodes []string
		for _, r := range x.LostRooms(now) {
			if r.Key != key {
				t.Errorf("a room of %v", r.Key)
			}
			nodes = append(nodes, r.Node)
		}
		sort.Strings(nodes)
		return nodes
	}
	evicted := pods[1].DeepCopy()
	evicted.DeletionTimestamp = &metav1.Time{Time: now}
	evicted.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"}}
	x.Upsert(evicted)
	if got := held(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("after the eviction: rooms on %v, want n1's (the leader alone is not the whole group)", got)
	}
	for _, p := range []*corev1.Pod{pods[0], pods[2]} {
		deleted := p.DeepCopy()
		deleted.DeletionTimestamp = &metav1.Time{Time: now}
		x.Upsert(deleted)
		x.Remove(deleted)
	}
	x.Remove(evicted)
	if got := held(); !slices.Equal(got, []string{"n0", "n1", "n2"}) {
		t.Fatalf("after LWS deleted the group: rooms on %v, want every member's", got)
	}
	// The new group: its leader alone is not whole; with its workers it is.
	newGroup := []*corev1.Pod{member("vllm-0-new", "n0"), member("vllm-0-1-new", "n1")}
	for _, p := range newGroup {
		x.Upsert(p)
	}
	if got := held(); len(got) == 0 {
		t.Fatal("rooms dropped before the new group was whole")
	}
	x.Upsert(member("vllm-0-2-new", "n2"))
	if got := held(); len(got) != 0 {
		t.Errorf("the new group is whole, rooms still held on %v", got)
	}

	// A member deleted with nothing shown while its gang loses nothing is no loss.
	y := NewService("kubenexus-scheduler", func() time.Time { return now })
	y.adm.pgs = x.adm.pgs
	for _, p := range pods {
		y.Upsert(p)
	}
	deleted := pods[0].DeepCopy()
	deleted.DeletionTimestamp = &metav1.Time{Time: now}
	y.Upsert(deleted)
	if rooms := y.LostRooms(now); len(rooms) != 0 {
		t.Errorf("a deletion alone held %+v", rooms)
	}
}
