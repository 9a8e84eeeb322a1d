package gangs

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestIsSchedulableAfterPodGroupChange(t *testing.T) {
	member := testutil.MakePod("m-0", "ns").PodGroup("g").Obj()
	pg := func(name string, gen int64) *v1alpha1.PodGroup {
		p := testutil.MakePodGroup(name, "ns").Obj()
		p.Generation = gen
		return p
	}
	sigs := &unstructured.Unstructured{}
	sigs.SetGroupVersionKind(v1alpha1.SigsPodGroupGVK)
	sigs.SetNamespace("ns")
	sigs.SetName("g")
	sigs.SetGeneration(1)
	tests := map[string]struct {
		old, new any
		want     fwk.QueueingHint
	}{
		"its PodGroup appears":                   {new: pg("g", 1), want: fwk.Queue},
		"its PodGroup's spec changes":            {old: pg("g", 1), new: pg("g", 2), want: fwk.Queue},
		"its PodGroup's status changes":          {old: pg("g", 2), new: pg("g", 2), want: fwk.QueueSkip},
		"another gang's PodGroup changes":        {old: pg("h", 1), new: pg("h", 2), want: fwk.QueueSkip},
		"its scheduler-plugins PodGroup appears": {new: sigs, want: fwk.Queue},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := IsSchedulableAfterPodGroupChange(klog.Background(), member, tc.old, tc.new)
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := IsSchedulableAfterPodGroupChange(klog.Background(), member, nil, member); err == nil {
		t.Fatal("a pod passed as the PodGroup: want an error naming its type")
	}
}
