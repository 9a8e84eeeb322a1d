package resourcereservation

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
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

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/hardware"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/podobj"
)

// Shared is the scheduler process's one view of ResourceReservations, used by the
// plugin of every profile: the index Filter reads, the pods assumed but not bound
// yet, and the worker that places reservations and writes their status.
type Shared struct {
	once sync.Once
	err  error

	idx atomic.Pointer[index]
	// loaded is closed once the first index is built (in the background, once the
	// shared cache has synced); rebuilding keeps rebuilds one at a time, so that the
	// last to list is the last to store.
	loaded     chan struct{}
	rebuilding sync.Mutex
	cache      *crdcache.Cache
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
	// gpus are the resources that count as GPUs, in the order the config names them.
	gpus []corev1.ResourceName
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

	// gate keeps reservations off nodes whose HardwareTier refuses their tenant, with
	// tiers the HardwareTiers as of the last rebuild (nil: none).
	gate  *tierGate
	tiers atomic.Pointer[hardware.TierSet]

	mu        sync.Mutex
	onRelease []func()
	// sizers give how many placed members make a gang whole as each profile's gang
	// Service sees it (gangs.Service.WholeSize): more than its PodGroup's minMember
	// for a LeaderWorkerSet group created leader first, whose PodGroup asks for the
	// leader alone. Guarded by mu.
	sizers []func(gang.Key) int
}

type assumedPod struct {
	pod  *corev1.Pod
	node string
}

// NewShared returns the state the plugins of one scheduler process share.
func NewShared() *Shared { return &Shared{} }

// NewSharedOf returns a state that holds rrs as the ResourceReservation plugin indexes
// them now, without the worker that places them and writes their status: for
// plugins that read what reservations hold, outside a running scheduler.
func NewSharedOf(rrs []v1alpha1.ResourceReservation) *Shared {
	s := &Shared{}
	s.idx.Store(buildIndex(rrs, time.Now(), nil))
	return s
}

func (s *Shared) index() *index {
	if idx := s.idx.Load(); idx != nil {
		return idx
	}
	if s.loaded != nil {
		<-s.loaded
		if idx := s.idx.Load(); idx != nil {
			return idx
		}
	}
	return &index{}
}

// start wires the state to the cache and informers and runs the status worker,
// once per process.
func (s *Shared) start(ctx context.Context, h fwk.Handle, c *crdcache.Cache, retry time.Duration, gpus []corev1.ResourceName, devices nodeDevices) error {
	s.once.Do(func() {
		s.gpus = gpus
		s.err = s.run(ctx, h, c, retry, devices)
	})
	return s.err
}

func (s *Shared) run(ctx context.Context, h fwk.Handle, c *crdcache.Cache, retry time.Duration, devices nodeDevices) error {
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
	s.gate = &tierGate{cache: c, namespaces: informers.Core().V1().Namespaces().Lister(), nodes: s.nodes, devices: devices}
	s.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "kubenexus-reservations"})
	logger := klog.FromContext(ctx)
	// The first index waits for the cache to sync, off the start-up path; whoever
	// needs it waits for it (index).
	s.loaded = make(chan struct{})
	go func() {
		s.rebuild(logger)
		close(s.loaded)
	}()
	if err := c.OnReservationChange(func() { s.rebuild(logger) }); err != nil {
		return fmt.Errorf("watching ResourceReservations: %w", err)
	}
	// Node labels change rarely; a pass over the reservations tells whether one
	// names the node.
	namedNode := func(node string) bool {
		for _, r := range s.index().all {
			if r.node == node {
				return true
			}
		}
		return false
	}
	if err := s.gate.watch(c, informers.Core().V1().Namespaces().Informer(), informers.Core().V1().Nodes().Informer(), func() { s.rebuild(logger) }, namedNode); err != nil {
		return fmt.Errorf("watching what HardwareTiers are matched by: %w", err)
	}
	done := func(pod *corev1.Pod) { s.assumed.Delete(pod.UID) }
	if _, err := informers.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			if pod := podobj.From(newObj); pod != nil && pod.Spec.NodeName != "" {
				done(pod)
				if workload.Finished(pod) {
					s.unborrow(pod)
				}
				// A consumer bound: its reservations' consumed count is read again
				// from the lister, whatever the sync at its Reserve saw.
				if old := podobj.From(oldObj); old != nil && old.Spec.NodeName == "" {
					for _, r := range s.index().mine(pod, time.Now()) {
						s.enqueue(r.key)
					}
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
	s.rebuilding.Lock()
	defer s.rebuilding.Unlock()
	rrs, err := s.cache.Reservations()
	if err != nil {
		logger.Error(err, "Listing ResourceReservations from the cache")
		return
	}
	now := time.Now()
	tiers := s.gate.tiers(logger)
	s.tiers.Store(tiers)
	idx := buildIndex(rrs, now, func(r *reservation) string { return s.gate.refusesOn(tiers, r.key.Namespace, r.node) })
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
		refusedUnsaid := r.refused != "" && !r.terminal() && r.placedReason != ReasonTierRefused
		if refusedUnsaid || r.holds(now) && (r.node == "" || r.status != r.node || r.phase == "" || r.phase == v1alpha1.ReservationPending) {
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

func (s *Shared) assume(pod *corev1.Pod, node string) {
	s.assumed.Store(pod.UID, assumedPod{pod: pod, node: node})
}

func (s *Shared) forget(pod *corev1.Pod) { s.assumed.Delete(pod.UID) }
