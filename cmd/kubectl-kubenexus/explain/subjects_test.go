package explain

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/ray"
)

// Which pods belong to the object named: the routing of explain, over a fake reader
// (the layers' verdicts are tested above and on a real API server).
func TestExplainFindsTheObjectsPods(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, kueue.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	rc := ray.RayCluster
	s.AddKnownTypeWithName(rc, &unstructured.Unstructured{})
	s.AddKnownTypeWithName(rc.GroupVersion().WithKind("RayClusterList"), &unstructured.UnstructuredList{})
	pod := func(name string, labels map[string]string, owner *metav1.OwnerReference) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, Labels: labels},
			Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return p
	}
	ctrl := func(kind, name string) *metav1.OwnerReference {
		yes := true
		return &metav1.OwnerReference{APIVersion: "x/v1", Kind: kind, Name: name, UID: "u", Controller: &yes}
	}
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(rc)
	cluster.SetNamespace("ml")
	cluster.SetName("sweep-raycluster-x7")
	cluster.SetLabels(map[string]string{"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "sweep"})
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "job-held", OwnerReferences: []metav1.OwnerReference{*ctrl("Job", "held")}},
		Spec: kueue.WorkloadSpec{QueueName: "team", PodSets: []kueue.PodSet{{Name: "main", Count: 2, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}}}}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("110")}}},
		cluster, wl,
		pod("sweep-head", map[string]string{"ray.io/cluster": "sweep-raycluster-x7", "ray.io/node-type": "head"}, ctrl("RayCluster", "sweep-raycluster-x7")),
		pod("other-head", map[string]string{"ray.io/cluster": "other", "ray.io/node-type": "head"}, ctrl("RayCluster", "other")),
		pod("tune-node-0-0", map[string]string{"jobset.sigs.k8s.io/jobset-name": "tune", "jobset.sigs.k8s.io/replicatedjob-name": "node"}, ctrl("Job", "tune-node-0")),
		pod("web-7d9f-abcde", map[string]string{"pod-template-hash": "7d9f"}, ctrl("ReplicaSet", "web-7d9f")),
	}
	e := &Explainer{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build(), Now: func() time.Time { return time.Unix(0, 0) }}
	ctx := context.Background()
	for _, tc := range []struct{ kind, name, want string }{
		{"rayjob", "sweep", "sweep-head"},
		{"trainjob", "tune", "tune-node-0-0"},
		{"jobset", "tune", "tune-node-0-0"},
		{"deploy", "web", "web-7d9f-abcde"},
	} {
		r, err := e.Explain(ctx, "ml", tc.kind, tc.name)
		if err != nil {
			t.Errorf("explain %s/%s: %v", tc.kind, tc.name, err)
			continue
		}
		if l := r.Sections[0].Line(LayerAdmission); len(r.Sections) != 1 || l == nil || l.Text == "no pods yet" {
			t.Errorf("explain %s/%s found no pod, want %s: %+v", tc.kind, tc.name, tc.want, r)
		}
	}
	// A Job Kueue holds (no pods yet) is placed from its Workload's pod sets.
	r, err := e.Explain(ctx, "ml", "job", "held")
	if err != nil {
		t.Fatal(err)
	}
	if l := r.Sections[0].Line(LayerCapacity); l == nil || l.Text != "1000m cpu free on the nodes open to them, 2000m needed (2 × 1000m cpu); they hold 1 of the 2 pods" {
		t.Errorf("explain job/held: capacity %+v, want the Workload's 2 pods placed", l)
	}
	if _, err := e.Explain(ctx, "ml", "rayjob", "absent"); err == nil || !strings.Contains(err.Error(), "RayJob ml/absent has no pods and no Kueue Workload") {
		t.Errorf("explain rayjob/absent: %v", err)
	}
}
