// Package jobset is KubeNexus's knowledge of JobSet (jobset.x-k8s.io), which
// Kubeflow Trainer's TrainJobs run on: a JobSet's pods name it and their replicated
// job; its replicated jobs size the gang, in stages when some start only after
// others (dependsOn, or the InOrder startup policy).
package jobset

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// The manager reads the objects that size gangs (the pod webhook auto-groups pods
// by them).
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get

// Labels JobSet (and Kubeflow Trainer) write on the pods.
const (
	LabelName       = "jobset.sigs.k8s.io/jobset-name"
	LabelReplicated = "jobset.sigs.k8s.io/replicatedjob-name"
	LabelUID        = "jobset.sigs.k8s.io/jobset-uid"
	LabelTrainStep  = "trainer.kubeflow.org/trainjob-ancestor-step"
)

// JobSet is the kind, at the version read by default.
var JobSet = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}

// TrainJob is Kubeflow Trainer's kind, which creates a JobSet for its whole life.
var TrainJob = schema.GroupKind{Group: "trainer.kubeflow.org", Kind: "TrainJob"}

// MaxStages bounds how many stages of a JobSet KubeNexus gangs: a deeper chain of
// dependsOn is refused (its pods are not auto-grouped, and say why).
const MaxStages = 16

// Framework is JobSet.
type Framework struct{ frameworks.Base }

// Recognise: a JobSet pod's role is its replicated job's name when that names a
// role ("worker" and "workers" both name workers); a TrainJob's pods are training.
func (Framework) Recognise(l map[string]string, _ string) (frameworks.Recognition, bool) {
	if l[LabelName] == "" {
		return frameworks.Recognition{}, false
	}
	class := v1alpha1.WorkloadClassBatch
	if l[LabelTrainStep] != "" {
		class = v1alpha1.WorkloadClassTraining
	}
	role := frameworks.KnownRole(strings.TrimSuffix(strings.ToLower(l[LabelReplicated]), "s"), v1alpha1.RoleLeader, v1alpha1.RoleWorker,
		v1alpha1.RoleLauncher, v1alpha1.RoleMaster, v1alpha1.RoleDriver)
	return frameworks.Recognition{Integration: v1alpha1.IntegrationJobSet, Role: role, Class: class}, true
}

// Source is the JobSet the pod names; its pods are controlled by Jobs the JobSet
// created, and carry its UID (jobset-uid) since JobSet v0.9.
func (Framework) Source(pod *corev1.Pod, _ v1alpha1.Integration) (frameworks.Source, bool) {
	l := pod.Labels
	s := frameworks.Source{GVK: JobSet, Name: l[LabelName], Part: l[LabelReplicated]}
	if uid := l[LabelUID]; uid != "" && len(validation.IsValidLabelValue(uid)) == 0 {
		s.UID = types.UID(uid)
	}
	return s, true
}

func (Framework) Integrations() []v1alpha1.Integration {
	return []v1alpha1.Integration{v1alpha1.IntegrationJobSet}
}

func (Framework) Owners() []schema.GroupVersionKind { return []schema.GroupVersionKind{JobSet} }

func (Framework) Reads() []schema.GroupKind { return []schema.GroupKind{JobSet.GroupKind()} }

// Size: JobSet declares no minimum: every replicated job's Jobs, each running
// min(parallelism, completions) pods at once, as a batch Job does. A replicated job
// that depends on others (dependsOn), or that follows another under the InOrder
// startup policy, is created only once those are ready or complete: its pods and
// theirs are never pending together, so one gang of both would never form (a
// TrainJob's initializers run, and complete, before its training nodes). Such a
// JobSet runs in stages, each stage's replicated jobs together; each stage is a
// gang: the first keeps the JobSet's gang, stage k is "<jobset>-jobset-stage<k>".
func (Framework) Size(src frameworks.Source, obj *unstructured.Unstructured) (frameworks.Size, error) {
	spec := frameworks.Spec(obj)
	jobs, _ := spec["replicatedJobs"].([]any)
	inOrder := frameworks.Nested(spec, "startupPolicy", "startupPolicyOrder") == "InOrder"
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
		if stage >= MaxStages {
			return frameworks.Size{}, fmt.Errorf("JobSet %s: replicated job %q starts after %d others (spec.replicatedJobs[%d].dependsOn); KubeNexus groups at most %d stages", src.Name, name, stage, i, MaxStages)
		}
		stageOf[name] = stage
		jobSpec, _ := frameworks.Nested(jm, "template", "spec").(map[string]any)
		for len(sizes) <= stage {
			sizes = append(sizes, 0)
		}
		replicas := frameworks.Int(jm, "replicas") // a replicas that is not positive runs no Job
		if _, set := jm["replicas"]; !set {
			replicas = 1
		}
		sizes[stage] = frameworks.Bounded(sizes[stage] + frameworks.Bounded(replicas)*frameworks.Bounded(frameworks.JobPods(jobSpec)))
	}
	switch len(sizes) {
	case 0:
		return frameworks.Size{}, nil // reported as a gang of 0 pods
	case 1:
		return frameworks.Size{Members: sizes[0]}, nil
	}
	stage, ok := stageOf[src.Part]
	if !ok {
		return frameworks.Size{}, fmt.Errorf("JobSet %s runs its replicated jobs in %d stages and has none named %q (the pod's %s label)", src.Name, len(sizes), src.Part, LabelReplicated)
	}
	if stage == 0 {
		return frameworks.Size{Members: sizes[0]}, nil
	}
	return frameworks.Size{Members: sizes[stage], Gang: stageGang(src, stage)}, nil
}

// stageGang is the gang of stage k (k ≥ 1) of a staged JobSet.
func stageGang(src frameworks.Source, k int) string {
	return frameworks.GangName(src.Name, string(v1alpha1.IntegrationJobSet), "stage"+strconv.Itoa(k))
}

// Forms reports whether gang is a later stage's.
func (Framework) Forms(src frameworks.Source, gang string) bool {
	for k := 1; k < MaxStages; k++ {
		if stageGang(src, k) == gang {
			return true
		}
	}
	return false
}

// Replicas is each replicated job's pods.
func (Framework) Replicas(obj *unstructured.Unstructured, add frameworks.Add) error {
	jobs, _ := frameworks.Spec(obj)["replicatedJobs"].([]any)
	for _, j := range jobs {
		jm, _ := j.(map[string]any)
		name, _ := jm["name"].(string)
		jobSpec, _ := frameworks.Nested(jm, "template", "spec").(map[string]any)
		if err := add(name, frameworks.Bounded(frameworks.Replicas(jm, "replicas")*frameworks.JobPods(jobSpec)), jobSpec["template"]); err != nil {
			return err
		}
	}
	return nil
}

// Creator: a TrainJob creates its JobSet.
func (Framework) Creator(gk schema.GroupKind) (schema.GroupKind, bool) {
	return TrainJob, gk == JobSet.GroupKind()
}
