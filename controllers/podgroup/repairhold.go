package podgroup

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=resourcereservations,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=scheduling.kubenexus.io,resources=kubenexusconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// repairDomain is the network domain a repairing gang's room is held in, as
// <node label>=<value>: the domain of its required topology level
// (topology.PolicyOf) that holds every remaining member — or, with none left, the
// lost ones. "" for gangs whose topology is not required (their replacements may
// go anywhere), and when the members span domains or their nodes carry no label
// of the level.
func (r *Reconciler) repairDomain(ctx context.Context, pg *v1alpha1.PodGroup, members []corev1.Pod) string {
	var on []*corev1.Pod
	live, _, lost := tally(members)
	for i := range members {
		p := &members[i]
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && !workload.Finished(p) {
			on = append(on, p)
		}
	}
	if live == 0 {
		on = lost
	}
	if len(on) == 0 {
		return ""
	}
	levels := topology.DefaultLevels
	knc := &v1alpha1.KubeNexusConfig{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: v1alpha1.DefaultConfigName}, knc); err == nil && len(knc.Spec.Topology.Levels) > 0 {
		levels = topology.Levels(knc.Spec.Topology.Levels)
	}
	policy, ok, err := topology.PolicyOf(on[0], pg, levels)
	if err != nil || !ok || !policy.Required {
		return ""
	}
	key, value := policy.LevelsWith(levels)[policy.Level].NodeLabel, ""
	for _, p := range on {
		node := &corev1.Node{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, node); err != nil {
			continue // a deleted node names no domain; the others do
		}
		v := node.Labels[key]
		if v == "" || value != "" && v != value {
			return ""
		}
		value = v
	}
	if value == "" {
		return ""
	}
	return key + "=" + value
}

// slotOf is one replacement's room: the largest request of each resource among
// the lost members (else the members still running, else any), at most 12
// resources, the pod count left out.
func slotOf(members []corev1.Pod) corev1.ResourceList {
	live, _, lost := tally(members)
	pick := lost
	if len(pick) == 0 && live > 0 {
		for i := range members {
			if p := &members[i]; p.Spec.NodeName != "" && !workload.Finished(p) {
				pick = append(pick, p)
			}
		}
	}
	if len(pick) == 0 {
		for i := range members {
			pick = append(pick, &members[i])
		}
	}
	out := corev1.ResourceList{}
	for _, p := range pick {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			if name == corev1.ResourcePods || q.Sign() <= 0 {
				continue
			}
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	if len(out) > 12 {
		names := make([]string, 0, len(out))
		for n := range out {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names[12:] {
			delete(out, corev1.ResourceName(n))
		}
	}
	return out
}

// holdFor is the reservation that holds a repairing gang's room: a slot for each
// member it lacks for minMember, or for each lost member it still sees when they
// are more (a LeaderWorkerSet group is a gang of its leader, but its workers lose
// their room with it), in its domain, until the repair's timeout, owned by the
// PodGroup. nil when the members request nothing. (The scheduler counts a slot
// consumed by each live member beyond minMember less the slots: a gang that
// keeps live members holds no more than it lacks.)
func holdFor(pg *v1alpha1.PodGroup, rs *v1alpha1.GangRepairStatus, members []corev1.Pod, now time.Time, timeout time.Duration) *v1alpha1.ResourceReservation {
	slot := slotOf(members)
	if len(slot) == 0 {
		return nil
	}
	_, _, lost := tally(members)
	slots := max(rs.LostMembers, int32(min(len(lost), 10000)))
	ttl := int32(max(1, rs.StartTime.Add(timeout).Sub(now).Round(time.Second)/time.Second))
	rr := &v1alpha1.ResourceReservation{
		ObjectMeta: metav1.ObjectMeta{
			Name:      rs.Reservation,
			Namespace: pg.Namespace,
			Labels:    map[string]string{v1alpha1.LabelReservationAccumulate: "true", v1alpha1.LabelReservationRepair: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodGroup", Name: pg.Name, UID: pg.UID,
				Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(false)}},
		},
		Spec: v1alpha1.ResourceReservationSpec{
			Owner:      v1alpha1.ReservationOwner{Kind: v1alpha1.ReservationOwnerPodGroup, Name: pg.Name, UID: string(pg.UID)},
			Resources:  slot,
			Slots:      min(slots, 10000),
			TTLSeconds: ttl,
		},
	}
	if k, v, ok := strings.Cut(rs.Domain, "="); ok {
		rr.Spec.NodeSelector = map[string]string{k: v}
	}
	return rr
}

func ptrTo[T any](v T) *T { return &v }

// ensureHold creates the repair's reservation unless the manager's one of this
// repair exists; one of a smaller size (members lost since) grows in place. One
// left from an earlier repair (another domain, or ended) is deleted and created
// again on the next reconcile. A refusal (a quota, the KubeNexusConfig's bounds)
// is reported on the PodGroup and retried.
func (r *Reconciler) ensureHold(ctx context.Context, pg *v1alpha1.PodGroup, want *v1alpha1.ResourceReservation) (time.Duration, error) {
	err := r.Client.Create(ctx, want)
	switch {
	case err == nil:
		ctrl.LoggerFrom(ctx).V(2).Info("Holding a repairing gang's room", "reservation", klog.KObj(want), "slots", want.Spec.Slots, "nodeSelector", want.Spec.NodeSelector)
		return 0, nil
	case apierrors.IsAlreadyExists(err):
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err):
		r.event(pg, corev1.EventTypeWarning, v1alpha1.EventReasonRepairHoldRefused, "Hold",
			fmt.Sprintf("The room of the lost members is not held: creating ResourceReservation %s: %v", want.Name, err))
		return 15 * time.Second, nil
	default:
		return 0, fmt.Errorf("creating ResourceReservation %s: %w", want.Name, err)
	}
	have := &v1alpha1.ResourceReservation{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if !ours(have, pg) {
		r.event(pg, corev1.EventTypeWarning, v1alpha1.EventReasonRepairHoldRefused, "Hold",
			fmt.Sprintf("The room of the lost members is not held: ResourceReservation %s exists and is not this PodGroup's repair reservation.", want.Name))
		return 0, nil
	}
	ended := have.Status.Phase == v1alpha1.ReservationExpired || have.Status.Phase == v1alpha1.ReservationReleased
	// A hold never shrinks: the slots the replacements consumed stay counted in it.
	sameSize := have.Spec.Slots >= want.Spec.Slots && equality.Semantic.DeepEqual(have.Spec.Resources, want.Spec.Resources)
	sameDomain := equality.Semantic.DeepEqual(have.Spec.NodeSelector, want.Spec.NodeSelector)
	switch {
	case !ended && sameDomain && sameSize:
		return 0, nil
	case !ended && sameDomain:
		// More members lost: the hold grows in place (a new reservation would
		// give up for a moment what this one holds).
		grown := have.DeepCopy()
		grown.Spec.Slots, grown.Spec.Resources = max(want.Spec.Slots, have.Spec.Slots), want.Spec.Resources
		err := r.Client.Update(ctx, grown)
		switch {
		case err == nil:
			ctrl.LoggerFrom(ctx).V(2).Info("Holding more of a repairing gang's room", "reservation", klog.KObj(want), "slots", want.Spec.Slots)
			return 0, nil
		case apierrors.IsInvalid(err), apierrors.IsForbidden(err):
			r.event(pg, corev1.EventTypeWarning, v1alpha1.EventReasonRepairHoldRefused, "Hold",
				fmt.Sprintf("The room of the members lost since is not held: growing ResourceReservation %s to %d slots: %v", want.Name, want.Spec.Slots, err))
			return 15 * time.Second, nil
		case apierrors.IsConflict(err):
			return time.Second, nil
		default:
			return 0, fmt.Errorf("growing ResourceReservation %s: %w", want.Name, err)
		}
	}
	if err := r.Client.Delete(ctx, have, client.Preconditions{UID: &have.UID}); client.IgnoreNotFound(err) != nil {
		return 0, err
	}
	return time.Second, nil
}

// ours: rr is the repair reservation the manager created for this PodGroup.
func ours(rr *v1alpha1.ResourceReservation, pg *v1alpha1.PodGroup) bool {
	return rr.Labels[v1alpha1.LabelReservationRepair] == "true" && rr.Spec.Owner.Kind == v1alpha1.ReservationOwnerPodGroup &&
		rr.Spec.Owner.Name == pg.Name && rr.Spec.Owner.UID == string(pg.UID)
}

// dropHold deletes the repair reservation named name, if it is this PodGroup's.
func (r *Reconciler) dropHold(ctx context.Context, pg *v1alpha1.PodGroup, name string) error {
	have := &v1alpha1.ResourceReservation{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: name}, have); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !ours(have, pg) {
		return nil
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, have, client.Preconditions{UID: &have.UID}))
}

// restartMembers deletes the members created before the restart that are not
// finished, so that the workload's controller creates the gang anew; the members
// it creates after the restart are left alone.
func (r *Reconciler) restartMembers(ctx context.Context, members []corev1.Pod, restart time.Time) (int, error) {
	deleted := 0
	for i := range members {
		p := &members[i]
		if workload.Finished(p) || p.DeletionTimestamp != nil || !p.CreationTimestamp.Time.Before(restart) {
			continue
		}
		if err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return deleted, fmt.Errorf("deleting member %s to restart the gang: %w", p.Name, err)
		}
		deleted++
	}
	return deleted, nil
}

// event records an event on the PodGroup, when the reconciler has a recorder.
func (r *Reconciler) event(pg *v1alpha1.PodGroup, kind, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(pg, nil, kind, reason, action, "%s", v1alpha1.EventNote(note))
	}
}
