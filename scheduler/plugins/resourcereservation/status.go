package resourcereservation

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	reservationapi "github.com/kube-nexus/kubenexus/api/reservation"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// The status worker: reservations whose placement or consumption changed are
// queued, placed (placement.go) and their status written.

// ConditionPlaced says whether the scheduler has found the reservation a node.
const ConditionPlaced = "Placed"

// Reasons of the Placed condition.
const (
	ReasonPinned       = "Pinned"
	ReasonPlaced       = "Placed"
	ReasonNoNodeFits   = "NoNodeFits"
	ReasonAccumulating = "Accumulating"
	ReasonNodeNotFound = "NodeNotFound"
	// ReasonTierRefused: the HardwareTier of the node spec.nodeName names does not
	// admit the namespace's tenant tier; nothing is held.
	ReasonTierRefused = "TierRefused"
)

func (s *Shared) enqueue(key types.NamespacedName) {
	if s.queue != nil {
		s.queue.Add(key)
	}
}

func (s *Shared) next(ctx context.Context) bool {
	key, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(key)
	requeue, err := s.sync(ctx, key)
	switch {
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Writing ResourceReservation status; retrying", "reservation", key, "err", err)
		s.queue.AddRateLimited(key)
	case requeue > 0:
		s.queue.Forget(key)
		s.queue.AddAfter(key, requeue)
	default:
		s.queue.Forget(key)
	}
	return true
}

// sync places an unplaced reservation and writes its node, phase and consumed
// slots. It returns when to look again for a reservation no node fits.
func (s *Shared) sync(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	rr := s.cache.Reservation(key)
	if rr == nil || !rr.DeletionTimestamp.IsZero() {
		return 0, nil
	}
	r := newReservation(rr)
	if !r.holds(time.Now()) {
		return 0, nil // the manager ends it
	}
	if r.accumulate {
		return 0, s.syncAccumulating(ctx, rr, r)
	}
	placed := metav1.Condition{Type: ConditionPlaced, Status: metav1.ConditionTrue, Reason: ReasonPinned,
		Message: fmt.Sprintf("Held on node %s, named by spec.nodeName.", r.node)}
	var requeue time.Duration
	node := r.node
	tiers := s.gate.tiers(klog.FromContext(ctx))
	refused := ""
	if rr.Status.Phase != v1alpha1.ReservationConsumed {
		// A consumed reservation holds nothing beyond its owner's pods.
		refused = s.gate.refusesOn(tiers, rr.Namespace, node)
	}
	switch {
	case rr.Spec.NodeName != "":
		if _, err := s.nodes.Get(rr.Spec.NodeName); err != nil {
			// Nothing to hold yet: Filter never sees that node. Looked at again
			// every retry, so a node that joins later gets its reservation.
			placed = metav1.Condition{Type: ConditionPlaced, Status: metav1.ConditionFalse, Reason: ReasonNodeNotFound,
				Message: fmt.Sprintf("Node %s, named by spec.nodeName, does not exist; nothing is held until it does.", rr.Spec.NodeName)}
			node, requeue = "", s.retry
		} else if refused != "" {
			// Held again if the tier, the node or the namespace's tier changes (the
			// index is rebuilt then and queues it).
			placed = metav1.Condition{Type: ConditionPlaced, Status: metav1.ConditionFalse, Reason: ReasonTierRefused,
				Message: fmt.Sprintf("Node %s, named by spec.nodeName: %s; nothing is held.", rr.Spec.NodeName, refused)}
			node = ""
		}
	case node != "" && refused == "":
		placed.Reason, placed.Message = ReasonPlaced, fmt.Sprintf("Placed by the scheduler on node %s.", node)
	default:
		// Unplaced, or placed on a node that no longer admits the namespace's
		// tenant tier: placed (again) where it may hold.
		var why string
		node, why = s.place(r, tiers)
		if node == "" {
			placed = metav1.Condition{Type: ConditionPlaced, Status: metav1.ConditionFalse, Reason: ReasonNoNodeFits, Message: why}
			requeue = s.retry
		} else {
			placed.Reason, placed.Message = ReasonPlaced, fmt.Sprintf("Placed by the scheduler on node %s.", node)
		}
	}
	status := rr.Status.DeepCopy()
	if node != "" {
		status.NodeName = node
		status.ConsumedSlots = int32(s.consumedOn(r, node, r.slots, false))
		if status.Phase != v1alpha1.ReservationConsumed {
			status.Phase = v1alpha1.ReservationReserved
			if int(status.ConsumedSlots) >= r.slots {
				status.Phase = v1alpha1.ReservationConsumed
			}
		}
	} else {
		status.NodeName = ""
		if status.Phase == "" || status.Phase == v1alpha1.ReservationReserved {
			status.Phase = v1alpha1.ReservationPending
		}
	}
	placed.ObservedGeneration = rr.Generation
	meta.SetStatusCondition(&status.Conditions, placed)
	if statusEqual(&rr.Status, status) {
		return requeue, nil
	}
	patch := client.MergeFromWithOptions(rr.DeepCopy(), client.MergeFromWithOptimisticLock{})
	rr.Status = *status
	if err := s.writer.Status().Patch(ctx, rr, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	return requeue, nil
}

// syncAccumulating writes an accumulating reservation's status: the gang's members
// bound anywhere are its consumed slots.
func (s *Shared) syncAccumulating(ctx context.Context, rr *v1alpha1.ResourceReservation, r *reservation) error {
	base := s.base(r)
	consumed := max(0, s.consumedOn(r, "", base+r.slots, true)-base)
	status := rr.Status.DeepCopy()
	status.ConsumedSlots = int32(consumed)
	if status.Phase != v1alpha1.ReservationConsumed {
		status.Phase = v1alpha1.ReservationReserved
		if consumed >= r.slots {
			status.Phase = v1alpha1.ReservationConsumed
		}
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ConditionPlaced, Status: metav1.ConditionTrue, Reason: ReasonAccumulating,
		ObservedGeneration: rr.Generation,
		Message:            fmt.Sprintf("Holds free room for the missing members of PodGroup %s, %d slot(s) of %s, on any node as it frees.", r.ownerName, r.slots, describe(r.slot))})
	if statusEqual(&rr.Status, status) {
		return nil
	}
	patch := client.MergeFromWithOptions(rr.DeepCopy(), client.MergeFromWithOptimisticLock{})
	rr.Status = *status
	if err := s.writer.Status().Patch(ctx, rr, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// Accumulate creates the accumulating reservation of a gang rejected for lack of
// capacity whose PodGroup asks for one (spec.reserveCapacity), unless it holds one:
// missing slots of the pending member's requests, owned by the PodGroup (deleted
// with it), for the PodGroup's TTL. It returns at once; the API call runs behind.
func (s *Shared) Accumulate(pg *v1alpha1.PodGroup, member *corev1.Pod, missing int) {
	if s.writer == nil || pg.Spec.ReserveCapacity == nil || missing < 1 || pg.UID == "" {
		return
	}
	now := time.Now()
	for _, r := range s.index().byOwner[ownerOf(v1alpha1.ReservationOwnerPodGroup, pg.Namespace, pg.Name)] {
		if r.accumulate && r.holds(now) {
			return
		}
	}
	req := corev1.ResourceList{}
	for name, v := range nodefree.Requests(member) {
		if name == corev1.ResourcePods || len(req) == 12 {
			continue
		}
		req[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
	}
	if len(req) == 0 {
		return // a slot of nothing holds nothing
	}
	ttl := pg.Spec.ReserveCapacity.TTLSeconds
	if ttl <= 0 {
		ttl = int32(reservationapi.DefaultTTL / time.Second)
	}
	rr := &v1alpha1.ResourceReservation{
		ObjectMeta: metav1.ObjectMeta{
			Name:            accumulateName(pg.Name),
			Namespace:       pg.Namespace,
			Labels:          map[string]string{v1alpha1.LabelReservationAccumulate: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodGroup", Name: pg.Name, UID: pg.UID}},
		},
		Spec: v1alpha1.ResourceReservationSpec{
			Owner:      v1alpha1.ReservationOwner{Kind: v1alpha1.ReservationOwnerPodGroup, Name: pg.Name, UID: string(pg.UID)},
			Resources:  req,
			Slots:      int32(min(missing, 10000)),
			TTLSeconds: ttl,
		},
	}
	if _, busy := s.creating.LoadOrStore(pg.UID, true); busy {
		return
	}
	go func() {
		defer s.creating.Delete(pg.UID)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := s.writer.Create(ctx, rr)
		if apierrors.IsAlreadyExists(err) {
			// An earlier one ended (expired or released): replace it.
			old := &v1alpha1.ResourceReservation{}
			if err := s.writer.Get(ctx, client.ObjectKeyFromObject(rr), old); err == nil && old.Labels[v1alpha1.LabelReservationAccumulate] == "true" {
				// Only one of ours is replaced, never a user's object of that name.
				if r := newReservation(old); !r.holds(time.Now()) {
					if err := s.writer.Delete(ctx, old, client.Preconditions{UID: &old.UID}); err == nil {
						if err := s.writer.Create(ctx, rr); err != nil {
							klog.Background().V(2).Info("Replacing the accumulating reservation of a gang", "podGroup", klog.KObj(pg), "err", err)
						}
					}
				}
			}
			return
		}
		if err != nil {
			klog.Background().V(2).Info("Creating the accumulating reservation of a gang", "podGroup", klog.KObj(pg), "err", err)
		}
	}()
}

// accumulateName is "<podgroup>-accumulate", shortened to stay a valid name.
func accumulateName(pg string) string {
	const suffix = "-accumulate"
	if len(pg)+len(suffix) > 253 {
		pg = strings.TrimRight(pg[:253-len(suffix)], "-.")
	}
	return pg + suffix
}

func statusEqual(a, b *v1alpha1.ResourceReservationStatus) bool {
	if a.NodeName != b.NodeName || a.Phase != b.Phase || a.ConsumedSlots != b.ConsumedSlots {
		return false
	}
	ca, cb := meta.FindStatusCondition(a.Conditions, ConditionPlaced), meta.FindStatusCondition(b.Conditions, ConditionPlaced)
	if ca == nil || cb == nil {
		return ca == cb
	}
	return ca.Status == cb.Status && ca.Reason == cb.Reason && ca.Message == cb.Message && ca.ObservedGeneration == cb.ObservedGeneration
}

// consumedOn counts the owner's pods bound or assumed on node ("": on any node),
// at most upTo; with live, not those terminating (a repairing gang's lost members
// are terminating until their node confirms).
func (s *Shared) consumedOn(r *reservation, node string, upTo int, live bool) int {
	seen := map[types.UID]bool{}
	n := 0
	count := func(p *corev1.Pod) {
		if n < upTo && !seen[p.UID] && !workload.Finished(p) && (!live || p.DeletionTimestamp == nil) && r.consumedBy(p) {
			seen[p.UID] = true
			n++
		}
	}
	// The assumed pods first: a pod leaves them only once the lister shows it bound,
	// so read in this order a binding that lands in between is counted in one of
	// the two (the other order missed it, and nothing wrote the status again).
	s.assumed.Range(func(_, v any) bool {
		if a := v.(assumedPod); node == "" || a.node == node {
			count(a.pod)
		}
		return true
	})
	if pods, err := s.pods.Pods(r.key.Namespace).List(labels.Everything()); err == nil {
		for _, p := range pods {
			if p.Spec.NodeName != "" && (node == "" || p.Spec.NodeName == node) {
				count(p)
			}
		}
	}
	return n
}

// base is how many members of its gang an accumulating reservation holds no room
// for: its PodGroup's minMember less its slots. 0 for the reservation of a gang
// waiting to start (slots: the members missing then, all of them); the number of
// members still running for a repairing gang's, whose slots are the lost members' —
// counted against the size that makes the gang whole, when the gang Service knows
// a larger one than minMember (a LeaderWorkerSet group's PodGroup asks for its
// leader alone; the manager's repair holds room for the members the group lacks).
// Its missing slots are slots less the members placed beyond base.
func (s *Shared) base(r *reservation) int {
	if !r.accumulate || s.cache == nil {
		return 0
	}
	key := gang.Key{Namespace: r.key.Namespace, Name: r.ownerName}
	pg := s.cache.PodGroup(key)
	if pg == nil {
		return 0
	}
	whole := int(pg.Spec.MinMember)
	if r.repair {
		s.mu.Lock()
		sizers := s.sizers
		s.mu.Unlock()
		for _, size := range sizers {
			whole = max(whole, size(key))
		}
	}
	return max(0, whole-r.slots)
}

// sizedBy adds a profile's gang Service's whole sizes to base's reading.
func (s *Shared) sizedBy(size func(gang.Key) int) {
	s.mu.Lock()
	s.sizers = append(s.sizers, size)
	s.mu.Unlock()
}
