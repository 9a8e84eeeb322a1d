package podgroup

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

func TestGangsWaitingByReason(t *testing.T) {
	pg := func(name string, phase v1alpha1.PodGroupPhase, status metav1.ConditionStatus, reason string) *v1alpha1.PodGroup {
		return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}, Status: v1alpha1.PodGroupStatus{Phase: phase,
			Conditions: []metav1.Condition{{Type: v1alpha1.PodGroupConditionScheduled, Status: status, Reason: reason}}}}
	}
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		pg("a", v1alpha1.PodGroupScheduling, metav1.ConditionFalse, v1alpha1.ReasonInsufficientCapacity),
		pg("b", v1alpha1.PodGroupScheduling, metav1.ConditionFalse, v1alpha1.ReasonInsufficientCapacity),
		pg("c", v1alpha1.PodGroupPending, metav1.ConditionFalse, v1alpha1.ReasonWaitingForMembers),
		pg("d", v1alpha1.PodGroupRunning, metav1.ConditionTrue, v1alpha1.ReasonGangScheduled),
		&v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "new"}}, // no status yet
	).Build()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&waitingCollector{reader: c})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{v1alpha1.ReasonInsufficientCapacity: 2, v1alpha1.ReasonWaitingForMembers: 1}
	if len(got) != len(want) || got[v1alpha1.ReasonInsufficientCapacity] != 2 || got[v1alpha1.ReasonWaitingForMembers] != 1 {
		t.Errorf("kubenexus_gangs_waiting = %v, want %v", got, want)
	}
}
