package tenant

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// queues is a fixed answer for a pod's ClusterQueue and the queues' labels.
type queues struct {
	of     map[string]string // pod name → ClusterQueue
	labels map[string]map[string]string
}

func (q queues) ClusterQueueOf(pod *corev1.Pod) (string, bool) {
	cq, ok := q.of[pod.Name]
	return cq, ok
}

func (q queues) ClusterQueueLabels(name string) (map[string]string, bool) {
	l, ok := q.labels[name]
	return l, ok
}

func TestTierSource(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := idx.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{v1alpha1.LabelTenantTier: "silver"}}}); err != nil {
		t.Fatal(err)
	}
	q := queues{
		of:     map[string]string{"via-gold": "gold-cq", "via-plain": "plain-cq", "via-bad": "bad-cq"},
		labels: map[string]map[string]string{"gold-cq": {v1alpha1.LabelTenantTier: "gold"}, "plain-cq": {}, "bad-cq": {v1alpha1.LabelTenantTier: "platinum"}},
	}
	r := NewResolver(corelisters.NewNamespaceLister(idx), q)
	pod := func(name string) *corev1.Pod {
		// Every pod claims gold itself: never read.
		return testutil.MakePod(name, "team").Label(v1alpha1.LabelTenantTier, "gold").Obj()
	}
	for _, tc := range []struct {
		pod       string
		fromQueue bool
		want      v1alpha1.TenantTier
	}{
		{"via-gold", false, "silver"}, // the namespace, by default
		{"via-gold", true, "gold"},    // the admitting ClusterQueue's label
		{"via-plain", true, "silver"}, // a queue without a tier label: the namespace
		{"via-bad", true, "silver"},   // a queue with an invalid tier: the namespace
		{"not-kueue", true, "silver"}, // not admitted through Kueue
	} {
		r.SetFromClusterQueue(tc.fromQueue)
		if got := r.TierOf(pod(tc.pod)); got != tc.want {
			t.Errorf("%s (from queue %v): %q, want %q", tc.pod, tc.fromQueue, got, tc.want)
		}
	}
	if _, ok := r.Source(testutil.MakePod("x", "missing").Obj()); ok {
		t.Error("a namespace not in the cache reported as found")
	}
}
