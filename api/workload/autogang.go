package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Labels that name the object a framework pod belongs to.
const (
	labelKubeflowJobName = "training.kubeflow.org/job-name"
	labelRayCluster      = "ray.io/cluster"
	labelLWSGroupIndex   = "leaderworkerset.sigs.k8s.io/group-index"
	// annotationLWSSize is the group size LWS writes on every pod of a group.
	annotationLWSSize = "leaderworkerset.sigs.k8s.io/size"
	labelJobSetUID    = "jobset.sigs.k8s.io/jobset-uid"
)

// Owner kinds whose spec sizes a gang, at the version read when a pod's owner
// reference does not name one. MPIJob has two: mpi-operator serves kubeflow.org/v2beta1,
// Kubeflow's training-operator (v1.x) kubeflow.org/v1; both spec shapes are understood.
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
	// GVK is the owner's kind at the version to read it: the version the pod's
	// controller reference names, else the kind's default above.
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	// UID is the owner's UID as the pod's controller reference gives it ("" when the
	// pod has no controller reference to this owner). It is a claim of the pod, to
	// look the owner up in a GangSizeCache, not a verified identity.
	UID types.UID
	// Gang is the name of the PodGroup the pods of this source form (a staged
	// JobSet's later stages form others: GangSize.Gang).
	Gang string
	// Part is the pod's part of the owner where the owner's spec sizes its parts
	// apart: a JobSet pod's replicated job.
	Part string
}

// GangSourceOf finds, from labels and owner references, the object that sizes the
// gang of a pod that profile recognised as a framework pod. ok is false for pods of
// no framework and for frameworks whose pods carry no name of their owner.
//
// JobSet and LeaderWorkerSet pods are controlled by a Job or StatefulSet the owner
// created: their owner is read at the default version, and only a JobSet's pods
// name its UID (the jobset.sigs.k8s.io/jobset-uid label).
func GangSourceOf(pod *corev1.Pod, profile Profile) (GangSource, bool) {
	l := pod.Labels
	src := func(gvk schema.GroupVersionKind, name string, extra ...string) (GangSource, bool) {
		if !gang.IsValidName(name) {
			return GangSource{}, false // labels are untrusted: only a real object name can be an owner
		}
		s := GangSource{GVK: gvk, Namespace: pod.Namespace, Name: name, Gang: gangName(name, string(profile.Framework), extra...)}
		// A controller reference to this very object (same group, kind and name) says
		// which version its operator serves: training-operator's MPIJob is only
		// kubeflow.org/v1. The version must look like one; anything else is ignored.
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == gvk.Kind && ref.Name == name {
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == gvk.Group && len(validation.IsDNS1035Label(gv.Version)) == 0 {
				s.GVK.Version = gv.Version
				s.UID = ref.UID
			}
		}
		return s, true
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
		s, ok := src(JobSet, l[labelJobSetName])
		s.Part = l[labelJobSetReplicated]
		if uid := l[labelJobSetUID]; ok && uid != "" && len(validation.IsValidLabelValue(uid)) == 0 {
			s.UID = types.UID(uid) // JobSet's controller writes its UID on the pods of its Jobs
		}
		return s, ok
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

// LeaderFirstGroupSize is the size of the LeaderWorkerSet group whose pods are
// created leader first — LWS with exclusive placement creates the workers once the
// leader is bound — read from the annotations LWS writes on the group's pods; 0 for
// every other pod. The scheduler plans the leader's gang for the whole group.
func LeaderFirstGroupSize(pod *corev1.Pod) int {
	a := pod.Annotations
	if pod.Labels[labelLWSName] == "" || a[v1alpha1.AnnotationLWSExclusiveTopology] == "" {
		return 0
	}
	n, err := strconv.Atoi(a[annotationLWSSize])
	if err != nil || n < 1 || n > gang.MaxMinMember {
		return 0
	}
	return n
}

// SubgroupOf names the all-or-nothing part of a larger gang the pod belongs to, and
// its size: a LeaderWorkerSet group (its leader and workers, from the group-index
// label and the size annotation LWS writes on each of them) inside a PodGroup that
// spans several groups, such as a disaggregated serving deployment's prefill and
// decode sets. The scheduler releases such a group's members only together, also
// when the gang is already running (a scale-up adds whole groups). ok is false for
// every other pod, for groups of one, and for leader-first groups (exclusive
// topology: LWS creates the workers only once the leader is bound).
func SubgroupOf(pod *corev1.Pod) (key string, size int, ok bool) {
	l := pod.Labels
	name, idx := l[labelLWSName], l[labelLWSGroupIndex]
	if name == "" || LeaderFirstGroupSize(pod) > 0 {
		return "", 0, false
	}
	if _, err := strconv.ParseUint(idx, 10, 32); err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(pod.Annotations[annotationLWSSize])
	if err != nil || n < 2 || n > gang.MaxMinMember {
		return "", 0, false
	}
	return name + "/" + idx, n, true
}

// OwnerReference refers to the source object, for an object that should be deleted
// with it, such as the gang's PodGroup (a JobSet's, rather than one of its Jobs').
// ok is false when the pod named no UID for the source. The UID is the pod's claim,
// as trustworthy as the pod's own owner references: a wrong one has the garbage
// collector delete the dependent.
func (s GangSource) OwnerReference() (metav1.OwnerReference, bool) {
	if s.UID == "" {
		return metav1.OwnerReference{}, false
	}
	return metav1.OwnerReference{APIVersion: s.GVK.GroupVersion().String(), Kind: s.GVK.Kind, Name: s.Name, UID: s.UID}, true
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

// stageGang is the gang of stage k (k ≥ 1) of a staged JobSet.
func (s GangSource) stageGang(k int) string {
	return gangName(s.Name, string(v1alpha1.IntegrationJobSet), "stage"+strconv.Itoa(k))
}

// Forms reports whether name is a gang the source's pods are put in: its own, or
// a staged JobSet's later stage.
func (s GangSource) Forms(name string) bool {
	if name == s.Gang {
		return true
	}
	if s.GVK.GroupKind() != JobSet.GroupKind() {
		return false
	}
	for k := 1; k < maxJobSetStages; k++ {
		if s.stageGang(k) == name {
			return true
		}
	}
	return false
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

// GangSizeCache keeps the gang sizes read from owning objects for a few seconds: the
// pods of one job arrive together, and each would otherwise read the same object.
// Sizes are kept under the owner's UID, as the API server returned it, so an owner
// deleted and recreated under the same name is read afresh; failures are never kept.
// The zero value is ready to use.
type GangSizeCache struct {
	mu      sync.Mutex
	entries map[gangSizeKey]gangSizeEntry
	// now is the clock (time.Now when nil).
	now func() time.Time
}

type gangSizeKey struct {
	gvk                   schema.GroupVersionKind
	namespace, name, part string
	uid                   types.UID
}

type gangSizeEntry struct {
	size    GangSize
	expires time.Time
}

const (
	gangSizeTTL = 10 * time.Second
	gangSizeMax = 4096
)

// Size is src's gang size. A size kept for src.UID (the UID the pod's controller
// reference names) is used without reading; otherwise read returns the owner, whose
// size is kept under the UID it has. An error from read or SizeFrom is returned and
// nothing is kept.
func (c *GangSizeCache) Size(src GangSource, read func() (*unstructured.Unstructured, error)) (GangSize, error) {
	if src.UID != "" {
		if size, ok := c.get(gangSizeKey{gvk: src.GVK, namespace: src.Namespace, name: src.Name, part: src.Part, uid: src.UID}); ok {
			return size, nil
		}
	}
	obj, err := read()
	if err != nil {
		return GangSize{}, err
	}
	size, err := SizeFrom(src, obj)
	if err != nil {
		return GangSize{}, err
	}
	if uid := obj.GetUID(); uid != "" {
		c.put(gangSizeKey{gvk: src.GVK, namespace: src.Namespace, name: src.Name, part: src.Part, uid: uid}, size)
	}
	return size, nil
}

func (c *GangSizeCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *GangSizeCache) get(key gangSizeKey) (GangSize, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.clock().After(e.expires) {
		return GangSize{}, false
	}
	return e.size, true
}

func (c *GangSizeCache) put(key gangSizeKey, size GangSize) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= gangSizeMax {
		c.entries = map[gangSizeKey]gangSizeEntry{} // bounded: start over rather than grow
	}
	c.entries[key] = gangSizeEntry{size: size, expires: c.clock().Add(gangSizeTTL)}
}
