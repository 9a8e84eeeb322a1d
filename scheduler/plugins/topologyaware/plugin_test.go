package topologyaware

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestSpreads(t *testing.T) {
	replica := func() *testutil.PodWrapper {
		return testutil.MakePod("web-1", "ns").Owner("apps/v1", "ReplicaSet", "web")
	}
	withConstraint := replica().Obj()
	withConstraint.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
	for name, tc := range map[string]struct {
		pod    *corev1.Pod
		class  v1alpha1.WorkloadClass
		inGang bool
		want   bool
	}{
		"a service replica":                      {replica().Obj(), v1alpha1.WorkloadClassService, false, true},
		"an inference replica":                   {replica().Obj(), v1alpha1.WorkloadClassInference, false, true},
		"a pod without a controller":             {testutil.MakePod("p", "ns").Obj(), v1alpha1.WorkloadClassService, false, false},
		"its own spread constraints":             {withConstraint, v1alpha1.WorkloadClassService, false, false},
		"a batch replica (packed, not spread)":   {replica().Obj(), v1alpha1.WorkloadClassBatch, false, false},
		"a gang member (NetworkFabric packs it)": {replica().Obj(), v1alpha1.WorkloadClassService, true, false},
	} {
		if _, got := spreads(tc.pod, tc.class, tc.inGang); got != tc.want {
			t.Errorf("%s: spreads = %v, want %v", name, got, tc.want)
		}
	}
}

// A replica the plugin spreads is not signable (its placement moves every other
// node's score); a pod it leaves alone signs with nothing added.
func TestSignPod(t *testing.T) {
	p, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*Plugin)
	for name, tc := range map[string]struct {
		pod      *corev1.Pod
		signable bool
	}{
		"a service replica":           {testutil.MakePod("web-1", "ns").Owner("apps/v1", "ReplicaSet", "web").Obj(), false},
		"a plain pod":                 {testutil.MakePod("p", "ns").Obj(), true},
		"a Job's pod (batch, packed)": {testutil.MakePod("j-1", "ns").Owner("batch/v1", "Job", "j").Obj(), true},
	} {
		frags, st := pl.SignPod(context.Background(), tc.pod)
		if got := st.IsSuccess(); got != tc.signable {
			t.Errorf("%s: signable %v (%v), want %v", name, got, st, tc.signable)
		}
		if len(frags) != 0 {
			t.Errorf("%s: fragments %v, want none", name, frags)
		}
	}
}
