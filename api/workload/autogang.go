package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Labels that name the object a framework pod belongs to.
const (
	labelKubeflowJobName = "training.kubeflow.org/job-name"
	labelRayCluster      = "ray.io/cluster"
	labelLWSGroupIndex   = "leaderworkerset.sigs.k8s.io/group-index"
)

// Owner kinds whose spec sizes a gang.
var (
	SparkApplication = schema.GroupVersionKind{Group: "sparkoperator.k8s.io", Version: "v1beta2", Kind: "SparkApplication"}
	PyTorchJob       = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}
	TFJob            = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "TFJob"}
	XGBoostJob       = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "XGBoostJob"}
	MPIJob           = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"}
	RayCluster       = schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}
	JobSet           = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	LeaderWorkerSet  = schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}
	BatchJob         = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
)

// GangSource is the object whose spec decides the size of a framework pod's gang,
// and the gang's name.
type GangSource struct {
	GVK  schema.GroupVersionKind
	Name string
	// Gang is the name of the PodGroup the pods of this source form.
	Gang string
}

// GangSourceOf finds, from labels and owner references, the object that sizes the
// gang of a pod that profile recognised as a framework pod. ok is false for pods of
// no framework and for frameworks whose pods carry no name of their owner.
func GangSourceOf(pod *corev1.Pod, profile Profile) (GangSource, bool) {
	l := pod.Labels
	src := func(gvk schema.GroupVersionKind, name string, extra ...string) (GangSource, bool) {
		if !gang.IsValidName(name) {
			return GangSource{}, false // labels are untrusted: only a real object name can be an owner
		}
		return GangSource{GVK: gvk, Name: name, Gang: gangName(name, string(profile.Framework), extra...)}, true
	}
	switch profile.Framework {
	case v1alpha1.IntegrationSpark:
		// spark-submit without the operator has no object that knows the executor count.
		return src(SparkApplication, l[labelSparkOperatorApp])
	case v1alpha1.IntegrationPyTorch:
		return src(PyTorchJob, l[labelKubeflowJobName])
	case v1alpha1.IntegrationTensorFlow:
		return src(TFJob, l[labelKubeflowJobName])
	case v1alpha1.IntegrationXGBoost:
		return src(XGBoostJob, l[labelKubeflowJobName])
	case v1alpha1.IntegrationMPI:
		return src(MPIJob, l[labelKubeflowJobName])
	case v1alpha1.IntegrationRay:
		return src(RayCluster, l[labelRayCluster])
	case v1alpha1.IntegrationJobSet:
		return src(JobSet, l[labelJobSetName])
	case v1alpha1.IntegrationLeaderWorkerSet:
		// One gang per replica group: a leader and its workers.
		idx := l[labelLWSGroupIndex]
		if _, err := strconv.ParseUint(idx, 10, 32); err != nil {
			return GangSource{}, false
		}
		return src(LeaderWorkerSet, l[labelLWSName], idx)
	case v1alpha1.IntegrationJob:
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" && ref.APIVersion == "batch/v1" {
			return src(BatchJob, ref.Name)
		}
	}
	return GangSource{}, false
}

// gangName is "<owner>-<framework>[-<extra>]", shortened with a hash to fit a label
// value (63 characters). owner is a DNS-1123 subdomain, so the result is one too.
func gangName(owner, framework string, extra ...string) string {
	name := owner + "-" + framework
	for _, e := range extra {
		name += "-" + e
	}
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:50], "-.") + "-" + hex.EncodeToString(sum[:])[:12]
}

// GangSize is what the owning object says about its gang.
type GangSize struct {
	MinMember int32
	// ExcludesRole is a role whose pods are not members: an MPI launcher created
	// only once the workers run cannot be counted, or the gang would never form.
	ExcludesRole v1alpha1.WorkloadRole
}

// SizeFrom reads the gang size from the owning object's spec. It fails, naming the
// field, when the spec does not give a positive size.
func SizeFrom(src GangSource, obj *unstructured.Unstructured) (GangSize, error) {
	spec, _ := obj.Object["spec"].(map[string]any)
	var n int64
	var size GangSize
	switch src.GVK {
	case SparkApplication:
		// The driver and its executors; with dynamic allocation, the minimum.
		execs := intField(spec, "executor", "instances")
		if enabled, _ := nested(spec, "dynamicAllocation", "enabled").(bool); enabled {
			execs = intField(spec, "dynamicAllocation", "minExecutors")
		}
		n = 1 + execs
	case PyTorchJob, TFJob, XGBoostJob:
		n = sumReplicas(spec, map[schema.GroupVersionKind]string{PyTorchJob: "pytorchReplicaSpecs", TFJob: "tfReplicaSpecs", XGBoostJob: "xgbReplicaSpecs"}[src.GVK], "")
	case MPIJob:
		exclude := ""
		if policy, _ := spec["launcherCreationPolicy"].(string); policy == "WaitForWorkersReady" {
			exclude = "Launcher"
			size.ExcludesRole = v1alpha1.RoleLauncher
		}
		n = sumReplicas(spec, "mpiReplicaSpecs", exclude)
	case RayCluster:
		n = 1 // the head
		groups, _ := spec["workerGroupSpecs"].([]any)
		for _, g := range groups {
			gm, _ := g.(map[string]any)
			hosts := intField(gm, "numOfHosts")
			if hosts < 1 {
				hosts = 1
			}
			n += intField(gm, "minReplicas") * hosts
		}
	case JobSet:
		jobs, _ := spec["replicatedJobs"].([]any)
		for _, j := range jobs {
			jm, _ := j.(map[string]any)
			replicas := intField(jm, "replicas")
			if _, set := jm["replicas"]; !set {
				replicas = 1
			}
			parallelism := intField(jm, "template", "spec", "parallelism")
			if _, set := nested(jm, "template", "spec", "parallelism").(int64); !set {
				parallelism = 1
			}
			n += replicas * parallelism
		}
	case LeaderWorkerSet:
		n = intField(spec, "leaderWorkerTemplate", "size")
		if _, set := nested(spec, "leaderWorkerTemplate", "size").(int64); !set {
			n = 1
		}
	case BatchJob:
		n = intField(spec, "parallelism")
		if _, set := spec["parallelism"]; !set {
			n = 1
		}
		if c, set := spec["completions"].(int64); set && c < n {
			n = c
		}
	default:
		return GangSize{}, fmt.Errorf("%s is not a gang owner KubeNexus knows", src.GVK.Kind)
	}
	if n < 1 || n > gang.MaxMinMember {
		return GangSize{}, fmt.Errorf("%s %s: its spec gives a gang of %d pods; KubeNexus needs 1 to %d", src.GVK.Kind, src.Name, n, gang.MaxMinMember)
	}
	size.MinMember = int32(n)
	return size, nil
}

// sumReplicas adds spec[field][*].replicas (default 1), skipping the replica type exclude.
func sumReplicas(spec map[string]any, field, exclude string) int64 {
	specs, _ := spec[field].(map[string]any)
	var n int64
	for typ, s := range specs {
		if exclude != "" && typ == exclude {
			continue
		}
		sm, _ := s.(map[string]any)
		r, set := sm["replicas"].(int64)
		if !set {
			r = 1
		}
		n += r
	}
	return n
}

func nested(m map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}

// intField is a non-negative integer field, 0 when absent or of another type.
func intField(m map[string]any, path ...string) int64 {
	if v, ok := nested(m, path...).(int64); ok && v > 0 {
		return v
	}
	return 0
}
