package workload

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/batch"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/jobset"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/kubeflow"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/lws"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/ray"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks/spark"
)

func TestGangSourceOf(t *testing.T) {
	pod := func(labels map[string]string, owner *metav1.OwnerReference) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return p
	}
	long := strings.Repeat("a", 60)
	cases := []struct {
		name     string
		pod      *corev1.Pod
		wantKind string
		wantName string
		wantGang string
	}{
		{"spark operator", pod(map[string]string{"spark-role": "driver", spark.LabelOperatorApp: "pi"}, nil), "SparkApplication", "pi", "pi-spark"},
		{"spark-submit", pod(map[string]string{"spark-role": "driver"}, nil), "", "", ""},
		{"pytorch", pod(map[string]string{kubeflow.LabelReplicaType: "Master", kubeflow.LabelJobName: "mnist", kubeflow.LabelOperator: "pytorchjob-controller"}, nil), "PyTorchJob", "mnist", "mnist-pytorch"},
		{"ray worker", pod(map[string]string{ray.LabelNodeType: "worker", ray.LabelCluster: "rc"}, nil), "RayCluster", "rc", "rc-ray"},
		{"lws group", pod(map[string]string{lws.LabelName: "llm", lws.LabelGroupIndex: "3"}, nil), "LeaderWorkerSet", "llm", "llm-leaderworkerset-3"},
		{"lws bad group index", pod(map[string]string{lws.LabelName: "llm", lws.LabelGroupIndex: "-1"}, nil), "", "", ""},
		{"job", pod(map[string]string{batch.LabelJobName: "report"}, &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "report", Controller: ptr.To(true)}), "Job", "report", "report-job"},
		{"job label without owner", pod(map[string]string{batch.LabelJobName: "report"}, nil), "", "", ""},
		{"service", pod(nil, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Controller: ptr.To(true)}), "", "", ""},
		{"long name is shortened to a label value", pod(map[string]string{jobset.LabelName: long}, nil), "JobSet", long, long[:50] + "-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Classify(tc.pod, Namespace{}, "")
			src, ok := GangSourceOf(tc.pod, p)
			if ok != (tc.wantKind != "") {
				t.Fatalf("ok=%v, want a source of kind %q", ok, tc.wantKind)
			}
			if !ok {
				return
			}
			if src.GVK.Kind != tc.wantKind || src.Name != tc.wantName || !strings.HasPrefix(src.Gang, tc.wantGang) || len(src.Gang) > 63 {
				t.Errorf("got %s %s gang %q", src.GVK.Kind, src.Name, src.Gang)
			}
		})
	}
}

// The owner is read at the version the pod's controller reference names, and the
// reference's UID is kept, when the reference is to the owner the labels name.
func TestGangSourceOfVersion(t *testing.T) {
	const kf = "training.kubeflow.org/"
	mpiPod := func(refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hvd-worker-0", Namespace: "ns", OwnerReferences: refs,
			Labels: map[string]string{kf + "replica-type": "worker", kf + "job-name": "hvd", kf + "operator-name": "mpijob-controller"}}}
	}
	ref := func(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "uid-1", Controller: ptr.To(controller)}
	}
	cases := []struct {
		name        string
		pod         *corev1.Pod
		wantVersion string
		wantUID     string
	}{
		{"training-operator MPIJob", mpiPod(ref("kubeflow.org/v1", "MPIJob", "hvd", true)), "v1", "uid-1"},
		{"mpi-operator MPIJob", mpiPod(ref("kubeflow.org/v2beta1", "MPIJob", "hvd", true)), "v2beta1", "uid-1"},
		{"no owner reference: the default version", mpiPod(), "v2beta1", ""},
		{"a reference that is not the controller", mpiPod(ref("kubeflow.org/v1", "MPIJob", "hvd", false)), "v2beta1", ""},
		{"the controller is another object", mpiPod(ref("kubeflow.org/v1", "MPIJob", "other", true)), "v2beta1", ""},
		{"another kind", mpiPod(ref("kubeflow.org/v1", "Notebook", "hvd", true)), "v2beta1", ""},
		{"another group", mpiPod(ref("example.com/v1", "MPIJob", "hvd", true)), "v2beta1", ""},
		{"a version that is no version", mpiPod(ref("kubeflow.org/V1.0", "MPIJob", "hvd", true)), "v2beta1", ""},
		{"an unparsable apiVersion", mpiPod(ref("kubeflow.org/v1/x", "MPIJob", "hvd", true)), "v2beta1", ""},
		{"a PyTorchJob", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			Labels:          map[string]string{kf + "replica-type": "worker", kf + "job-name": "mnist"},
			OwnerReferences: []metav1.OwnerReference{ref("kubeflow.org/v1", "PyTorchJob", "mnist", true)}}}, "v1", "uid-1"},
		{"a RayCluster at an older version", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			Labels:          map[string]string{ray.LabelNodeType: "worker", ray.LabelCluster: "rc"},
			OwnerReferences: []metav1.OwnerReference{ref("ray.io/v1alpha1", "RayCluster", "rc", true)}}}, "v1alpha1", "uid-1"},
		{"a JobSet pod is controlled by its Job", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			Labels:          map[string]string{jobset.LabelName: "js", jobset.LabelReplicated: "workers"},
			OwnerReferences: []metav1.OwnerReference{ref("batch/v1", "Job", "js-workers-0", true)}}}, "v1alpha2", ""},
		{"a JobSet pod names its JobSet's UID", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			Labels:          map[string]string{jobset.LabelName: "js", jobset.LabelReplicated: "workers", jobset.LabelUID: "uid-1"},
			OwnerReferences: []metav1.OwnerReference{ref("batch/v1", "Job", "js-workers-0", true)}}}, "v1alpha2", "uid-1"},
		{"a JobSet UID that is no label value", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			Labels: map[string]string{jobset.LabelName: "js", jobset.LabelUID: strings.Repeat("u", 64)}}}, "v1alpha2", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, ok := GangSourceOf(tc.pod, Classify(tc.pod, Namespace{}, ""))
			if !ok {
				t.Fatal("no gang source")
			}
			if src.GVK.Version != tc.wantVersion || string(src.UID) != tc.wantUID || src.Namespace != "ns" {
				t.Errorf("got %s uid %q in %q, want version %s uid %q", src.GVK, src.UID, src.Namespace, tc.wantVersion, tc.wantUID)
			}
		})
	}
}

func TestGangSourceOwnerReference(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "js-workers-0-0", Namespace: "ns",
		Labels:          map[string]string{jobset.LabelName: "js", jobset.LabelReplicated: "workers", jobset.LabelUID: "9f1c"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "js-workers-0", UID: "job-uid", Controller: ptr.To(true)}}}}
	src, ok := GangSourceOf(pod, Classify(pod, Namespace{}, ""))
	if !ok {
		t.Fatal("no gang source")
	}
	ref, ok := src.OwnerReference()
	want := metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: "9f1c"}
	if !ok || ref != want {
		t.Errorf("got %+v %v, want %+v", ref, ok, want)
	}
	delete(pod.Labels, jobset.LabelUID)
	src, _ = GangSourceOf(pod, Classify(pod, Namespace{}, ""))
	if _, ok := src.OwnerReference(); ok {
		t.Error("an owner reference without a UID")
	}
}

// A size is kept under the UID of the object read, so a recreated owner (same name,
// new UID) is never given its predecessor's size; failures are not kept.
func TestGangSizeCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := &GangSizeCache{now: func() time.Time { return now }}
	job := func(uid string, workers int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": map[string]any{"replicas": workers}}}}}
		u.SetUID(types.UID(uid))
		return u
	}
	var current *unstructured.Unstructured
	var readErr error
	reads := 0
	read := func() (*unstructured.Unstructured, error) {
		reads++
		return current, readErr
	}
	src := func(uid string) GangSource {
		return GangSource{GVK: kubeflow.PyTorchJob, Namespace: "ns", Name: "mnist", UID: types.UID(uid)}
	}
	size := func(s GangSource, wantSize int32, wantReads int) {
		t.Helper()
		got, err := c.Size(s, read)
		if err != nil {
			t.Fatal(err)
		}
		if got.MinMember != wantSize || reads != wantReads {
			t.Fatalf("size %d after %d reads, want %d after %d", got.MinMember, reads, wantSize, wantReads)
		}
	}

	current = job("uid-1", 4)
	size(src("uid-1"), 4, 1) // not kept yet: read
	size(src("uid-1"), 4, 1) // kept under the owner's UID
	size(src(""), 4, 2)      // no UID to look up: read, always

	// Deleted and recreated smaller at once, under the same name.
	current = job("uid-2", 2)
	size(src("uid-2"), 2, 3)
	size(src("uid-2"), 2, 3)
	size(src(""), 2, 4)
	size(src("uid-1"), 4, 4) // a leftover pod of the old job: the old job's size

	// A pod's claimed UID is only a key: a size is kept under the UID the object has.
	size(src("forged"), 2, 5)
	size(src("forged"), 2, 6)
	other := src("uid-2")
	other.Name = "other"
	size(other, 2, 7) // the name is part of the key

	// Failures are not kept.
	readErr = errors.New("not found")
	if _, err := c.Size(src("uid-3"), read); err == nil || reads != 8 {
		t.Fatalf("err %v after %d reads", err, reads)
	}
	readErr = nil
	current = job("uid-3", -1)
	if _, err := c.Size(src("uid-3"), read); err == nil || reads != 9 {
		t.Fatalf("err %v after %d reads", err, reads)
	}
	current = job("uid-3", 3)
	size(src("uid-3"), 3, 10)
	size(src("uid-3"), 3, 10)

	// Kept for ten seconds.
	now = now.Add(11 * time.Second)
	current = job("uid-3", 5)
	size(src("uid-3"), 5, 11)
}

func TestSizeFrom(t *testing.T) {
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	replicas := func(n int64) map[string]any { return map[string]any{"replicas": n} }
	minAvailable := func(n int64) map[string]any {
		return map[string]any{"schedulingPolicy": map[string]any{"minAvailable": n}}
	}
	mpiV1 := kubeflow.MPIJob
	mpiV1.Version = "v1"
	cases := []struct {
		name    string
		src     GangSource
		spec    map[string]any
		want    int32
		exclude v1alpha1.WorkloadRole
		wantErr string
	}{
		{"spark", GangSource{GVK: spark.SparkApplication}, map[string]any{"executor": map[string]any{"instances": int64(4)}}, 5, "", ""},
		{"spark without executors", GangSource{GVK: spark.SparkApplication}, map[string]any{}, 1, "", ""},
		{"spark dynamic allocation", GangSource{GVK: spark.SparkApplication}, map[string]any{"executor": map[string]any{"instances": int64(9)},
			"dynamicAllocation": map[string]any{"enabled": true, "minExecutors": int64(2)}}, 3, "", ""},
		{"pytorch default replicas", GangSource{GVK: kubeflow.PyTorchJob}, map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": map[string]any{}, "Worker": replicas(7)}}, 8, "", ""},
		{"tf", GangSource{GVK: kubeflow.TFJob}, map[string]any{"tfReplicaSpecs": map[string]any{"Chief": replicas(1), "PS": replicas(2), "Worker": replicas(4)}}, 7, "", ""},
		{"xgboost", GangSource{GVK: kubeflow.XGBoostJob}, map[string]any{"xgbReplicaSpecs": map[string]any{"Master": replicas(1), "Worker": replicas(2)}}, 3, "", ""},
		{"mpi late launcher", GangSource{GVK: kubeflow.MPIJob}, map[string]any{"launcherCreationPolicy": "WaitForWorkersReady",
			"mpiReplicaSpecs": map[string]any{"Launcher": replicas(1), "Worker": replicas(8)}}, 8, v1alpha1.RoleLauncher, ""},
		{"mpi launcher at start", GangSource{GVK: kubeflow.MPIJob}, map[string]any{"mpiReplicaSpecs": map[string]any{"Launcher": replicas(1), "Worker": replicas(8)}}, 9, "", ""},
		{"ray", GangSource{GVK: ray.RayCluster}, map[string]any{"workerGroupSpecs": []any{map[string]any{"minReplicas": int64(3)}, map[string]any{"minReplicas": int64(2), "numOfHosts": int64(4)}}}, 12, "", ""},
		{"jobset defaults", GangSource{GVK: jobset.JobSet}, map[string]any{"replicatedJobs": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "replicas": int64(3), "template": map[string]any{"spec": map[string]any{"parallelism": int64(2)}}}}}, 7, "", ""},
		{"lws", GangSource{GVK: lws.LeaderWorkerSet}, map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(8)}}, 8, "", ""},
		{"job parallelism capped by completions", GangSource{GVK: batch.Job}, map[string]any{"parallelism": int64(10), "completions": int64(4)}, 4, "", ""},
		{"job parallelism 0", GangSource{GVK: batch.Job, Name: "paused"}, map[string]any{"parallelism": int64(0)}, 0, "", "Job paused: its spec gives a gang of 0 pods"},
		{"negative replicas", GangSource{GVK: kubeflow.PyTorchJob, Name: "bad"}, map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": replicas(-3)}}, 0, "", "gang of -3 pods"},
		{"huge", GangSource{GVK: lws.LeaderWorkerSet, Name: "big"}, map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(1 << 40)}}, 0, "", "KubeNexus needs 1 to 100000"},
		{"wrong types are ignored, not trusted", GangSource{GVK: spark.SparkApplication}, map[string]any{"executor": map[string]any{"instances": "4"}}, 1, "", ""},

		// kubeflow.MPIJob at training-operator's kubeflow.org/v1: the launcher starts with the workers.
		{"mpi v1 launcher is a member", GangSource{GVK: mpiV1}, map[string]any{"mpiReplicaSpecs": map[string]any{"Launcher": replicas(1), "Worker": replicas(8)},
			"runPolicy": map[string]any{"cleanPodPolicy": "Running"}}, 9, "", ""},
		{"mpi v1 has no launcherCreationPolicy", GangSource{GVK: mpiV1}, map[string]any{"launcherCreationPolicy": "WaitForWorkersReady",
			"mpiReplicaSpecs": map[string]any{"Launcher": replicas(1), "Worker": replicas(8)}}, 9, "", ""},
		{"mpi v1 minAvailable", GangSource{GVK: mpiV1}, map[string]any{"mpiReplicaSpecs": map[string]any{"Launcher": replicas(1), "Worker": replicas(8)},
			"runPolicy": minAvailable(5)}, 5, "", ""},
		{"mpi v1 minAvailable above the replicas", GangSource{GVK: mpiV1, Name: "hvd"}, map[string]any{"mpiReplicaSpecs": map[string]any{"Launcher": replicas(1), "Worker": replicas(2)},
			"runPolicy": minAvailable(4)}, 0, "", "MPIJob hvd: spec.runPolicy.schedulingPolicy.minAvailable is 4, more than the 3 pods of spec.mpiReplicaSpecs"},
		{"mpi v2beta1 keeps its shape", GangSource{GVK: kubeflow.MPIJob}, map[string]any{"launcherCreationPolicy": "AtStartup",
			"mpiReplicaSpecs": map[string]any{"Launcher": replicas(1), "Worker": replicas(8)}}, 9, "", ""},

		// Kubeflow's declared minimum.
		{"pytorch minAvailable below the replicas", GangSource{GVK: kubeflow.PyTorchJob}, map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": replicas(1), "Worker": replicas(7)},
			"runPolicy": minAvailable(3)}, 3, "", ""},
		{"pytorch minAvailable equal to the replicas", GangSource{GVK: kubeflow.PyTorchJob}, map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": replicas(1), "Worker": replicas(7)},
			"runPolicy": minAvailable(8)}, 8, "", ""},
		{"pytorch schedulingPolicy without minAvailable", GangSource{GVK: kubeflow.PyTorchJob}, map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": replicas(1), "Worker": replicas(7)},
			"runPolicy": map[string]any{"schedulingPolicy": map[string]any{"queue": "q"}}}, 8, "", ""},
		{"tf minAvailable 0 is ignored", GangSource{GVK: kubeflow.TFJob}, map[string]any{"tfReplicaSpecs": map[string]any{"Chief": replicas(1), "Worker": replicas(4)},
			"runPolicy": minAvailable(0)}, 5, "", ""},
		{"xgboost negative minAvailable is ignored", GangSource{GVK: kubeflow.XGBoostJob}, map[string]any{"xgbReplicaSpecs": map[string]any{"Master": replicas(1), "Worker": replicas(2)},
			"runPolicy": minAvailable(-2)}, 3, "", ""},
		{"minAvailable of another type is ignored", GangSource{GVK: kubeflow.PyTorchJob}, map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": replicas(4)},
			"runPolicy": map[string]any{"schedulingPolicy": map[string]any{"minAvailable": "2"}}}, 4, "", ""},
		{"tf minAvailable above the replicas", GangSource{GVK: kubeflow.TFJob, Name: "tf1"}, map[string]any{"tfReplicaSpecs": map[string]any{"Chief": replicas(1), "Worker": replicas(4)},
			"runPolicy": minAvailable(6)}, 0, "", "TFJob tf1: spec.runPolicy.schedulingPolicy.minAvailable is 6, more than the 5 pods of spec.tfReplicaSpecs"},
		{"minAvailable does not hide bad replicas", GangSource{GVK: kubeflow.PyTorchJob, Name: "bad"}, map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": replicas(-3)},
			"runPolicy": minAvailable(2)}, 0, "", "gang of -3 pods"},
		{"sums do not overflow into a plausible size", GangSource{GVK: kubeflow.PyTorchJob, Name: "wrap"}, map[string]any{"pytorchReplicaSpecs": map[string]any{
			"A": replicas(1 << 62), "B": replicas(1 << 62), "C": replicas(1 << 62), "D": replicas(1 << 62), "E": replicas(5)}}, 0, "", "more than 100000 pods"},
		{"spark executors do not overflow", GangSource{GVK: spark.SparkApplication, Name: "wrap"}, map[string]any{"executor": map[string]any{"instances": int64(1<<63 - 1)}}, 0, "", "more than 100000 pods"},
		{"products do not overflow", GangSource{GVK: ray.RayCluster, Name: "wrap"}, map[string]any{"workerGroupSpecs": []any{map[string]any{"minReplicas": int64(1 << 32), "numOfHosts": int64(1 << 32)}}}, 0, "", "more than 100000 pods"},

		// The other frameworks' minimums.
		{"ray minReplicas, not replicas", GangSource{GVK: ray.RayCluster}, map[string]any{"workerGroupSpecs": []any{map[string]any{"replicas": int64(10), "minReplicas": int64(2), "maxReplicas": int64(20)}}}, 3, "", ""},
		{"jobset jobs capped by completions", GangSource{GVK: jobset.JobSet}, map[string]any{"replicatedJobs": []any{
			map[string]any{"name": "driver", "template": map[string]any{"spec": map[string]any{"parallelism": int64(4), "completions": int64(1)}}},
			map[string]any{"name": "workers", "replicas": int64(2), "template": map[string]any{"spec": map[string]any{"parallelism": int64(4), "completions": int64(3)}}},
			map[string]any{"name": "many", "replicas": int64(1), "template": map[string]any{"spec": map[string]any{"parallelism": int64(2), "completions": int64(10)}}}}}, 9, "", ""},
		{"jobset with a startupPolicy", GangSource{GVK: jobset.JobSet}, map[string]any{"startupPolicy": map[string]any{"startupPolicyOrder": "InOrder"},
			"replicatedJobs": []any{map[string]any{"name": "w", "replicas": int64(3), "template": map[string]any{"spec": map[string]any{"parallelism": int64(2)}}}}}, 6, "", ""},
		{"lws group size", GangSource{GVK: lws.LeaderWorkerSet}, map[string]any{"replicas": int64(5), "leaderWorkerTemplate": map[string]any{"size": int64(3)}}, 3, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SizeFrom(tc.src, obj(tc.spec))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.MinMember != tc.want || got.ExcludesRole != tc.exclude {
				t.Errorf("got %+v, want %d excluding %q", got, tc.want, tc.exclude)
			}
		})
	}
}

// A jobset.JobSet whose replicated jobs start one after another (dependsOn, InOrder) is
// ganged by stage: the pods of a stage are pending together, never with another's.
func TestJobSetStages(t *testing.T) {
	rj := func(name string, replicas, parallelism int64, deps ...string) map[string]any {
		m := map[string]any{"name": name, "replicas": replicas, "template": map[string]any{"spec": map[string]any{"parallelism": parallelism}}}
		if len(deps) > 0 {
			var d []any
			for _, n := range deps {
				d = append(d, map[string]any{"name": n, "status": "Complete"})
			}
			m["dependsOn"] = d
		}
		return m
	}
	// Kubeflow Trainer's torchtune runtime: two initializers, then 4 training nodes.
	trainJob := map[string]any{"replicatedJobs": []any{rj("dataset-initializer", 1, 1), rj("model-initializer", 1, 1),
		rj("node", 1, 4, "dataset-initializer", "model-initializer")}}
	chain := map[string]any{"replicatedJobs": []any{rj("a", 1, 1), rj("b", 2, 2, "a"), rj("c", 1, 3, "b"), rj("d", 1, 1, "a")}}
	inOrder := map[string]any{"startupPolicy": map[string]any{"startupPolicyOrder": "InOrder"},
		"replicatedJobs": []any{rj("driver", 1, 1), rj("workers", 2, 4)}}
	deep := map[string]any{}
	var jobs []any
	for i := range jobset.MaxStages + 1 {
		if i == 0 {
			jobs = append(jobs, rj("s0", 1, 1))
			continue
		}
		jobs = append(jobs, rj(fmt.Sprint("s", i), 1, 1, fmt.Sprint("s", i-1)))
	}
	deep["replicatedJobs"] = jobs
	src := func(part string) GangSource {
		return GangSource{GVK: jobset.JobSet, Name: "tune", Gang: "tune-jobset", Part: part}
	}
	cases := []struct {
		name     string
		spec     map[string]any
		part     string
		want     int32
		wantGang string // "": the jobset.JobSet's own gang
		wantErr  string
	}{
		{"trainer initializers: the first stage", trainJob, "model-initializer", 2, "", ""},
		{"trainer nodes: the second stage, alone", trainJob, "node", 4, "tune-jobset-stage1", ""},
		{"a chain: b after a, with d", chain, "b", 5, "tune-jobset-stage1", ""},
		{"a chain: d after a shares b's stage", chain, "d", 5, "tune-jobset-stage1", ""},
		{"a chain: c after b", chain, "c", 3, "tune-jobset-stage2", ""},
		{"InOrder: each replicated job its own stage", inOrder, "workers", 8, "tune-jobset-stage1", ""},
		{"InOrder: the driver first", inOrder, "driver", 1, "", ""},
		{"a replicated job the spec does not have", trainJob, "evil", 0, "", `JobSet tune runs its replicated jobs in 2 stages and has none named "evil"`},
		{"too many stages", deep, "s1", 0, "", fmt.Sprintf("starts after %d others", jobset.MaxStages)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SizeFrom(src(tc.part), &unstructured.Unstructured{Object: map[string]any{"spec": tc.spec}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.MinMember != tc.want || got.Gang != tc.wantGang {
				t.Errorf("got %d in gang %q, want %d in %q", got.MinMember, got.Gang, tc.want, tc.wantGang)
			}
			if gang := cmp.Or(got.Gang, "tune-jobset"); !src(tc.part).Forms(gang) {
				t.Errorf("Forms(%q) is false: the PodGroup controller would not know the gang as the JobSet's", gang)
			}
		})
	}
	if (GangSource{GVK: jobset.JobSet, Name: "tune", Gang: "tune-jobset"}).Forms("other-jobset-stage1") {
		t.Error("Forms accepts another JobSet's stage")
	}
}

// Whatever the labels say, an automatic gang name is a valid PodGroup name and label
// value, and the gang labels the webhook writes from it parse.
func FuzzGangSourceOf(f *testing.F) {
	f.Add("pytorchjob-controller", "mnist", "worker", "3")
	f.Add("", "My_Job", "Launcher", "x")
	f.Add("mpijob-controller", strings.Repeat("a.", 31)+"b", "launcher", "0")
	f.Fuzz(func(t *testing.T, operator, owner, role, group string) {
		for _, labels := range []map[string]string{
			{kubeflow.LabelOperator: operator, kubeflow.LabelJobName: owner, kubeflow.LabelReplicaType: role},
			{"spark-role": role, spark.LabelOperatorApp: owner},
			{ray.LabelNodeType: role, ray.LabelCluster: owner},
			{jobset.LabelName: owner, jobset.LabelReplicated: role},
			{lws.LabelName: owner, lws.LabelGroupIndex: group},
		} {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels}}
			src, ok := GangSourceOf(pod, Classify(pod, Namespace{}, ""))
			if !ok {
				continue
			}
			if len(src.Gang) > 63 || !gangNameValid(src.Gang) {
				t.Fatalf("gang name %q from owner %q is not a valid PodGroup name and label value", src.Gang, owner)
			}
			pod.Labels = map[string]string{v1alpha1.LabelKubeNexusGangName: src.Gang, v1alpha1.LabelKubeNexusGangMinAvailable: "2"}
			if p := Classify(pod, Namespace{}, ""); p.Gang == nil || p.GangError != nil {
				t.Fatalf("gang labels %v do not parse: %v", pod.Labels, p.GangError)
			}
		}
	})
}

func gangNameValid(s string) bool {
	return len(validation.IsDNS1123Subdomain(s)) == 0 && len(validation.IsValidLabelValue(s)) == 0
}

func TestMaxMembersFrom(t *testing.T) {
	obj := func(gvk schema.GroupVersionKind, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(gvk)
		return u
	}
	tests := map[string]struct {
		gvk  schema.GroupVersionKind
		spec map[string]any
		want int32
	}{
		"PyTorchJob: its replicas, not its declared minimum": {kubeflow.PyTorchJob, map[string]any{
			"runPolicy":           map[string]any{"schedulingPolicy": map[string]any{"minAvailable": int64(3)}},
			"pytorchReplicaSpecs": map[string]any{"Master": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(7)}}}, 8},
		"Spark with dynamic allocation: up to maxExecutors": {spark.SparkApplication, map[string]any{
			"executor": map[string]any{"instances": int64(2)}, "dynamicAllocation": map[string]any{"enabled": true, "minExecutors": int64(1), "maxExecutors": int64(10)}}, 11},
		"Ray: maxReplicas per group": {ray.RayCluster, map[string]any{"workerGroupSpecs": []any{
			map[string]any{"minReplicas": int64(1), "maxReplicas": int64(4)}, map[string]any{"replicas": int64(2), "numOfHosts": int64(2)}}}, 9},
		"mpi-operator MPIJob counts the launcher": {kubeflow.MPIJob, map[string]any{"launcherCreationPolicy": "WaitForWorkersReady",
			"mpiReplicaSpecs": map[string]any{"Launcher": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(4)}}}, 5},
		"batch Job: as its gang size": {batch.Job, map[string]any{"parallelism": int64(3)}, 3},
	}
	for name, tc := range tests {
		got, err := MaxMembersFrom(GangSource{GVK: tc.gvk, Name: "x"}, obj(tc.gvk, tc.spec))
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", name, got, err, tc.want)
		}
	}
}

func TestSubgroupOf(t *testing.T) {
	group := func(labels, annotations map[string]string) *corev1.Pod {
		l := map[string]string{lws.LabelName: "prefill", lws.LabelGroupIndex: "2"}
		maps.Copy(l, labels)
		a := map[string]string{lws.AnnotationSize: "4"}
		maps.Copy(a, annotations)
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: l, Annotations: a}}
	}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		wantKey  string
		wantSize int
	}{
		{"a LeaderWorkerSet group", group(nil, nil), "prefill/2", 4},
		{"not a LeaderWorkerSet pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{lws.AnnotationSize: "4"}}}, "", 0},
		{"a group of one", group(nil, map[string]string{lws.AnnotationSize: "1"}), "", 0},
		{"a size that is no number", group(nil, map[string]string{lws.AnnotationSize: "many"}), "", 0},
		{"a size beyond any gang", group(nil, map[string]string{lws.AnnotationSize: "1000000"}), "", 0},
		{"a group index that is no number", group(map[string]string{lws.LabelGroupIndex: "x"}, nil), "", 0},
		{"leader first (exclusive topology): the workers come later", group(nil, map[string]string{v1alpha1.AnnotationLWSExclusiveTopology: "rack"}), "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key, size, ok := SubgroupOf(tc.pod)
			if key != tc.wantKey || size != tc.wantSize || ok != (tc.wantKey != "") {
				t.Errorf("SubgroupOf = %q, %d, %v; want %q, %d", key, size, ok, tc.wantKey, tc.wantSize)
			}
		})
	}
}
