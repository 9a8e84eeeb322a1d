package numatopology

import (
	"fmt"
	"testing"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement/numa"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestQueueingHints(t *testing.T) {
	guaranteed := []string{"cpu", "4", "memory", "1Gi"}
	pod := func(node string, ann map[string]string, limits []string) *corev1.Pod {
		w := testutil.MakePod("p", "ns").Node(node).Req(guaranteed...)
		if limits != nil {
			w = w.Limit(limits...)
		}
		for k, v := range ann {
			w = w.Annotation(k, v)
		}
		return w.Obj()
	}
	hinted := map[string]string{v1alpha1.AnnotationNUMAPolicy: "single-numa"}
	for _, tc := range []struct {
		name    string
		deleted *corev1.Pod
		want    fwk.QueueingHint
	}{
		{"a pending pod frees nothing", pod("", hinted, guaranteed), fwk.QueueSkip},
		{"a Burstable pod without a hint took no cell", pod("n1", nil, nil), fwk.QueueSkip},
		{"a Guaranteed pod may have pinned CPUs", pod("n1", nil, guaranteed), fwk.Queue},
		{"a pod with a hint took a cell", pod("n1", hinted, nil), fwk.Queue},
	} {
		if got, err := isSchedulableAfterPodDelete(klog.Background(), nil, tc.deleted, nil); err != nil || got != tc.want {
			t.Errorf("%s: %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
	labelled := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelNUMANodeCount: "2"}}}
	if got, _ := isSchedulableAfterNodeChange(klog.Background(), nil, nil, labelled); got != fwk.Queue {
		t.Errorf("a node with NUMA labels: %v", got)
	}
	if got, _ := isSchedulableAfterNodeChange(klog.Background(), nil, nil, &corev1.Node{}); got != fwk.QueueSkip {
		t.Errorf("a node without NUMA labels: %v", got)
	}
}

// An exporter republishes a node's report every few seconds; only a report that
// can admit a refused pod sends the refused pods back to the queue.
func TestOnlyALooseningReportRetriesRefusedPods(t *testing.T) {
	nrt := func(policy string, zones ...[2]string) *nrtv1alpha2.NodeResourceTopology {
		n := &nrtv1alpha2.NodeResourceTopology{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Attributes: nrtv1alpha2.AttributeList{{Name: numa.AttrTopologyManagerPolicy, Value: policy}}}
		for i, z := range zones {
			n.Zones = append(n.Zones, nrtv1alpha2.Zone{Name: fmt.Sprintf("node-%d", i), Type: numa.ZoneTypeNode, Resources: nrtv1alpha2.ResourceInfoList{{
				Name: "cpu", Capacity: resource.MustParse(z[0]), Allocatable: resource.MustParse(z[0]), Available: resource.MustParse(z[1]),
			}}})
		}
		return n
	}
	base := nrt("single-numa-node", [2]string{"32", "8"}, [2]string{"32", "12"})
	for _, tc := range []struct {
		name string
		next *nrtv1alpha2.NodeResourceTopology
		want bool
	}{
		{"the same report again", base, false},
		{"a busier cell", nrt("single-numa-node", [2]string{"32", "4"}, [2]string{"32", "12"}), false},
		{"a cell freed CPUs", nrt("single-numa-node", [2]string{"32", "8"}, [2]string{"32", "20"}), true},
		{"a cell grew", nrt("single-numa-node", [2]string{"48", "24"}, [2]string{"32", "12"}), true},
		{"another kubelet policy", nrt("restricted", [2]string{"32", "8"}, [2]string{"32", "12"}), true},
		{"another cell count", nrt("single-numa-node", [2]string{"32", "8"}), true},
		{"a report that cannot be read", &nrtv1alpha2.NodeResourceTopology{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, true},
		{"the report deleted", nil, true},
	} {
		pl, _ := newPlugin(t, nil) // no report yet
		if !pl.setReport(klog.Background(), "n1", base) {
			t.Fatalf("%s: a node's first report must retry the pods refused without one", tc.name)
		}
		if got := pl.setReport(klog.Background(), "n1", tc.next); got != tc.want {
			t.Errorf("%s: retries refused pods %v, want %v", tc.name, got, tc.want)
		}
		if got, want := pl.enforcing.Load(), int32(0); tc.next == nil && got != want {
			t.Errorf("%s: %d reports enforce a policy, want %d", tc.name, got, want)
		}
	}
}
