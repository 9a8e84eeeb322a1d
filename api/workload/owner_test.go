package workload

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/jobset"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/lws"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/ray"
)

// controls is a controller reference to an object.
func controls(apiVersion, kind, name, uid string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}
}

// chain answers controller lookups from a table keyed by the UID of the object asked
// about, as the API would.
type chain map[types.UID]*metav1.OwnerReference

func (c chain) controllerOf(_ string, ref metav1.OwnerReference) (*metav1.OwnerReference, error) {
	return c[ref.UID], nil
}

func TestResolveOwner(t *testing.T) {
	pod := func(labels map[string]string, owner *metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels, OwnerReferences: []metav1.OwnerReference{*owner}}}
	}
	jobsetV1alpha2 := "jobset.x-k8s.io/v1alpha2"
	lwsV1 := "leaderworkerset.x-k8s.io/v1"
	// JobSet: pod → Job "js-workers-0" → jobset.JobSet "js".
	jobsetChain := chain{"job-uid": controls(jobsetV1alpha2, "JobSet", "js", "js-uid")}
	// lws.LeaderWorkerSet v0.7: the leader pod → leader StatefulSet "llm" → LWS "llm"; a
	// worker → worker StatefulSet "llm-1" → leader pod "llm-1" → StatefulSet "llm" → LWS.
	lwsChain := chain{
		"sts-leader-uid": controls(lwsV1, "LeaderWorkerSet", "llm", "lws-uid"),
		"sts-group-uid":  controls("v1", "Pod", "llm-1", "leader-pod-uid"),
		"leader-pod-uid": controls("apps/v1", "StatefulSet", "llm", "sts-leader-uid"),
	}
	jobsetLabels := map[string]string{jobset.LabelName: "js", jobset.LabelReplicated: "workers"}
	tests := map[string]struct {
		pod   *corev1.Pod
		chain chain
		want  *metav1.OwnerReference // nil: not found
	}{
		"JobSet v0.8 (no jobset-uid label): through the child Job": {
			pod:   pod(jobsetLabels, controls("batch/v1", "Job", "js-workers-0", "job-uid")),
			chain: jobsetChain,
			want:  &metav1.OwnerReference{APIVersion: jobsetV1alpha2, Kind: "JobSet", Name: "js", UID: "js-uid"},
		},
		"JobSet v0.10: the chain's UID, not the label's claim": {
			pod:   pod(map[string]string{jobset.LabelName: "js", jobset.LabelReplicated: "workers", jobset.LabelUID: "claimed"}, controls("batch/v1", "Job", "js-workers-0", "job-uid")),
			chain: jobsetChain,
			want:  &metav1.OwnerReference{APIVersion: jobsetV1alpha2, Kind: "JobSet", Name: "js", UID: "js-uid"},
		},
		"LeaderWorkerSet v0.7 leader: through the leader StatefulSet": {
			pod:   pod(map[string]string{lws.LabelName: "llm", lws.LabelGroupIndex: "1", lws.LabelWorkerIndex: "0"}, controls("apps/v1", "StatefulSet", "llm", "sts-leader-uid")),
			chain: lwsChain,
			want:  &metav1.OwnerReference{APIVersion: lwsV1, Kind: "LeaderWorkerSet", Name: "llm", UID: "lws-uid"},
		},
		"LeaderWorkerSet v0.7 worker: through its group's StatefulSet and leader pod": {
			pod:   pod(map[string]string{lws.LabelName: "llm", lws.LabelGroupIndex: "1", lws.LabelWorkerIndex: "2"}, controls("apps/v1", "StatefulSet", "llm-1", "sts-group-uid")),
			chain: lwsChain,
			want:  &metav1.OwnerReference{APIVersion: lwsV1, Kind: "LeaderWorkerSet", Name: "llm", UID: "lws-uid"},
		},
		"Kubeflow Trainer: a TrainJob's JobSet, owned by the TrainJob": {
			pod: pod(jobsetLabels, controls("batch/v1", "Job", "js-workers-0", "job-uid")),
			chain: chain{"job-uid": controls(jobsetV1alpha2, "JobSet", "js", "js-uid"),
				"js-uid": controls("trainer.kubeflow.org/v1alpha1", "TrainJob", "js", "tj-uid")},
			want: &metav1.OwnerReference{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: "js", UID: "tj-uid"},
		},
		"a JobSet some other controller owns stays the owner": {
			pod: pod(jobsetLabels, controls("batch/v1", "Job", "js-workers-0", "job-uid")),
			chain: chain{"job-uid": controls(jobsetV1alpha2, "JobSet", "js", "js-uid"),
				"js-uid": controls("example.com/v1", "Pipeline", "p", "p-uid")},
			want: &metav1.OwnerReference{APIVersion: jobsetV1alpha2, Kind: "JobSet", Name: "js", UID: "js-uid"},
		},
		"KubeRay: a RayJob's RayCluster, owned by the RayJob": {
			pod:   pod(map[string]string{ray.LabelCluster: "rj-abcde", "ray.io/node-type": "worker"}, controls("ray.io/v1", "RayCluster", "rj-abcde", "rc-uid")),
			chain: chain{"rc-uid": controls("ray.io/v1", "RayJob", "rj", "rj-uid")},
			want:  &metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: "RayJob", Name: "rj", UID: "rj-uid"},
		},
		"labels naming another JobSet than the chain reaches": {
			pod:   pod(map[string]string{jobset.LabelName: "other", jobset.LabelReplicated: "workers"}, controls("batch/v1", "Job", "js-workers-0", "job-uid")),
			chain: jobsetChain,
		},
		"a chain that ends before the source (the JobSet is gone)": {
			pod:   pod(jobsetLabels, controls("batch/v1", "Job", "js-workers-0", "job-uid")),
			chain: chain{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src, ok := GangSourceOf(tc.pod, Classify(tc.pod, Namespace{}, ""))
			if !ok {
				t.Fatalf("no gang source for %v", tc.pod.Labels)
			}
			got, found, err := src.ResolveOwner(tc.pod, tc.chain.controllerOf)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if found {
					t.Errorf("found owner %v, want none", got)
				}
				return
			}
			if !found {
				t.Fatalf("no owner found, want %v", *tc.want)
			}
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("owner (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveOwnerStops(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{jobset.LabelName: "js"},
		OwnerReferences: []metav1.OwnerReference{*controls("batch/v1", "Job", "a", "a-uid")}}}
	src, _ := GangSourceOf(p, Classify(p, Namespace{}, ""))

	loop := chain{"a-uid": controls("batch/v1", "Job", "b", "b-uid"), "b-uid": controls("batch/v1", "Job", "a", "a-uid")}
	if _, found, err := src.ResolveOwner(p, loop.controllerOf); found || err != nil {
		t.Errorf("a loop of controller references: found %v, error %v; want the walk to end with nothing", found, err)
	}

	calls := 0
	endless := func(string, metav1.OwnerReference) (*metav1.OwnerReference, error) {
		calls++
		return controls("batch/v1", "Job", "j", string(rune('a'+calls))), nil
	}
	if _, found, err := src.ResolveOwner(p, endless); found || err != nil || calls > maxOwnerDepth {
		t.Errorf("an endless chain: found %v, error %v after %d lookups; want nothing after at most %d", found, err, calls, maxOwnerDepth)
	}

	failing := errors.New("apiserver unavailable")
	if _, _, err := src.ResolveOwner(p, func(string, metav1.OwnerReference) (*metav1.OwnerReference, error) { return nil, failing }); !errors.Is(err, failing) {
		t.Errorf("a failed lookup: error %v, want %v", err, failing)
	}
}

func TestDefaultRecovery(t *testing.T) {
	for gk, want := range map[schema.GroupKind]v1alpha1.RecoveryPolicy{
		{Group: "kubeflow.org", Kind: "MPIJob"}:                      v1alpha1.RecoveryRestartGang,
		{Group: "kubeflow.org", Kind: "PyTorchJob"}:                  v1alpha1.RecoveryRepair,
		{Group: "jobset.x-k8s.io", Kind: "JobSet"}:                   v1alpha1.RecoveryRepair,
		{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: v1alpha1.RecoveryRepair,
		{}: v1alpha1.RecoveryRepair, // a PodGroup of no workload
	} {
		if got := DefaultRecovery(gk); got != want {
			t.Errorf("DefaultRecovery(%v) = %s, want %s", gk, got, want)
		}
	}
}
