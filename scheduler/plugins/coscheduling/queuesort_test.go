package coscheduling

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func queued(t *testing.T, pod *corev1.Pod, ts time.Time) *framework.QueuedPodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	return &framework.QueuedPodInfo{PodInfo: pi, QueueingParams: framework.QueueingParams{Timestamp: ts}}
}

func member(name, group string, prio int32) *corev1.Pod {
	return testutil.MakePod(name, "ns").PodGroup(group).UID(name).Priority(prio).SchedulerName("kubenexus-scheduler").Obj()
}

func plain(name string, prio int32) *corev1.Pod {
	return testutil.MakePod(name, "ns").UID(name).Priority(prio).SchedulerName("kubenexus-scheduler").Obj()
}

// newTestPlugin is built with args ("": the defaults) on a gang Service whose pod
// informer brought gang "a" (member a-0) and gang "b" (b-0), "a" first seen at t0
// and "b" a minute later.
func newTestPlugin(t *testing.T, args string) *Plugin {
	t.Helper()
	pl, s := newPlugin(t, args, []runtime.Object{member("a-0", "a", 0), member("b-0", "b", 0)})
	firstSeen(s.Gangs(), "a", t0)
	firstSeen(s.Gangs(), "b", t0.Add(time.Minute))
	return pl
}

// firstSeen sets when the gang Service first saw gang ns/name. The Service records
// it by the wall clock, whose readings the queue timestamps of these tests cannot
// be placed against; the tests place them against t0.
func firstSeen(svc *gangs.Service, name string, at time.Time) {
	svc.Lock()
	defer svc.Unlock()
	svc.Get(gang.Key{Namespace: "ns", Name: name}).FirstSeen = at
}

func TestLess(t *testing.T) {
	pl := newTestPlugin(t, "")
	tests := map[string]struct {
		a, b *framework.QueuedPodInfo
		want bool
	}{
		"higher priority first": {
			a: queued(t, plain("p", 100), t0.Add(time.Hour)), b: queued(t, member("a-1", "a", 0), t0), want: true,
		},
		"older gang first at equal priority, whatever the pods' timestamps": {
			a: queued(t, member("a-1", "a", 0), t0.Add(time.Hour)), b: queued(t, member("b-1", "b", 0), t0), want: true,
		},
		"a plain pod queued before a gang was seen goes first": {
			a: queued(t, plain("p", 0), t0.Add(-time.Second)), b: queued(t, member("a-1", "a", 0), t0), want: true,
		},
		"members of one gang by their own timestamp": {
			a: queued(t, member("a-2", "a", 0), t0.Add(2*time.Second)), b: queued(t, member("a-1", "a", 0), t0.Add(time.Second)), want: false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := pl.Less(tc.a, tc.b); got != tc.want {
				t.Errorf("Less = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLessIsAStrictWeakOrdering checks irreflexivity, asymmetry and transitivity
// (of both the order and of incomparability) over a random population.
func TestLessIsAStrictWeakOrdering(t *testing.T) {
	pl := newTestPlugin(t, "")
	r := rand.New(rand.NewSource(1))
	var pods []*framework.QueuedPodInfo
	for i := range 40 {
		ts := t0.Add(time.Duration(r.Intn(5)) * time.Minute)
		prio := int32(r.Intn(3)) * 100
		switch r.Intn(3) {
		case 0:
			pods = append(pods, queued(t, plain(fmt.Sprintf("p%d", i), prio), ts))
		case 1:
			pods = append(pods, queued(t, member(fmt.Sprintf("a%d", i), "a", prio), ts))
		default:
			pods = append(pods, queued(t, member(fmt.Sprintf("b%d", i), "b", prio), ts))
		}
	}
	less := func(i, j int) bool { return pl.Less(pods[i], pods[j]) }
	equiv := func(i, j int) bool { return !less(i, j) && !less(j, i) }
	for i := range pods {
		if less(i, i) {
			t.Fatalf("Less(%d, %d) is true", i, i)
		}
		for j := range pods {
			if less(i, j) && less(j, i) {
				t.Fatalf("Less is not asymmetric for %d, %d", i, j)
			}
			for k := range pods {
				if less(i, j) && less(j, k) && !less(i, k) {
					t.Fatalf("Less is not transitive for %d, %d, %d", i, j, k)
				}
				if equiv(i, j) && equiv(j, k) && !equiv(i, k) {
					t.Fatalf("incomparability is not transitive for %d, %d, %d", i, j, k)
				}
			}
		}
	}
}

func TestLessWithStarvationAging(t *testing.T) {
	pl := newTestPlugin(t, `{"starvationAgingSeconds": 60}`)
	// Gang "a" was seen a minute before gang "b": with one priority point per minute
	// of waiting, "a" at priority 10 ties "b" at 11 and wins on age; against 12 it loses.
	a := queued(t, member("a-1", "a", 10), t0)
	if !pl.Less(a, queued(t, member("b-1", "b", 11), t0)) {
		t.Error("a gang waiting one aging period longer did not overtake one priority point")
	}
	if pl.Less(a, queued(t, member("b-2", "b", 12), t0)) {
		t.Error("aging by one period overtook two priority points")
	}
	// Without aging, priority alone decides.
	pl = newTestPlugin(t, `{"starvationAgingSeconds": 0}`)
	if pl.Less(a, queued(t, member("b-3", "b", 11), t0)) {
		t.Error("without aging, a lower-priority gang went first")
	}
}

func TestLessByPodGroupPriorityClass(t *testing.T) {
	podGroup := func(name, class string) *v1alpha1.PodGroup {
		return testutil.MakePodGroup(name, "ns").PriorityClassName(class).Obj()
	}
	pl, s := newPlugin(t, "", []runtime.Object{
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "training-high"}, Value: 1000},
		member("urgent-0", "urgent", 2000), member("raised-0", "raised", 0), member("mixed-0", "mixed", 2000), member("mixed-1", "mixed", 300),
		member("typo-0", "typo", 2000), member("plain-gang-0", "plain-gang", 0),
	}, podGroup("urgent", "training-high"), podGroup("raised", "training-high"), podGroup("mixed", "training-high"), podGroup("typo", "no-such-class"))
	// The gang Service resolves the class once both the gang and the PriorityClass
	// informers have delivered them.
	waitForPriority(t, s.Gangs(), "urgent", 1000)
	waitForPriority(t, s.Gangs(), "raised", 0)
	waitForPriority(t, s.Gangs(), "mixed", 300)
	service := queued(t, plain("web", 500), t0.Add(-time.Hour))
	higher := queued(t, plain("api", 1500), t0.Add(-time.Hour))
	// Members admitted at 2000 whose PodGroup names training-high (1000) are queued at
	// 1000, all alike: above a priority-500 pod queued an hour earlier, below 1500.
	for _, m := range []*corev1.Pod{member("urgent-1", "urgent", 2000), member("urgent-2", "urgent", 0)} {
		if !pl.Less(queued(t, m, t0), service) {
			t.Errorf("%s (gang priority 1000) did not go before a priority-500 pod", m.Name)
		}
		if !pl.Less(higher, queued(t, m, t0)) {
			t.Errorf("%s went before a priority-1500 pod: its gang is at 1000", m.Name)
		}
	}
	// The class never lifts a gang above its members' own priorities: members of 0
	// naming training-high stay at 0; a gang with a member of 300 is at 300.
	for _, m := range []*corev1.Pod{member("raised-1", "raised", 0), member("mixed-2", "mixed", 2000)} {
		if pl.Less(queued(t, m, t0), service) {
			t.Errorf("%s went before a priority-500 pod: its PodGroup's class lifted it above its members' own priority", m.Name)
		}
	}
	// A class that does not exist, or no class, leaves the members' own priorities.
	if !pl.Less(queued(t, member("typo-1", "typo", 2000), t0), higher) {
		t.Error("a member of 2000 whose PodGroup names no existing class did not go before a priority-1500 pod")
	}
	if pl.Less(queued(t, member("plain-gang-1", "plain-gang", 0), t0), service) {
		t.Error("gang plain-gang went before a priority-500 pod on its members' priority 0")
	}
	// The class appearing later is picked up: it lowers the gang to 100.
	if _, err := s.Env.Client.SchedulingV1().PriorityClasses().Create(t.Context(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "no-such-class"}, Value: 100}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPriority(t, s.Gangs(), "typo", 100)
	if pl.Less(queued(t, member("typo-2", "typo", 2000), t0), service) {
		t.Error("a PriorityClass created after the gang was not used")
	}
	// The PodGroup dropping its class falls back to the members' priorities.
	if err := s.Objects.Update(t.Context(), podGroup("urgent", "")); err != nil {
		t.Fatal(err)
	}
	waitForPriority(t, s.Gangs(), "urgent", -1)
	if !pl.Less(queued(t, member("urgent-4", "urgent", 2000), t0), higher) {
		t.Error("a PodGroup without priorityClassName kept its old gang priority")
	}
	// A member leaving lifts the cap it set: mixed without its member of 300 is at 1000.
	if err := s.Env.Client.CoreV1().Pods("ns").Delete(t.Context(), "mixed-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPriority(t, s.Gangs(), "mixed", 1000)
	if !pl.Less(queued(t, member("mixed-3", "mixed", 2000), t0), service) {
		t.Error("the cap of a member that left the gang still applies")
	}
}

// waitForPriority waits until the gang Service orders gang ns/name at want (-1: by
// its members' own priorities).
func waitForPriority(t *testing.T, svc *gangs.Service, name string, want int32) {
	t.Helper()
	schedtest.WaitFor(t, fmt.Sprintf("gang ns/%s at priority %d", name, want), func() bool {
		v, known := svc.Priority(gang.Key{Namespace: "ns", Name: name})
		if !known {
			return false
		}
		if want < 0 {
			return v == nil
		}
		return v != nil && *v == want
	})
}
