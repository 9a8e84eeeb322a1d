// Package gang resolves a pod's gang membership from every labelling dialect
// KubeNexus accepts, into one identity shared by the webhook, the controllers and the
// scheduler. Pod labels and annotations are untrusted input: malformed values are
// reported as errors naming the key, never guessed at.
package gang

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-nexus/kubenexus/api/internal/untrusted"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// MaxMinMember is the largest gang KubeNexus accepts (the PodGroup CRD's limit too).
const MaxMinMember = 100000

// Dialect is the convention that put a pod in a gang.
type Dialect string

const (
	// DialectNative: the pod's spec.schedulingGroup.podGroupName naming a Kubernetes
	// PodGroup (scheduling.k8s.io/v1beta1).
	DialectNative Dialect = "Native"
	// DialectPodGroup: label scheduling.x-k8s.io/pod-group naming a PodGroup object.
	DialectPodGroup Dialect = "PodGroup"
	// DialectKubeNexus: pod-group.scheduling.kubenexus.io/{name,min-available} labels.
	DialectKubeNexus Dialect = "KubeNexusLabels"
	// DialectSigs: pod-group.scheduling.sigs.k8s.io/{name,min-available} labels.
	DialectSigs Dialect = "SigsLabels"
	// DialectVolcano: annotation scheduling.k8s.io/group-name naming a PodGroup object.
	DialectVolcano Dialect = "Volcano"
	// DialectKAI: annotation pod-group-name naming a KAI-Scheduler PodGroup
	// (scheduling.run.ai/v2alpha2).
	DialectKAI Dialect = "KAI"
	// DialectKueue: label kueue.x-k8s.io/pod-group-name with annotation
	// kueue.x-k8s.io/pod-group-total-count.
	DialectKueue Dialect = "Kueue"
)

// Key identifies a gang: the name of its PodGroup in the pods' namespace, or of
// its CompositePodGroup (a gang of Kubernetes PodGroups; a PodGroup may share its
// name).
type Key struct {
	Namespace string
	Name      string
	Composite bool
}

func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Part is the key of a part of the gang that is planned on its own (a
// LeaderWorkerSet group inside a larger PodGroup): the gang's name and the part's
// joined by "/", which no gang name holds.
func (k Key) Part(name string) Key {
	return Key{Namespace: k.Namespace, Name: k.Name + "/" + name, Composite: k.Composite}
}

// Whole splits a part's key into its gang's key and the part's name ("" for the key
// of a whole gang).
func (k Key) Whole() (Key, string) {
	if gangName, part, ok := strings.Cut(k.Name, "/"); ok {
		return Key{Namespace: k.Namespace, Name: gangName, Composite: k.Composite}, part
	}
	return k, ""
}

// Membership is what a pod's own labels say about its gang.
type Membership struct {
	Key     Key
	Dialect Dialect
	// MinMember is the quorum the labels state; 0 for object dialects
	// (DialectNative, DialectPodGroup, DialectVolcano, DialectKAI), where the PodGroup
	// object decides.
	MinMember int32
}

// NeedsPodGroupObject reports whether the quorum comes from a PodGroup object.
func (m Membership) NeedsPodGroupObject() bool { return m.MinMember == 0 }

// Of returns the pod's gang membership. ok is false when the pod belongs to no gang.
// When several dialects are present, the first in this order wins: the pod's
// spec.schedulingGroup (validated by the API server, and immutable), PodGroup label,
// KubeNexus labels, sigs labels, Volcano annotation, KAI annotation, Kueue labels.
func Of(pod *corev1.Pod) (m Membership, ok bool, err error) {
	labels, annotations := pod.Labels, pod.Annotations
	key := func(name string) Key { return Key{Namespace: pod.Namespace, Name: name} }

	if name, found := v1alpha1.NativeGroupOf(pod); found {
		if err := validName("spec.schedulingGroup.podGroupName", name); err != nil {
			return Membership{}, false, err
		}
		return Membership{Key: key(name), Dialect: DialectNative}, true, nil
	}
	if name, found := labels[v1alpha1.LabelPodGroup]; found {
		if err := validName(v1alpha1.LabelPodGroup, name); err != nil {
			return Membership{}, false, err
		}
		return Membership{Key: key(name), Dialect: DialectPodGroup}, true, nil
	}
	for _, d := range []struct {
		dialect Dialect
		nameKey string
		minKey  string
	}{
		{DialectKubeNexus, v1alpha1.LabelKubeNexusGangName, v1alpha1.LabelKubeNexusGangMinAvailable},
		{DialectSigs, v1alpha1.LabelSigsGangName, v1alpha1.LabelSigsGangMinAvailable},
	} {
		name, found := labels[d.nameKey]
		if !found {
			continue
		}
		if err := validName(d.nameKey, name); err != nil {
			return Membership{}, false, err
		}
		raw, found := labels[d.minKey]
		if !found {
			return Membership{}, false, fmt.Errorf("label %s is set but %s is missing; it must be an integer between 1 and %d", d.nameKey, d.minKey, MaxMinMember)
		}
		n, err := parseMin(d.minKey, raw)
		if err != nil {
			return Membership{}, false, err
		}
		return Membership{Key: key(name), Dialect: d.dialect, MinMember: n}, true, nil
	}
	if name, found := annotations[v1alpha1.AnnotationVolcanoGroupName]; found {
		if err := validName(v1alpha1.AnnotationVolcanoGroupName, name); err != nil {
			return Membership{}, false, err
		}
		return Membership{Key: key(name), Dialect: DialectVolcano}, true, nil
	}
	if name, found := annotations[v1alpha1.AnnotationKAIPodGroupName]; found {
		if err := validName(v1alpha1.AnnotationKAIPodGroupName, name); err != nil {
			return Membership{}, false, err
		}
		return Membership{Key: key(name), Dialect: DialectKAI}, true, nil
	}
	if name, found := labels[v1alpha1.LabelKueuePodGroupName]; found {
		if err := validName(v1alpha1.LabelKueuePodGroupName, name); err != nil {
			return Membership{}, false, err
		}
		raw, found := annotations[v1alpha1.AnnotationKueuePodGroupTotalCount]
		if !found {
			return Membership{}, false, fmt.Errorf("label %s is set but annotation %s is missing; it must be an integer between 1 and %d", v1alpha1.LabelKueuePodGroupName, v1alpha1.AnnotationKueuePodGroupTotalCount, MaxMinMember)
		}
		n, err := parseMin(v1alpha1.AnnotationKueuePodGroupTotalCount, raw)
		if err != nil {
			return Membership{}, false, err
		}
		return Membership{Key: key(name), Dialect: DialectKueue, MinMember: n}, true, nil
	}
	return Membership{}, false, nil
}

func validName(key, name string) error {
	if isDNS1123Subdomain(name) {
		return nil
	}
	errs := validation.IsDNS1123Subdomain(name)
	return fmt.Errorf("%s=%q is not a valid PodGroup name: %s", key, untrusted.Truncate(name), strings.Join(errs, "; "))
}

// IsValidName reports whether s can name a PodGroup (a DNS-1123 subdomain).
func IsValidName(s string) bool { return isDNS1123Subdomain(s) }

// isDNS1123Subdomain is validation.IsDNS1123Subdomain without a regular expression:
// Of runs in the scheduler's queue comparator and queueing hints, many times per pod.
func isDNS1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	alnum := func(c byte) bool { return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') }
	start := true // at the start of a dot-separated label
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case alnum(c):
			start = false
		case c == '-':
			if start {
				return false
			}
		case c == '.':
			if start || s[i-1] == '-' {
				return false
			}
			start = true
		default:
			return false
		}
	}
	return !start && s[len(s)-1] != '-'
}

func parseMin(key, raw string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32)
	if err != nil || n < 1 || n > MaxMinMember {
		return 0, fmt.Errorf("%s=%q must be an integer between 1 and %d", key, untrusted.Truncate(raw), MaxMinMember)
	}
	return int32(n), nil
}

// IsGated reports whether the pod still waits behind a scheduling gate (its own
// system's, e.g. Kueue's admission gate). Gated pods do not count towards a quorum,
// and KubeNexus never removes another system's gate.
func IsGated(pod *corev1.Pod) bool { return len(pod.Spec.SchedulingGates) > 0 }
