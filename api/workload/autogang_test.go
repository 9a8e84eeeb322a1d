package workload

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
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
		{"spark operator", pod(map[string]string{"spark-role": "driver", labelSparkOperatorApp: "pi"}, nil), "SparkApplication", "pi", "pi-spark"},
		{"spark-submit", pod(map[string]string{"spark-role": "driver"}, nil), "", "", ""},
		{"pytorch", pod(map[string]string{labelKubeflowReplica: "Master", labelKubeflowJobName: "mnist", labelKubeflowOperator: "pytorchjob-controller"}, nil), "PyTorchJob", "mnist", "mnist-pytorch"},
		{"ray worker", pod(map[string]string{labelRayNodeType: "worker", labelRayCluster: "rc"}, nil), "RayCluster", "rc", "rc-ray"},
		{"lws group", pod(map[string]string{labelLWSName: "llm", labelLWSGroupIndex: "3"}, nil), "LeaderWorkerSet", "llm", "llm-leaderworkerset-3"},
		{"lws bad group index", pod(map[string]string{labelLWSName: "llm", labelLWSGroupIndex: "-1"}, nil), "", "", ""},
		{"job", pod(map[string]string{labelBatchJobName: "report"}, &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "report", Controller: ptr.To(true)}), "Job", "report", "report-job"},
		{"job label without owner", pod(map[string]string{labelBatchJobName: "report"}, nil), "", "", ""},
		{"service", pod(nil, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Controller: ptr.To(true)}), "", "", ""},
		{"long name is shortened to a label value", pod(map[string]string{labelJobSetName: long}, nil), "JobSet", long, long[:50] + "-"},
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

func TestSizeFrom(t *testing.T) {
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	replicas := func(n int64) map[string]any { return map[string]any{"replicas": n} }
	cases := []struct {
		name    string
		src     GangSource
		spec    map[string]any
		want    int32
		exclude v1alpha1.WorkloadRole
		wantErr string
	}{
		{"spark", GangSource{GVK: SparkApplication}, map[string]any{"executor": map[string]any{"instances": int64(4)}}, 5, "", ""},
		{"spark without executors", GangSource{GVK: SparkApplication}, map[string]any{}, 1, "", ""},
		{"spark dynamic allocation", GangSource{GVK: SparkApplication}, map[string]any{"executor": map[string]any{"instances": int64(9)},
			"dynamicAllocation": map[string]any{"enabled": true, "minExecutors": int64(2)}}, 3, "", ""},
		{"pytorch default replicas", GangSource{GVK: PyTorchJob}, map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": map[string]any{}, "Worker": replicas(7)}}, 8, "", ""},
		{"tf", GangSource{GVK: TFJob}, map[string]any{"tfReplicaSpecs": map[string]any{"Chief": replicas(1), "PS": replicas(2), "Worker": replicas(4)}}, 7, "", ""},
		{"xgboost", GangSource{GVK: XGBoostJob}, map[string]any{"xgbReplicaSpecs": map[string]any{"Master": replicas(1), "Worker": replicas(2)}}, 3, "", ""},
		{"mpi late launcher", GangSource{GVK: MPIJob}, map[string]any{"launcherCreationPolicy": "WaitForWorkersReady",
			"mpiReplicaSpecs": map[string]any{"Launcher": replicas(1), "Worker": replicas(8)}}, 8, v1alpha1.RoleLauncher, ""},
		{"mpi launcher at start", GangSource{GVK: MPIJob}, map[string]any{"mpiReplicaSpecs": map[string]any{"Launcher": replicas(1), "Worker": replicas(8)}}, 9, "", ""},
		{"ray", GangSource{GVK: RayCluster}, map[string]any{"workerGroupSpecs": []any{map[string]any{"minReplicas": int64(3)}, map[string]any{"minReplicas": int64(2), "numOfHosts": int64(4)}}}, 12, "", ""},
		{"jobset defaults", GangSource{GVK: JobSet}, map[string]any{"replicatedJobs": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "replicas": int64(3), "template": map[string]any{"spec": map[string]any{"parallelism": int64(2)}}}}}, 7, "", ""},
		{"lws", GangSource{GVK: LeaderWorkerSet}, map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(8)}}, 8, "", ""},
		{"job parallelism capped by completions", GangSource{GVK: BatchJob}, map[string]any{"parallelism": int64(10), "completions": int64(4)}, 4, "", ""},
		{"job parallelism 0", GangSource{GVK: BatchJob, Name: "paused"}, map[string]any{"parallelism": int64(0)}, 0, "", "Job paused: its spec gives a gang of 0 pods"},
		{"negative replicas", GangSource{GVK: PyTorchJob, Name: "bad"}, map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": replicas(-3)}}, 0, "", "gang of -3 pods"},
		{"huge", GangSource{GVK: LeaderWorkerSet, Name: "big"}, map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(1 << 40)}}, 0, "", "KubeNexus needs 1 to 100000"},
		{"wrong types are ignored, not trusted", GangSource{GVK: SparkApplication}, map[string]any{"executor": map[string]any{"instances": "4"}}, 1, "", ""},
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

// Whatever the labels say, an automatic gang name is a valid PodGroup name and label
// value, and the gang labels the webhook writes from it parse.
func FuzzGangSourceOf(f *testing.F) {
	f.Add("pytorchjob-controller", "mnist", "worker", "3")
	f.Add("", "My_Job", "Launcher", "x")
	f.Add("mpijob-controller", strings.Repeat("a.", 31)+"b", "launcher", "0")
	f.Fuzz(func(t *testing.T, operator, owner, role, group string) {
		for _, labels := range []map[string]string{
			{labelKubeflowOperator: operator, labelKubeflowJobName: owner, labelKubeflowReplica: role},
			{"spark-role": role, labelSparkOperatorApp: owner},
			{labelRayNodeType: role, labelRayCluster: owner},
			{labelJobSetName: owner, labelJobSetReplicated: role},
			{labelLWSName: owner, labelLWSGroupIndex: group},
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
