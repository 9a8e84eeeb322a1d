package resourcereservation

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/podobj"
)

// ConditionPlaced says whether the scheduler has found the reservation a node.
const ConditionPlaced = "Placed"

// Reasons of the Placed condition.
const (
	ReasonPinned       = "Pinned"
	ReasonPlaced       = "Placed"
	ReasonNoNodeFits   = "NoNodeFits"
	ReasonAccumulating = "Accumulating"
	ReasonNodeNotFound = "NodeNotFound"
)

// Shared is the scheduler process's one view of ResourceReservations, used by the
// plugin of every profile: the index Filter reads, the pods assumed but not bound
// yet, and the worker that places reservations and writes their status.
type Shared struct {
	once sync.Once
	err  error

	idx   atomic.Pointer[index]
	cache *crdcache.Cache
	// writer patches reservation status (the scheduler's client is typed for core
	// APIs only).
	writer client.Client
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	// assumed holds pods reserved on a node and not bound yet (uid → assumedPod):
	// the informers do not show them, the placement of a reservation must.
	assumed sync.Map
	queue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	retry   time.Duration
	// creating holds the PodGroups (by UID) whose accumulating reservation is being
	// created.
	creating sync.Map
	// borrowers are the bounded pods placed on room an accumulating reservation
	// lent them (uid → borrower), until they end.
	borrowers sync.Map
	timer     *time.Timer

	// lending: reserved capacity not consumed yet may be used by preemptible pods
	// (the Backfill plugin is on); GangPreemption takes it back for the owner.
	lending atomic.Bool
	// bounded: room accumulating for a gang is lent to pods whose runtime is bounded
	// and that end, with marginNanos to spare, before the gang can start.
	bounded     atomic.Bool
	marginNanos atomic.Int64

	mu        sync.Mutex
	onRelease []func()
}

type borrower struct {
	key  types.NamespacedName
	node string
	req  map[corev1.ResourceName]int64
}

func (s *Shared) borrow(pod *corev1.Pod, key types.NamespacedName, node string, req map[corev1.ResourceName]int64) {
	s.borrowers.Store(pod.UID, borrower{key: key, node: node, req: req})
}

func (s *Shared) unborrow(pod *corev1.Pod) { s.borrowers.Delete(pod.UID) }

func (s *Shared) borrows(uid types.UID) bool {
	_, ok := s.borrowers.Load(uid)
	return ok
}

// borrowed sums the room lent per reservation and node.
func (s *Shared) borrowed() map[types.NamespacedName]nodefree.Tally[string] {
	out := map[types.NamespacedName]nodefree.Tally[string]{}
	s.borrowers.Range(func(_, v any) bool {
		b := v.(borrower)
		if out[b.key] == nil {
			out[b.key] = nodefree.Tally[string]{}
		}
		out[b.key].Add(b.node, b.req, 1)
		return true
	})
	return out
}

type assumedPod struct {
	pod  *corev1.Pod
	node string
}

// NewShared returns the state the plugins of one scheduler process share.
func NewShared() *Shared { return &Shared{} }

func (s *Shared) index() *index {
	if idx := s.idx.Load(); idx != nil {
		return idx
	}
	return &index{}
}

// start wires the state to the cache and informers and runs the status worker,
// once per process.
func (s *Shared) start(ctx context.Context, h fwk.Handle, c *crdcache.Cache, retry time.Duration) error {
	s.once.Do(func() {
		s.err = s.run(ctx, h, c, retry)
	})
	return s.err
}

func (s *Shared) run(ctx context.Context, h fwk.Handle, c *crdcache.Cache, retry time.Duration) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	// The scheduler's client speaks protobuf, which KubeNexus types do not.
	cfg := rest.CopyConfig(h.KubeConfig())
	cfg.ContentType = "application/json"
	w, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating the reservation status client: %w", err)
	}
	informers := h.SharedInformerFactory()
	s.cache, s.writer, s.retry = c, w, retry
	s.pods = informers.Core().V1().Pods().Lister()
	s.nodes = informers.Core().V1().Nodes().Lister()
	s.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "kubenexus-reservations"})
	logger := klog.FromContext(ctx)
	s.rebuild(logger)
	if err := c.OnReservationChange(func() { s.rebuild(logger) }); err != nil {
		return fmt.Errorf("watching ResourceReservations: %w", err)
	}
	done := func(pod *corev1.Pod) { s.assumed.Delete(pod.UID) }
	if _, err := informers.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, newObj any) {
			if pod := podobj.From(newObj); pod != nil && pod.Spec.NodeName != "" {
				done(pod)
				if workload.Finished(pod) {
					s.unborrow(pod)
				}
			}
		},
		DeleteFunc: func(obj any) {
			pod := podobj.From(obj)
			if pod == nil {
				return
			}
			done(pod)
			s.unborrow(pod)
			// A consumer leaving changes its reservations' consumed count.
			if pod.Spec.NodeName != "" {
				for _, r := range s.index().mine(pod, time.Now()) {
					s.enqueue(r.key)
				}
			}
		},
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	go func() {
		for s.next(ctx) {
		}
	}()
	return nil
}

// Lend lets preemptible pods use capacity reservations hold and their owners have
// not consumed yet (Backfill).
func (s *Shared) Lend() { s.lending.Store(true) }

// LendBounded lends room accumulating for a waiting gang to pods whose runtime is
// bounded and that end, margin before, the gang can start (Backfill).
func (s *Shared) LendBounded(margin time.Duration) {
	s.marginNanos.Store(int64(margin))
	s.bounded.Store(true)
}

func (s *Shared) lendsBounded() bool    { return s.bounded.Load() }
func (s *Shared) margin() time.Duration { return time.Duration(s.marginNanos.Load()) }

// Lends reports whether reserved capacity is lent to pod.
func (s *Shared) Lends(pod *corev1.Pod) bool {
	return s.lending.Load() && pod.Labels[v1alpha1.LabelPreemptible] == "true"
}

// Borrows reports whether a bound pod runs on room lent to it: it is preemptible,
// lending is on, and it consumes no reservation on its node.
func (s *Shared) Borrows(pod *corev1.Pod) bool {
	if !s.Lends(pod) {
		return false
	}
	for _, r := range s.index().byNode[pod.Spec.NodeName] {
		if r.consumedBy(pod) {
			return false
		}
	}
	return true
}

// NodesFor returns the nodes where reservations pod may consume hold capacity now:
// where GangPreemption may take back what was lent.
func (s *Shared) NodesFor(pod *corev1.Pod) map[string]bool {
	idx := s.index()
	if len(idx.byNode) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, r := range idx.mine(pod, time.Now()) {
		if r.node != "" {
			out[r.node] = true
		}
	}
	return out
}

// whenReleased registers f to run when a reservation stops holding capacity.
func (s *Shared) whenReleased(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onRelease = append(s.onRelease, f)
}

// rebuild indexes the reservations again, queues those whose status the scheduler
// must write, and, when one stopped holding capacity, retries the pods it kept out.
// It runs on every reservation change and at the next expiry.
func (s *Shared) rebuild(logger klog.Logger) {
	rrs, err := s.cache.Reservations()
	if err != nil {
		logger.Error(err, "Listing ResourceReservations from the cache")
		return
	}
	now := time.Now()
	idx := buildIndex(rrs, now)
	old := s.idx.Swap(idx)
	released := false
	if old != nil {
		for node, rs := range old.byNode {
			for _, r := range rs {
				n := idx.all[r.key]
				if n == nil || !n.holds(now) || n.node != node || n.consumed > r.consumed {
					released = true
				}
			}
		}
	}
	for _, r := range idx.all {
		if r.holds(now) && (r.node == "" || r.status != r.node || r.phase == "" || r.phase == v1alpha1.ReservationPending) {
			s.enqueue(r.key)
		}
	}
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if !idx.nextExpiry.IsZero() {
		s.timer = time.AfterFunc(time.Until(idx.nextExpiry)+10*time.Millisecond, func() { s.rebuild(logger) })
	}
	fns := s.onRelease
	s.mu.Unlock()
	if released {
		for _, f := range fns {
			f()
		}
	}
}

func (s *Shared) enqueue(key types.NamespacedName) {
	if s.queue != nil {
		s.queue.Add(key)
	}
}

func (s *Shared) assume(pod *corev1.Pod, node string) {
	s.assumed.Store(pod.UID, assumedPod{pod: pod, node: node})
}

func (s *Shared) forget(pod *corev1.Pod) { s.assumed.Delete(pod.UID) }

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
	switch {
	case rr.Spec.NodeName != "":
		if _, err := s.nodes.Get(rr.Spec.NodeName); err != nil {
			// Nothing to hold yet: Filter never sees that node. Looked at again
			// every retry, so a node that joins later gets its reservation.
			placed = metav1.Condition{Type: ConditionPlaced, Status: metav1.ConditionFalse, Reason: ReasonNodeNotFound,
				Message: fmt.Sprintf("Node %s, named by spec.nodeName, does not exist; nothing is held until it does.", rr.Spec.NodeName)}
			node, requeue = "", s.retry
		}
	case node != "":
		placed.Reason, placed.Message = ReasonPlaced, fmt.Sprintf("Placed by the scheduler on node %s.", node)
	default:
		var why string
		node, why = s.place(r)
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
		status.ConsumedSlots = int32(s.consumedOn(r, node))
		if status.Phase != v1alpha1.ReservationConsumed {
			status.Phase = v1alpha1.ReservationReserved
			if int(status.ConsumedSlots) >= r.slots {
				status.Phase = v1alpha1.ReservationConsumed
			}
		}
	} else if status.Phase == "" {
		status.Phase = v1alpha1.ReservationPending
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
	consumed := s.consumedOn(r, "")
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
		ttl = int32(defaultTTL / time.Second)
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
						err = s.writer.Create(ctx, rr)
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
// at most the slots.
func (s *Shared) consumedOn(r *reservation, node string) int {
	seen := map[types.UID]bool{}
	n := 0
	count := func(p *corev1.Pod) {
		if n < r.slots && !seen[p.UID] && !workload.Finished(p) && r.consumedBy(p) {
			seen[p.UID] = true
			n++
		}
	}
	if pods, err := s.pods.Pods(r.key.Namespace).List(labels.Everything()); err == nil {
		for _, p := range pods {
			if p.Spec.NodeName != "" && (node == "" || p.Spec.NodeName == node) {
				count(p)
			}
		}
	}
	s.assumed.Range(func(_, v any) bool {
		if a := v.(assumedPod); node == "" || a.node == node {
			count(a.pod)
		}
		return true
	})
	return n
}

// place picks a node for an unplaced reservation: among the nodes its owner's pods
// may run on (node affinity, taints and unschedulable of a pod of the owner, when
// one exists), those where all its slots fit beside their pods (bound and assumed)
// and other reservations. It prefers a node where the owner's pods already run,
// then the tightest fit of the slot's dominant resource (GPUs, else CPU), so that
// whole free nodes stay whole. It lists from the informers: it runs in the
// background for unplaced reservations only, never in a scheduling cycle.
func (s *Shared) place(r *reservation) (string, string) {
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		return "", fmt.Sprintf("listing nodes: %v", err)
	}
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		return "", fmt.Sprintf("listing pods: %v", err)
	}
	used := nodefree.Tally[string]{}
	var rep *corev1.Pod
	hosts := map[string]bool{}
	for _, p := range pods {
		if r.consumedBy(p) {
			if rep == nil {
				rep = p
			}
			if p.Spec.NodeName != "" {
				hosts[p.Spec.NodeName] = true
			}
		}
		if p.Spec.NodeName != "" && !workload.Finished(p) {
			used.Add(p.Spec.NodeName, nodefree.Requests(p), 1)
		}
	}
	s.assumed.Range(func(_, v any) bool {
		a := v.(assumedPod)
		if cur, err := s.pods.Pods(a.pod.Namespace).Get(a.pod.Name); err == nil && cur.UID == a.pod.UID && cur.Spec.NodeName == "" {
			used.Add(a.node, nodefree.Requests(a.pod), 1)
		}
		return true
	})
	now := time.Now()
	idx := s.index()
	for node, rs := range idx.byNode {
		for _, o := range rs {
			if o.key != r.key && o.holds(now) {
				// Slots consumed are in the pods' requests already.
				left := o.slots - int(o.consumed)
				if left > 0 {
					used.Add(node, o.slot, left)
				}
			}
		}
	}
	dominant := corev1.ResourceCPU
	for name := range r.slot {
		if strings.Contains(string(name), "gpu") {
			dominant = name
		}
	}
	type candidate struct {
		name     string
		host     bool
		leftover int64
	}
	var fits []candidate
	eligible := 0
	for _, n := range nodes {
		if rep != nil && !placement.Eligible(rep, n) || rep == nil && !placement.Eligible(&corev1.Pod{}, n) {
			continue
		}
		eligible++
		ok := true
		var leftover int64
		for name, v := range r.slot {
			alloc, has := n.Status.Allocatable[name]
			free := int64(0)
			if has {
				free = alloc.MilliValue() - used[n.Name][name]
			}
			if free < nodefree.Times(v, r.slots) {
				ok = false
				break
			}
			if name == dominant {
				leftover = free - nodefree.Times(v, r.slots)
			}
		}
		if ok {
			fits = append(fits, candidate{name: n.Name, host: hosts[n.Name], leftover: leftover})
		}
	}
	if len(fits) == 0 {
		return "", fmt.Sprintf("No node has %d slot(s) of %s free beside its pods and other reservations (%d eligible node(s)); retrying every %s.",
			r.slots, describe(r.slot), eligible, s.retry)
	}
	sort.Slice(fits, func(i, j int) bool {
		a, b := fits[i], fits[j]
		if a.host != b.host {
			return a.host
		}
		if a.leftover != b.leftover {
			return a.leftover < b.leftover
		}
		return a.name < b.name
	})
	return fits[0].name, ""
}

// describe renders a slot as "{cpu: 4, nvidia.com/gpu: 1}".
func describe(slot map[corev1.ResourceName]int64) string {
	names := make([]string, 0, len(slot))
	for name := range slot {
		names = append(names, string(name))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		q := resource.NewMilliQuantity(slot[corev1.ResourceName(name)], resource.DecimalSI)
		if name == string(corev1.ResourceMemory) {
			q = resource.NewQuantity(slot[corev1.ResourceName(name)]/1000, resource.BinarySI)
		}
		parts = append(parts, name+": "+q.String())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// asReservation reads a reservation from the scheduler's dynamic informer
// (unstructured) or a typed object; nil when it is neither.
func asReservation(obj any) *v1alpha1.ResourceReservation {
	switch o := obj.(type) {
	case *v1alpha1.ResourceReservation:
		return o
	case *unstructured.Unstructured:
		rr := &v1alpha1.ResourceReservation{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, rr); err != nil {
			return nil
		}
		return rr
	}
	return nil
}
