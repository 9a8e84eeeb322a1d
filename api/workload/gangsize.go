package workload

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// GangSize is what the owning object says about its gang.
type GangSize struct {
	MinMember int32
	// Gang, when set, is the gang the pod joins instead of GangSource.Gang: the
	// owner runs its pods in stages (a JobSet's dependsOn) and this is the pod's.
	Gang string
	// ExcludesRole is a role whose pods are not members: an MPI launcher created
	// only once the workers run cannot be counted, or the gang would never form.
	ExcludesRole v1alpha1.WorkloadRole
}

// Where a spec declares its gang's minimum.
var fieldMinAvailable = []string{"runPolicy", "schedulingPolicy", "minAvailable"}

// SizeFrom reads the gang size from the owning object's spec (read at src.GVK's
// version). Where the framework declares a minimum it is used: Kubeflow's
// spec.runPolicy.schedulingPolicy.minAvailable, Spark's dynamicAllocation.minExecutors,
// Ray's minReplicas. It fails, naming the field, when the spec does not give a
// positive size.
func SizeFrom(src GangSource, obj *unstructured.Unstructured) (GangSize, error) {
	spec, _ := obj.Object["spec"].(map[string]any)
	var n int64
	var size GangSize
	var err error
	switch src.GVK.GroupKind() {
	case SparkApplication.GroupKind():
		// The driver and its executors; with dynamic allocation, the minimum.
		execs := intField(spec, "executor", "instances")
		if enabled, _ := nested(spec, "dynamicAllocation", "enabled").(bool); enabled {
			execs = intField(spec, "dynamicAllocation", "minExecutors")
		}
		n = 1 + bounded(execs)
	case PyTorchJob.GroupKind(), TFJob.GroupKind(), XGBoostJob.GroupKind():
		field := map[string]string{PyTorchJob.Kind: "pytorchReplicaSpecs", TFJob.Kind: "tfReplicaSpecs", XGBoostJob.Kind: "xgbReplicaSpecs"}[src.GVK.Kind]
		n, err = declaredMinimum(src, spec, sumReplicas(spec, field, ""), field)
	case MPIJob.GroupKind():
		if src.GVK.Version == "v1" {
			// training-operator's MPIJob: the launcher is created with the workers (its
			// init container waits for them), so it is a member; the job may declare
			// its minimum like the other Kubeflow jobs.
			n, err = declaredMinimum(src, spec, sumReplicas(spec, "mpiReplicaSpecs", ""), "mpiReplicaSpecs")
			break
		}
		exclude := ""
		if policy, _ := spec["launcherCreationPolicy"].(string); policy == "WaitForWorkersReady" {
			exclude = "Launcher"
			size.ExcludesRole = v1alpha1.RoleLauncher
		}
		n = sumReplicas(spec, "mpiReplicaSpecs", exclude)
	case RayCluster.GroupKind():
		n = 1 // the head
		groups, _ := spec["workerGroupSpecs"].([]any)
		for _, g := range groups {
			gm, _ := g.(map[string]any)
			hosts := intField(gm, "numOfHosts")
			if hosts < 1 {
				hosts = 1
			}
			n = bounded(n + bounded(intField(gm, "minReplicas"))*bounded(hosts))
		}
	case JobSet.GroupKind():
		n, size.Gang, err = jobSetGang(src, spec)
	case LeaderWorkerSet.GroupKind():
		n = intField(spec, "leaderWorkerTemplate", "size")
		if _, set := nested(spec, "leaderWorkerTemplate", "size").(int64); !set {
			n = 1
		}
		if obj.GetAnnotations()[v1alpha1.AnnotationLWSExclusiveTopology] != "" {
			// With exclusive placement LWS creates a group's workers only once its
			// leader is bound (in the leader's domain): a gang of the whole group would
			// never form. The leader is the quorum; the scheduler places it only where
			// the whole group fits and sets that room aside for the workers
			// (LeaderFirstGroupSize).
			n = 1
		}
	case BatchJob.GroupKind():
		n = jobPods(spec)
	default:
		return GangSize{}, fmt.Errorf("%s is not a gang owner KubeNexus knows", src.GVK.Kind)
	}
	if err != nil {
		return GangSize{}, err
	}
	if n > gang.MaxMinMember {
		return GangSize{}, fmt.Errorf("%s %s: its spec gives a gang of more than %d pods; KubeNexus needs 1 to %d", src.GVK.Kind, src.Name, gang.MaxMinMember, gang.MaxMinMember)
	}
	if n < 1 {
		return GangSize{}, fmt.Errorf("%s %s: its spec gives a gang of %d pods; KubeNexus needs 1 to %d", src.GVK.Kind, src.Name, n, gang.MaxMinMember)
	}
	size.MinMember = int32(n)
	return size, nil
}

// maxJobSetStages bounds how many stages of a JobSet KubeNexus gangs: a deeper
// chain of dependsOn is refused (its pods are not auto-grouped, and say why).
const maxJobSetStages = 16

// jobSetGang is the gang of a JobSet's pod (src.Part is its replicated job): its
// size and, for a staged JobSet's later stage, its name. JobSet declares no
// minimum: every replicated job's Jobs, each running min(parallelism, completions)
// pods at once, as a batch Job does. A replicated job that depends on others
// (dependsOn), or that follows another under the InOrder startup policy, is created
// only once those are ready or complete: its pods and theirs are never pending
// together, so one gang of both would never form (a Kubeflow TrainJob's initializers
// run, and complete, before its training nodes). Such a JobSet runs in stages, each
// stage's replicated jobs together; each stage is a gang: the first keeps the
// JobSet's gang, stage k is "<jobset>-jobset-stage<k>".
func jobSetGang(src GangSource, spec map[string]any) (int64, string, error) {
	jobs, _ := spec["replicatedJobs"].([]any)
	inOrder := nested(spec, "startupPolicy", "startupPolicyOrder") == "InOrder"
	stageOf := make(map[string]int, len(jobs))
	var sizes []int64
	for i, j := range jobs {
		jm, _ := j.(map[string]any)
		name, _ := jm["name"].(string)
		stage := 0
		if inOrder {
			stage = i
		}
		deps, _ := jm["dependsOn"].([]any)
		for _, d := range deps {
			dm, _ := d.(map[string]any)
			dep, _ := dm["name"].(string)
			stage = max(stage, stageOf[dep]+1)
		}
		if stage >= maxJobSetStages {
			return 0, "", fmt.Errorf("JobSet %s: replicated job %q starts after %d others (spec.replicatedJobs[%d].dependsOn); KubeNexus groups at most %d stages", src.Name, name, stage, i, maxJobSetStages)
		}
		stageOf[name] = stage
		replicas := intField(jm, "replicas")
		if _, set := jm["replicas"]; !set {
			replicas = 1
		}
		jobSpec, _ := nested(jm, "template", "spec").(map[string]any)
		for len(sizes) <= stage {
			sizes = append(sizes, 0)
		}
		sizes[stage] = bounded(sizes[stage] + bounded(replicas)*bounded(jobPods(jobSpec)))
	}
	if len(sizes) <= 1 {
		if len(sizes) == 0 {
			return 0, "", nil // reported as a gang of 0 pods
		}
		return sizes[0], "", nil
	}
	stage, ok := stageOf[src.Part]
	if !ok {
		return 0, "", fmt.Errorf("JobSet %s runs its replicated jobs in %d stages and has none named %q (the pod's %s label)", src.Name, len(sizes), src.Part, labelJobSetReplicated)
	}
	if stage == 0 {
		return sizes[0], "", nil
	}
	return sizes[stage], src.stageGang(stage), nil
}

// MaxMembersFrom is the most gang members the owning object's spec can run at once:
// the bound a PodGroup's minMember may not exceed. Declared minimums are ignored here
// (Kubeflow's minAvailable, Ray's minReplicas, Spark's minExecutors): a PodGroup may
// ask for any size up to what the workload creates, e.g. Ray's maxReplicas or
// Spark's maxExecutors.
func MaxMembersFrom(src GangSource, obj *unstructured.Unstructured) (int32, error) {
	spec, _ := obj.Object["spec"].(map[string]any)
	var n int64
	switch src.GVK.GroupKind() {
	case SparkApplication.GroupKind():
		execs := intField(spec, "executor", "instances")
		if enabled, _ := nested(spec, "dynamicAllocation", "enabled").(bool); enabled {
			execs = max(execs, intField(spec, "dynamicAllocation", "maxExecutors"))
		}
		n = 1 + bounded(execs)
	case PyTorchJob.GroupKind(), TFJob.GroupKind(), XGBoostJob.GroupKind():
		field := map[string]string{PyTorchJob.Kind: "pytorchReplicaSpecs", TFJob.Kind: "tfReplicaSpecs", XGBoostJob.Kind: "xgbReplicaSpecs"}[src.GVK.Kind]
		n = sumReplicas(spec, field, "")
	case MPIJob.GroupKind():
		n = sumReplicas(spec, "mpiReplicaSpecs", "")
	case RayCluster.GroupKind():
		n = 1
		groups, _ := spec["workerGroupSpecs"].([]any)
		for _, g := range groups {
			gm, _ := g.(map[string]any)
			hosts := max(intField(gm, "numOfHosts"), 1)
			most := max(intField(gm, "maxReplicas"), intField(gm, "replicas"), intField(gm, "minReplicas"))
			n = bounded(n + bounded(most)*bounded(hosts))
		}
	default:
		size, err := SizeFrom(src, obj) // no declared minimum: the size is the maximum
		return size.MinMember, err
	}
	if n < 1 || n > gang.MaxMinMember {
		return 0, fmt.Errorf("%s %s: its spec gives %d pods; KubeNexus needs 1 to %d", src.GVK.Kind, src.Name, n, gang.MaxMinMember)
	}
	return int32(n), nil
}

// declaredMinimum is a Kubeflow job's spec.runPolicy.schedulingPolicy.minAvailable
// when it is set and positive (0, a negative or a non-integer value is ignored, as
// the training-operator's validation would refuse it), else sum, the pods its
// replica specs create. A minimum above sum can never be reached and is refused.
func declaredMinimum(src GangSource, spec map[string]any, sum int64, replicaField string) (int64, error) {
	m, ok := nested(spec, fieldMinAvailable...).(int64)
	if !ok || m < 1 || sum < 1 {
		return sum, nil // a sum below 1 is reported as such
	}
	if m > sum {
		return 0, fmt.Errorf("%s %s: spec.%s is %d, more than the %d pods of spec.%s, so the gang could never form",
			src.GVK.Kind, src.Name, strings.Join(fieldMinAvailable, "."), m, sum, replicaField)
	}
	return m, nil
}

// jobPods is how many pods a batch Job spec runs at once: parallelism (default 1),
// capped by completions.
func jobPods(spec map[string]any) int64 {
	n, set := spec["parallelism"].(int64)
	if !set {
		n = 1
	}
	if c, set := spec["completions"].(int64); set && c < n {
		n = c
	}
	return bounded(n)
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
		n = bounded(n + bounded(r))
	}
	return n
}

// bounded clamps a count from an untrusted spec to ±(MaxMinMember+1), so that sums
// and products of counts cannot overflow into a plausible size; anything beyond the
// bound is refused as too large (or too small) anyway.
func bounded(n int64) int64 {
	const limit = gang.MaxMinMember + 1
	return max(-limit, min(n, limit))
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
