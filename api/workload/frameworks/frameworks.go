// Package frameworks is the contract each workload framework KubeNexus knows
// follows, one folder per framework beneath it: how its pods are told (labels,
// controller kind), their role and class, which object sizes their gang and how
// its spec is read (the gang's minimum, the most members it runs, the pods it will
// create). api/workload applies them in the order of its table (table.go); adding
// a framework is a folder here and a line there. Labels and specs are untrusted:
// only known values count, and counts are bounded.
package frameworks

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Framework is what KubeNexus knows of one workload framework. Base gives the
// methods a framework has nothing to say for.
type Framework interface {
	// Recognise tells the framework's pods by their labels and their controller's
	// kind ("" for none): the integration, the pod's role in it ("" for none) and
	// its class. ok is false for pods of other frameworks.
	Recognise(labels map[string]string, controllerKind string) (r Recognition, ok bool)
	// Source names the object whose spec sizes the gang of a pod Recognise took as
	// integration; ok is false when the pod names none.
	Source(pod *corev1.Pod, integration v1alpha1.Integration) (s Source, ok bool)
	// Owners are the kinds whose objects size gangs (Size, MaxMembers), at the
	// version read when a pod's owner reference names none.
	Owners() []schema.GroupVersionKind
	// Reads are the kinds whose objects' pods Replicas tells.
	Reads() []schema.GroupKind
	// Integrations are the integrations Recognise names.
	Integrations() []v1alpha1.Integration
	// Size is the gang src's object obj declares. It fails, naming the field, when
	// the spec gives no usable size.
	Size(src Source, obj *unstructured.Unstructured) (Size, error)
	// MaxMembers is the most members obj runs at once (declared minimums ignored);
	// ok false: the framework declares no minimum, so the maximum is Size's.
	MaxMembers(src Source, obj *unstructured.Unstructured) (n int64, ok bool)
	// Replicas reads the pods obj will run, calling add for each kind.
	Replicas(obj *unstructured.Unstructured, add Add) error
	// Forms reports whether gang is a gang the pods of src join beside their own
	// (a staged JobSet's later stages).
	Forms(src Source, gang string) bool
	// Creator is the kind of object that creates gk's objects for its own whole
	// life, and so is the workload (a TrainJob its JobSet); ok false for none.
	Creator(gk schema.GroupKind) (creator schema.GroupKind, ok bool)
	// Recovery is what a running gang of gk's objects that lost members needs when
	// its PodGroup says nothing ("": the API's default, Repair).
	Recovery(gk schema.GroupKind) v1alpha1.RecoveryPolicy
}

// Recognition is what a framework tells of a pod.
type Recognition struct {
	Integration v1alpha1.Integration
	Role        v1alpha1.WorkloadRole
	Class       v1alpha1.WorkloadClass
}

// Source is the object whose spec sizes a pod's gang, as the pod names it
// (api/workload checks the name and reads the version and UID from the pod's
// controller reference).
type Source struct {
	// GVK is the owner's kind, at the version to read it.
	GVK  schema.GroupVersionKind
	Name string
	// UID is the owner's UID as the pod claims it ("" when it claims none): a key
	// to look the owner up, not a verified identity.
	UID types.UID
	// Part is the pod's part of the owner where the owner's spec sizes its parts
	// apart: a JobSet pod's replicated job.
	Part string
	// Extra names the gang apart from the owner's other gangs (a LeaderWorkerSet
	// group's index).
	Extra []string
}

// Size is what the owning object says about its gang.
type Size struct {
	// Members is the gang's minimum (bounded: api/workload refuses what is out of
	// range, naming the owner).
	Members int64
	// Gang, when set, is the gang the pod joins instead of Source.Gang: the owner
	// runs its pods in stages (a JobSet's dependsOn) and this is the pod's.
	Gang string
	// ExcludesRole is a role whose pods are not members: an MPI launcher created
	// only once the workers run cannot be counted, or the gang would never form.
	ExcludesRole v1alpha1.WorkloadRole
}

// Add adds count pods of role, made from the pod template tmpl (an unstructured
// PodTemplateSpec).
type Add func(role string, count int64, tmpl any) error

// Base is a framework that recognises no pods, names no source and reads no spec.
type Base struct{}

func (Base) Recognise(map[string]string, string) (Recognition, bool) { return Recognition{}, false }
func (Base) Source(*corev1.Pod, v1alpha1.Integration) (Source, bool) { return Source{}, false }
func (Base) Integrations() []v1alpha1.Integration                    { return nil }
func (Base) Owners() []schema.GroupVersionKind                       { return nil }
func (Base) Reads() []schema.GroupKind                               { return nil }
func (Base) Size(Source, *unstructured.Unstructured) (Size, error)   { return Size{}, nil }
func (Base) MaxMembers(Source, *unstructured.Unstructured) (int64, bool) {
	return 0, false
}
func (Base) Replicas(*unstructured.Unstructured, Add) error    { return nil }
func (Base) Forms(Source, string) bool                         { return false }
func (Base) Creator(schema.GroupKind) (schema.GroupKind, bool) { return schema.GroupKind{}, false }
func (Base) Recovery(schema.GroupKind) v1alpha1.RecoveryPolicy { return "" }

// GangName is "<owner>-<framework>[-<extra>]", shortened with a hash to fit a
// label value (63 characters). owner is a DNS-1123 subdomain, so the result is one
// too.
func GangName(owner, framework string, extra ...string) string {
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

// KnownRole lower-cases v and returns it when it is one of allowed.
func KnownRole(v string, allowed ...v1alpha1.WorkloadRole) v1alpha1.WorkloadRole {
	v = strings.ToLower(v)
	for _, r := range allowed {
		if v == string(r) {
			return r
		}
	}
	return ""
}

// Bounded clamps a count from an untrusted spec to ±(MaxMinMember+1), so that sums
// and products of counts cannot overflow into a plausible size; anything beyond the
// bound is refused as too large (or too small) anyway.
func Bounded(n int64) int64 {
	const limit = gang.MaxMinMember + 1
	return max(-limit, min(n, limit))
}

// Nested is the field at path of m (nil when absent).
func Nested(m map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}

// Int is a non-negative integer field, 0 when absent or of another type.
func Int(m map[string]any, path ...string) int64 {
	if v, ok := Nested(m, path...).(int64); ok && v > 0 {
		return v
	}
	return 0
}

// Replicas is m[field] when it is an integer, else 1 (the default of every
// replicas field KubeNexus reads).
func Replicas(m map[string]any, field string) int64 {
	if n, set := m[field].(int64); set {
		return n
	}
	return 1
}

// JobPods is how many pods a batch Job spec runs at once: parallelism (default 1),
// capped by completions.
func JobPods(spec map[string]any) int64 {
	n, set := spec["parallelism"].(int64)
	if !set {
		n = 1
	}
	if c, set := spec["completions"].(int64); set && c < n {
		n = c
	}
	return Bounded(n)
}

// Spec is obj's spec (nil when it has none).
func Spec(obj *unstructured.Unstructured) map[string]any {
	spec, _ := obj.Object["spec"].(map[string]any)
	return spec
}
