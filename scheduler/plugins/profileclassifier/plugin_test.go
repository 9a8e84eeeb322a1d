package profileclassifier

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/workload"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestPreFilterStoresTheProfile(t *testing.T) {
	var namespaces []runtime.Object
	for name, tier := range map[string]string{"research": "gold", "batch": "bronze"} {
		namespaces = append(namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tenant.kubenexus.io/tier": tier}}})
	}
	pl, _ := newPlugin(t, `{"defaultTier": "silver"}`, true, namespaces)

	tests := map[string]struct {
		pod  *corev1.Pod
		want workload.Profile
	}{
		"unannotated spark driver in a gold namespace": {
			pod:  testutil.MakePod("d", "research").Label("spark-role", "driver").Obj(),
			want: workload.Profile{Class: "batch", Role: "driver", Framework: "spark", Tier: "gold"},
		},
		"a pod forging gold in a bronze namespace": {
			pod:  testutil.MakePod("p", "batch").Label("tenant.kubenexus.io/tier", "gold").Obj(),
			want: workload.Profile{Class: "service", Tier: "bronze"},
		},
		"namespace without a tier gets the default": {
			pod:  testutil.MakePod("p", "unlabelled").Obj(),
			want: workload.Profile{Class: "service", Tier: "silver"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cs := framework.NewCycleState()
			if _, st := pl.PreFilter(context.Background(), cs, tc.pod, nil); !st.IsSkip() {
				t.Fatalf("PreFilter status = %v, want Skip (it never rejects)", st)
			}
			got, ok := ProfileOf(cs)
			if !ok {
				t.Fatal("no profile in the cycle state")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("profile mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// PreEnqueue runs the gang Service's admission under this plugin's name, and the
// plugin registers only member arrivals for the members it holds: no node event,
// which kube-scheduler would otherwise evaluate for every held member.
func TestPreEnqueueHoldsGangMembersWithoutNodeEvents(t *testing.T) {
	member := func(name string) *corev1.Pod {
		p := testutil.MakePod(name, "ns").Label("pod-group.scheduling.kubenexus.io/name", "g").Label("pod-group.scheduling.kubenexus.io/min-available", "2").Obj()
		p.UID, p.Spec.SchedulerName = types.UID(name), "kubenexus-scheduler"
		return p
	}
	first, second := member("g-0"), member("g-1")
	none, _ := newPlugin(t, "", false, nil)
	if st := none.PreEnqueue(context.Background(), first); st != nil {
		t.Fatalf("no gang Service: status %v, want the pod let in", st)
	}
	pl, s := newPlugin(t, "", true, []runtime.Object{first})
	svc := s.Gangs()
	if st := pl.PreEnqueue(context.Background(), first); st != nil {
		t.Fatalf("a profile without Coscheduling: status %v, want the pod let in (its gang is not scheduled whole)", st)
	}
	svc.ScheduleWhole() // as Coscheduling's New does in its profile
	if st := pl.PreEnqueue(context.Background(), first); st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "waiting for gang members: 1/2 members of ns/g exist") {
		t.Fatalf("the first of two members: status %v, want it held for its quorum", st)
	}
	events, err := pl.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatal("no events: a held member would wait for the periodic flush when another member arrives")
	}
	if _, err := s.Env.Client.CoreV1().Pods(second.Namespace).Create(context.Background(), second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.WaitForMembers(second)
	for _, e := range events {
		if e.Event.Resource != fwk.UnscheduledPod && e.Event.Resource != fwk.TargetPod {
			t.Errorf("registers %s: members it holds would be re-examined at every such event", e.Event.Label())
		}
		if h, _ := e.QueueingHintFn(klog.Background(), first, nil, second); h != fwk.Queue {
			t.Errorf("%s: hint %v for the member that completes the gang, want Queue", e.Event.Label(), h)
		}
	}
	if st := pl.PreEnqueue(context.Background(), first); st != nil {
		t.Errorf("with its quorum: status %v, want the pod let in", st)
	}
}
