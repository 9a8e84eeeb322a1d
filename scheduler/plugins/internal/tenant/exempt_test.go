package tenant

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestDaemonSetExemption(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := idx.Add(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "node-agent", Namespace: "ops", UID: "ds-uid"}}); err != nil {
		t.Fatal(err)
	}
	d := daemonSetExemption{daemonSets: appslisters.NewDaemonSetLister(idx)}
	agent := func() *testutil.PodWrapper { return testutil.MakePod("a", "ops") }
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"a real DaemonSet's pod":                  {agent().OwnerUID("apps/v1", "DaemonSet", "node-agent", "ds-uid").Req("cpu", "100m").Obj(), true},
		"a made-up DaemonSet name":                {agent().OwnerUID("apps/v1", "DaemonSet", "ghost", "ds-uid").Obj(), false},
		"the right name with another UID":         {agent().OwnerUID("apps/v1", "DaemonSet", "node-agent", "forged").Obj(), false},
		"a DaemonSet kind in a made-up API group": {agent().OwnerUID("evil.example.com/v1", "DaemonSet", "node-agent", "ds-uid").Obj(), false},
		"the DaemonSet of another namespace":      {testutil.MakePod("a", "tenant").OwnerUID("apps/v1", "DaemonSet", "node-agent", "ds-uid").Obj(), false},
		"a real DaemonSet's pod asking for GPUs": {agent().OwnerUID("apps/v1", "DaemonSet", "node-agent", "ds-uid").
			Req("cpu", "100m", "nvidia.com/gpu", "8").Limit("nvidia.com/gpu", "8").Obj(), false},
		"a real DaemonSet's pod with a GPU limit only": {agent().OwnerUID("apps/v1", "DaemonSet", "node-agent", "ds-uid").
			Limit("nvidia.com/gpu", "1").Obj(), false},
		"a plain pod": {agent().Obj(), false},
	} {
		if got := d.exempt(tc.pod); got != tc.want {
			t.Errorf("%s: exempt = %v, want %v", name, got, tc.want)
		}
	}

	claim := agent().OwnerUID("apps/v1", "DaemonSet", "node-agent", "ds-uid").Obj()
	claim.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}}
	if d.exempt(claim) {
		t.Error("a DaemonSet pod with a DRA ResourceClaim must be held to its tier")
	}
}
