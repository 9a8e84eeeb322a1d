// Package kubeflow is KubeNexus's knowledge of Kubeflow's training jobs: the
// training-operator's PyTorchJob, TFJob, XGBoostJob and MPIJob (kubeflow.org/v1)
// and mpi-operator's MPIJob (kubeflow.org/v2beta1). Their pods carry the job's name
// and their replica type; the job's replica specs size the gang, or its declared
// minimum (spec.runPolicy.schedulingPolicy.minAvailable).
package kubeflow

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// The manager reads the objects that size gangs (the pod webhook auto-groups pods
// by them).
// +kubebuilder:rbac:groups=kubeflow.org,resources=pytorchjobs;tfjobs;xgboostjobs;mpijobs,verbs=get

// Labels the Kubeflow operators write on their pods.
const (
	LabelReplicaType = "training.kubeflow.org/replica-type"
	LabelJobRole     = "training.kubeflow.org/job-role"
	LabelOperator    = "training.kubeflow.org/operator-name"
	LabelJobName     = "training.kubeflow.org/job-name"
)

// The job kinds, at the version read when a pod's owner reference does not name
// one. MPIJob has two: mpi-operator serves kubeflow.org/v2beta1, the
// training-operator (v1.x) kubeflow.org/v1; both spec shapes are understood.
var (
	PyTorchJob = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}
	TFJob      = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "TFJob"}
	XGBoostJob = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "XGBoostJob"}
	MPIJob     = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"}
)

// replicaField is where each kind keeps its replica specs.
var replicaField = map[string]string{PyTorchJob.Kind: "pytorchReplicaSpecs", TFJob.Kind: "tfReplicaSpecs", XGBoostJob.Kind: "xgbReplicaSpecs", MPIJob.Kind: "mpiReplicaSpecs"}

// Where a spec declares its gang's minimum.
var fieldMinAvailable = []string{"runPolicy", "schedulingPolicy", "minAvailable"}

// Framework is Kubeflow's training jobs.
type Framework struct{ frameworks.Base }

func (Framework) Recognise(l map[string]string, controllerKind string) (frameworks.Recognition, bool) {
	if l[LabelReplicaType] == "" && l[LabelJobRole] == "" {
		return frameworks.Recognition{}, false
	}
	role := frameworks.KnownRole(l[LabelReplicaType], v1alpha1.RoleMaster, v1alpha1.RoleWorker, v1alpha1.RolePS,
		v1alpha1.RoleChief, v1alpha1.RoleEvaluator, v1alpha1.RoleLauncher)
	if role == "" {
		role = frameworks.KnownRole(l[LabelJobRole], v1alpha1.RoleMaster, v1alpha1.RoleLauncher, v1alpha1.RoleWorker)
	}
	return frameworks.Recognition{Integration: integration(l[LabelOperator], controllerKind, role), Role: role, Class: v1alpha1.WorkloadClassTraining}, true
}

// integration names the job kind from its operator label or owner.
func integration(operator, owner string, role v1alpha1.WorkloadRole) v1alpha1.Integration {
	switch {
	case strings.HasPrefix(operator, "pytorchjob") || owner == PyTorchJob.Kind:
		return v1alpha1.IntegrationPyTorch
	case strings.HasPrefix(operator, "tfjob") || owner == TFJob.Kind:
		return v1alpha1.IntegrationTensorFlow
	case strings.HasPrefix(operator, "xgboostjob") || owner == XGBoostJob.Kind:
		return v1alpha1.IntegrationXGBoost
	case strings.HasPrefix(operator, "mpijob") || owner == MPIJob.Kind || role == v1alpha1.RoleLauncher:
		return v1alpha1.IntegrationMPI
	}
	return v1alpha1.IntegrationPyTorch
}

// Source is the job the pod names.
func (Framework) Source(pod *corev1.Pod, integration v1alpha1.Integration) (frameworks.Source, bool) {
	kinds := map[v1alpha1.Integration]schema.GroupVersionKind{v1alpha1.IntegrationPyTorch: PyTorchJob, v1alpha1.IntegrationTensorFlow: TFJob,
		v1alpha1.IntegrationXGBoost: XGBoostJob, v1alpha1.IntegrationMPI: MPIJob}
	gvk, ok := kinds[integration]
	return frameworks.Source{GVK: gvk, Name: pod.Labels[LabelJobName]}, ok
}

func (Framework) Integrations() []v1alpha1.Integration {
	return []v1alpha1.Integration{v1alpha1.IntegrationPyTorch, v1alpha1.IntegrationTensorFlow, v1alpha1.IntegrationXGBoost, v1alpha1.IntegrationMPI}
}

func (Framework) Owners() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{PyTorchJob, TFJob, XGBoostJob, MPIJob}
}

func (Framework) Reads() []schema.GroupKind {
	return []schema.GroupKind{PyTorchJob.GroupKind(), TFJob.GroupKind(), XGBoostJob.GroupKind(), MPIJob.GroupKind()}
}

// Size is the pods of the replica specs, or the declared minimum. mpi-operator's
// MPIJob with launcherCreationPolicy WaitForWorkersReady creates its launcher only
// once the workers run: the launcher is not a member.
func (Framework) Size(src frameworks.Source, obj *unstructured.Unstructured) (frameworks.Size, error) {
	spec := frameworks.Spec(obj)
	field := replicaField[src.GVK.Kind]
	if src.GVK.Kind == MPIJob.Kind && src.GVK.Version != "v1" {
		var size frameworks.Size
		exclude := ""
		if policy, _ := spec["launcherCreationPolicy"].(string); policy == "WaitForWorkersReady" {
			exclude = "Launcher"
			size.ExcludesRole = v1alpha1.RoleLauncher
		}
		size.Members = sumReplicas(spec, field, exclude)
		return size, nil
	}
	// The training-operator's MPIJob creates its launcher with the workers (its
	// init container waits for them), so it is a member; it may declare its
	// minimum like the other jobs.
	n, err := declaredMinimum(src, spec, sumReplicas(spec, field, ""), field)
	return frameworks.Size{Members: n}, err
}

// MaxMembers is every pod of the replica specs.
func (Framework) MaxMembers(src frameworks.Source, obj *unstructured.Unstructured) (int64, bool) {
	return sumReplicas(frameworks.Spec(obj), replicaField[src.GVK.Kind], ""), true
}

// Replicas is each replica type's pods, in the order of their names.
// Recovery restarts an MPIJob's gang whole: mpirun fixes its ranks when it starts,
// so a lost worker ends the launcher's run and a replacement worker cannot join
// it; only every rank started anew resumes the job (from its checkpoint). The
// other jobs' replicas rejoin their rendezvous: they are repaired.
func (Framework) Recovery(gk schema.GroupKind) v1alpha1.RecoveryPolicy {
	if gk == MPIJob.GroupKind() {
		return v1alpha1.RecoveryRestartGang
	}
	return ""
}

func (Framework) Replicas(obj *unstructured.Unstructured, add frameworks.Add) error {
	specs, _ := frameworks.Spec(obj)[replicaField[obj.GetKind()]].(map[string]any)
	roles := make([]string, 0, len(specs))
	for r := range specs {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	for _, r := range roles {
		rm, _ := specs[r].(map[string]any)
		if err := add(r, frameworks.Replicas(rm, "replicas"), rm["template"]); err != nil {
			return err
		}
	}
	return nil
}

// declaredMinimum is a job's spec.runPolicy.schedulingPolicy.minAvailable when it
// is set and positive (0, a negative or a non-integer value is ignored, as the
// training-operator's validation would refuse it), else sum, the pods its replica
// specs create. A minimum above sum can never be reached and is refused.
func declaredMinimum(src frameworks.Source, spec map[string]any, sum int64, replicaField string) (int64, error) {
	m, ok := frameworks.Nested(spec, fieldMinAvailable...).(int64)
	if !ok || m < 1 || sum < 1 {
		return sum, nil // a sum below 1 is reported as such
	}
	if m > sum {
		return 0, fmt.Errorf("%s %s: spec.%s is %d, more than the %d pods of spec.%s, so the gang could never form",
			src.GVK.Kind, src.Name, strings.Join(fieldMinAvailable, "."), m, sum, replicaField)
	}
	return m, nil
}

// sumReplicas adds spec[field][*].replicas (default 1), skipping the replica type
// exclude.
func sumReplicas(spec map[string]any, field, exclude string) int64 {
	specs, _ := spec[field].(map[string]any)
	var n int64
	for typ, s := range specs {
		if exclude != "" && typ == exclude {
			continue
		}
		sm, _ := s.(map[string]any)
		n = frameworks.Bounded(n + frameworks.Bounded(frameworks.Replicas(sm, "replicas")))
	}
	return n
}
