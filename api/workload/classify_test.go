package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func owned(p *corev1.Pod, kind string) *corev1.Pod {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "x/v1", Kind: kind, Name: "o", UID: "u", Controller: ptr.To(true)}}
	return p
}

func TestClassify(t *testing.T) {
	gold := Namespace{Labels: map[string]string{"tenant.kubenexus.io/tier": "gold"}}
	tests := map[string]struct {
		pod  *corev1.Pod
		ns   Namespace
		want Profile
	}{
		"plain pod is a service": {
			pod:  testutil.MakePod("p", "ns").Obj(),
			want: Profile{Class: "service", Tier: "bronze"},
		},
		"deployment pod is a service in a gold namespace": {
			pod:  owned(testutil.MakePod("p", "ns").Obj(), "ReplicaSet"),
			ns:   gold,
			want: Profile{Class: "service", Tier: "gold"},
		},
		"statefulset pod": {
			pod:  owned(testutil.MakePod("p", "ns").Obj(), "StatefulSet"),
			want: Profile{Class: "service", Tier: "bronze"},
		},
		"spark driver": {
			pod:  testutil.MakePod("p", "ns").Label("spark-role", "driver").Label("sparkoperator.k8s.io/app-name", "etl").Obj(),
			want: Profile{Class: "batch", Role: "driver", Framework: "spark", Tier: "bronze"},
		},
		"spark executor from spark-submit": {
			pod:  testutil.MakePod("p", "ns").Label("spark-role", "executor").Obj(),
			want: Profile{Class: "batch", Role: "executor", Framework: "spark", Tier: "bronze"},
		},
		"pytorch master, upper-case replica type": {
			pod:  testutil.MakePod("p", "ns").Label("training.kubeflow.org/replica-type", "Master").Label("training.kubeflow.org/operator-name", "pytorchjob-controller").Obj(),
			want: Profile{Class: "training", Role: "master", Framework: "pytorch", Tier: "bronze"},
		},
		"tensorflow ps by owner": {
			pod:  owned(testutil.MakePod("p", "ns").Label("training.kubeflow.org/replica-type", "ps").Obj(), "TFJob"),
			want: Profile{Class: "training", Role: "ps", Framework: "tensorflow", Tier: "bronze"},
		},
		"mpi launcher": {
			pod:  testutil.MakePod("p", "ns").Label("training.kubeflow.org/job-role", "launcher").Obj(),
			want: Profile{Class: "training", Role: "launcher", Framework: "mpi", Tier: "bronze"},
		},
		"xgboost worker": {
			pod:  testutil.MakePod("p", "ns").Label("training.kubeflow.org/replica-type", "worker").Label("training.kubeflow.org/operator-name", "xgboostjob-controller").Obj(),
			want: Profile{Class: "training", Role: "worker", Framework: "xgboost", Tier: "bronze"},
		},
		"trainer v2 jobset node": {
			pod:  testutil.MakePod("p", "ns").Label("jobset.sigs.k8s.io/jobset-name", "llm").Label("jobset.sigs.k8s.io/replicatedjob-name", "Worker").Label("trainer.kubeflow.org/trainjob-ancestor-step", "trainer").Obj(),
			want: Profile{Class: "training", Role: "worker", Framework: "jobset", Tier: "bronze"},
		},
		"ray head": {
			pod:  testutil.MakePod("p", "ns").Label("ray.io/node-type", "head").Obj(),
			want: Profile{Class: "batch", Role: "head", Framework: "ray", Tier: "bronze"},
		},
		"lws leader": {
			pod:  testutil.MakePod("p", "ns").Label("leaderworkerset.sigs.k8s.io/name", "vllm").Label("leaderworkerset.sigs.k8s.io/worker-index", "0").Obj(),
			want: Profile{Class: "inference", Role: "leader", Framework: "leaderworkerset", Tier: "bronze"},
		},
		"kserve predictor": {
			pod:  owned(testutil.MakePod("p", "ns").Label("serving.kserve.io/inferenceservice", "llama").Obj(), "ReplicaSet"),
			want: Profile{Class: "inference", Tier: "bronze"},
		},
		"jupyter notebook": {
			pod:  testutil.MakePod("p", "ns").Label("app.jupyter.org/hub-version", "4.0").Obj(),
			want: Profile{Class: "interactive", Tier: "bronze"},
		},
		"argo workflow step": {
			pod:  testutil.MakePod("p", "ns").Label("workflows.argoproj.io/workflow", "wf").Obj(),
			want: Profile{Class: "batch", Tier: "bronze"},
		},
		"batch job pod": {
			pod:  owned(testutil.MakePod("p", "ns").Label("batch.kubernetes.io/job-name", "j").Obj(), "Job"),
			want: Profile{Class: "batch", Framework: "job", Tier: "bronze"},
		},
		"bare GPU pod is training": {
			pod:  testutil.MakePod("p", "ns").Req("nvidia.com/gpu", "2").Obj(),
			want: Profile{Class: "training", Tier: "bronze"},
		},
		"explicit class wins": {
			pod:  testutil.MakePod("p", "ns").Label("spark-role", "driver").Label("workload.kubenexus.io/type", "interactive").Obj(),
			want: Profile{Class: "interactive", Role: "driver", Framework: "spark", Tier: "bronze"},
		},
		"unknown explicit class is ignored": {
			pod:  testutil.MakePod("p", "ns").Label("workload.kubenexus.io/type", "vip").Obj(),
			want: Profile{Class: "service", Tier: "bronze"},
		},
		"pod claiming gold in a bronze namespace stays bronze": {
			pod:  testutil.MakePod("p", "ns").Label("tenant.kubenexus.io/tier", "gold").Obj(),
			ns:   Namespace{Labels: map[string]string{"tenant.kubenexus.io/tier": "bronze"}},
			want: Profile{Class: "service", Tier: "bronze"},
		},
		"unknown role value is dropped": {
			pod:  testutil.MakePod("p", "ns").Label("spark-role", "admin").Obj(),
			want: Profile{Class: "batch", Framework: "spark", Tier: "bronze"},
		},
		"a role the pod names itself counts when its framework gives none": {
			pod:  testutil.MakePod("p", "ns").Label("workload.kubenexus.io/role", "prefill").Obj(),
			want: Profile{Class: "service", Role: "prefill", Tier: "bronze"},
		},
		"the pod's own role wins over its framework's": {
			pod:  testutil.MakePod("p", "ns").Label("leaderworkerset.sigs.k8s.io/name", "llama-prefill").Label("workload.kubenexus.io/role", "prefill").Obj(),
			want: Profile{Class: "inference", Role: "prefill", Framework: "leaderworkerset", Tier: "bronze"},
		},
		"a role that is not a DNS label is dropped": {
			pod:  testutil.MakePod("p", "ns").Label("workload.kubenexus.io/role", "Pre_Fill").Obj(),
			want: Profile{Class: "service", Tier: "bronze"},
		},
		"gang member of a plain workload is batch": {
			pod: testutil.MakePod("p", "ns").PodGroup("g").Label("workload.kubenexus.io/preemptible", "true").Obj(),
			want: Profile{Class: "batch", Tier: "bronze", Preemptible: true,
				Gang: &gang.Membership{Key: gang.Key{Namespace: "ns", Name: "g"}, Dialect: gang.DialectPodGroup}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Classify(tc.pod, tc.ns, v1alpha1.TenantTierBronze)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Profile{}, "GangError")); diff != "" {
				t.Errorf("Classify mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("driver", "Master", "head", "gold", "training", "2")
	f.Add("", "", "", "", "", "")
	f.Add("EXECUTOR", "launcher", "worker", "platinum", "vip", "-1")
	f.Fuzz(func(t *testing.T, spark, kubeflow, ray, tier, class, minAvail string) {
		pod := testutil.MakePod("p", "ns").
			Label("spark-role", spark).Label("training.kubeflow.org/replica-type", kubeflow).
			Label("ray.io/node-type", ray).Label("workload.kubenexus.io/type", class).
			Label("tenant.kubenexus.io/tier", "gold").
			Label("pod-group.scheduling.sigs.k8s.io/name", "g").
			Label("pod-group.scheduling.sigs.k8s.io/min-available", minAvail).Obj()
		p := Classify(pod, Namespace{Labels: map[string]string{"tenant.kubenexus.io/tier": tier}}, v1alpha1.TenantTierSilver)
		switch p.Class {
		case "service", "batch", "training", "inference", "interactive":
		default:
			t.Fatalf("class %q is not a known class", p.Class)
		}
		switch p.Tier {
		case "gold", "silver", "bronze":
		default:
			t.Fatalf("tier %q is not a known tier", p.Tier)
		}
		if tier != "gold" && p.Tier == "gold" {
			t.Fatalf("the pod's own tier label leaked into its profile")
		}
		if (p.Gang == nil) == (p.GangError == nil) {
			t.Fatalf("gang labels present: want exactly one of membership or error, got %v, %v", p.Gang, p.GangError)
		}
	})
}

func TestHeldGPUs(t *testing.T) {
	pod := func(node string, phase corev1.PodPhase, gpus string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{v1alpha1.ResourceNvidiaGPU: resource.MustParse(gpus), "amd.com/gpu": resource.MustParse("1")}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want int64
	}{
		{pod("n1", corev1.PodRunning, "4"), 4},
		{pod("", corev1.PodPending, "4"), 0},     // not bound: holds nothing
		{pod("n1", corev1.PodSucceeded, "4"), 0}, // finished
		{pod("n1", corev1.PodPending, "2"), 2},   // bound, not started yet
	} {
		if got := HeldGPUs(tc.pod); got != tc.want {
			t.Errorf("%s/%s: %d, want %d", tc.pod.Spec.NodeName, tc.pod.Status.Phase, got, tc.want)
		}
	}
	if got := HeldGPUs(pod("n1", corev1.PodRunning, "4"), v1alpha1.ResourceNvidiaGPU, "amd.com/gpu"); got != 5 {
		t.Errorf("two GPU resources: %d, want 5", got)
	}
}

func TestRoleOf(t *testing.T) {
	tests := map[string]struct {
		pod  *corev1.Pod
		want v1alpha1.WorkloadRole
	}{
		"the Kubernetes PodGroup the pod's spec.schedulingGroup names": {
			pod:  testutil.MakePod("p", "ns").SchedulingGroup("decode").Label("kai.scheduler/subgroup-name", "x").Obj(),
			want: "decode",
		},
		"a KAI pod's leaf sub-group, over its own role label": {
			pod:  testutil.MakePod("p", "ns").Annotation("pod-group-name", "serve").Label("kai.scheduler/subgroup-name", "decode-workers").Label("workload.kubenexus.io/role", "prefill").Obj(),
			want: "decode-workers",
		},
		"its own role label": {
			pod:  testutil.MakePod("p", "ns").Label("workload.kubenexus.io/role", "prefill").Label("spark-role", "driver").Obj(),
			want: "prefill",
		},
		"its framework's": {
			pod:  testutil.MakePod("p", "ns").Label("spark-role", "driver").Obj(),
			want: "driver",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := RoleOf(tc.pod); got != tc.want {
				t.Errorf("RoleOf = %q, want %q", got, tc.want)
			}
		})
	}
}
