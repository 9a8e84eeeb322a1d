// Package reservation answers what the manager's admission webhook and the
// scheduler both ask of a ResourceReservation: which pods consume it, and what it
// charges against its namespace's ResourceQuotas.
package reservation

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// Owner is the owner a reservation names, as the consumer test reads it.
type Owner struct {
	Namespace string
	Kind      v1alpha1.ReservationOwnerKind
	Name      string
	// UID binds the reservation to one incarnation of the owner ("": any).
	UID string
}

// OwnerOf is rr's owner: spec.owner, with the UID from spec.owner.uid, else the one
// the status recorded.
func OwnerOf(rr *v1alpha1.ResourceReservation) Owner {
	o := Owner{Namespace: rr.Namespace, Kind: rr.Spec.Owner.Kind, Name: rr.Spec.Owner.Name, UID: rr.Spec.Owner.UID}
	if o.UID == "" {
		o.UID = rr.Status.OwnerUID
	}
	return o
}

// ConsumedBy reports whether pod is one of the owner's pods: for a PodGroup owner,
// a member of that gang; for a Pod owner, that pod or a pod it controls (a Spark
// driver's executors name the driver pod as their owner).
func (o Owner) ConsumedBy(pod *corev1.Pod) bool {
	if pod.Namespace != o.Namespace {
		return false
	}
	switch o.Kind {
	case v1alpha1.ReservationOwnerPod:
		if pod.Name == o.Name {
			return o.UID == "" || string(pod.UID) == o.UID
		}
		for _, ref := range pod.OwnerReferences {
			if ref.Kind == "Pod" && ref.APIVersion == "v1" && ref.Name == o.Name {
				return o.UID == "" || string(ref.UID) == o.UID
			}
		}
		return false
	default:
		m, ok, err := gang.Of(pod)
		return err == nil && ok && m.Key.Name == o.Name
	}
}

// Charge is what a reservation adds to its namespace's quota usage, per resource:
// its unconsumed slots, less the requests of its owner's pods that exist but are
// not bound yet — the quota counts those pods already, and the room is held for
// them. Consumed slots are the bound pods' requests, which the quota counts too.
func Charge(rr *v1alpha1.ResourceReservation, pods []*corev1.Pod) corev1.ResourceList {
	unconsumed := int64(max(rr.Unconsumed(), 0))
	if rr.Status.Phase == "" || rr.Status.Phase == v1alpha1.ReservationPending {
		unconsumed = int64(max(rr.Spec.Slots, 1))
	}
	out := corev1.ResourceList{}
	for name, q := range rr.Spec.Resources {
		if name == corev1.ResourcePods {
			continue
		}
		v := q.DeepCopy()
		v.Mul(unconsumed)
		out[name] = v
	}
	owner := OwnerOf(rr)
	for _, p := range pods {
		if p.Spec.NodeName != "" || workload.Finished(p) || !owner.ConsumedBy(p) {
			continue
		}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			if v, ok := out[name]; ok {
				v.Sub(q)
				if v.Sign() < 0 {
					v = resource.Quantity{Format: v.Format}
				}
				out[name] = v
			}
		}
	}
	return out
}

// quotaKeys are the ResourceQuota keys that limit requests of a resource:
// requests.<name>, and the bare name for the resources a quota may name so.
func quotaKeys(name corev1.ResourceName) []corev1.ResourceName {
	keys := []corev1.ResourceName{corev1.ResourceName("requests." + string(name))}
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		keys = append(keys, name)
	}
	return keys
}

// Applies reports whether a quota limits reservations: one with no scopes. A scoped
// quota (by PriorityClass, BestEffort, Terminating, ...) counts pods by what the pod
// itself says, which a reservation does not.
func Applies(q *corev1.ResourceQuota) bool {
	return len(q.Spec.Scopes) == 0 && (q.Spec.ScopeSelector == nil || len(q.Spec.ScopeSelector.MatchExpressions) == 0)
}

// OverQuota explains why the candidate's charge does not fit the quota: for each
// resource it reserves that the quota limits, the quota's used (the namespace's
// pods), plus what the namespace's other reservations charge (others), plus the
// candidate's charge, may not exceed its hard limit. "" when it fits.
func OverQuota(q *corev1.ResourceQuota, others, candidate corev1.ResourceList) string {
	if !Applies(q) {
		return ""
	}
	names := make([]string, 0, len(candidate))
	for name := range candidate {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var over []string
	for _, n := range names {
		name := corev1.ResourceName(n)
		for _, key := range quotaKeys(name) {
			hard, limited := q.Spec.Hard[key]
			if !limited {
				continue
			}
			used, other, mine := q.Status.Used[key], others[name], candidate[name]
			total := used.DeepCopy()
			total.Add(other)
			total.Add(mine)
			if total.Cmp(hard) > 0 {
				over = append(over, fmt.Sprintf("%s: %s reserved here + %s by its other reservations + %s used by its pods = %s, above the hard limit %s",
					key, mine.String(), other.String(), used.String(), total.String(), hard.String()))
			}
		}
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("ResourceQuota %s of namespace %s: %s", q.Name, q.Namespace, strings.Join(over, "; "))
}

// Sum adds charges.
func Sum(charges ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range charges {
		for name, q := range c {
			v := out[name]
			v.Add(q)
			out[name] = v
		}
	}
	return out
}

// DefaultTTL applies when spec.ttlSeconds is unset (an object that skipped API
// defaulting).
const DefaultTTL = 600 * time.Second

// Expiry is when rr stops holding capacity unless its owner consumed it: its
// creation plus spec.ttlSeconds.
func Expiry(rr *v1alpha1.ResourceReservation) time.Time {
	ttl := time.Duration(rr.Spec.TTLSeconds) * time.Second
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return rr.CreationTimestamp.Add(ttl)
}

// Holds reports whether a stored reservation holds capacity at now: not ended
// (Expired, Released, being deleted) and, unless consumed, not past its expiry.
func Holds(rr *v1alpha1.ResourceReservation, now time.Time) bool {
	switch {
	case rr.Status.Phase == v1alpha1.ReservationExpired || rr.Status.Phase == v1alpha1.ReservationReleased || !rr.DeletionTimestamp.IsZero():
		return false
	case rr.Status.Phase == v1alpha1.ReservationConsumed:
		return true
	}
	return now.Before(Expiry(rr))
}
