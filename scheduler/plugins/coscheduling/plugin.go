// Package coscheduling schedules gangs all-or-nothing: members are held until the
// gang's quorum exists (PreEnqueue), checked against the gang's minResources
// (PreFilter), and released together once enough of them are reserved (Permit). A
// gang that cannot be completed is rejected and backs off as a unit.
package coscheduling

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/apis/config"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangview"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// Name is the plugin's registered name.
const Name = names.Coscheduling

// Reasons shown in `kubectl describe pod` and on PodGroup events.
const (
	ErrReasonInvalidGangLabels       = "invalid gang membership"
	ErrReasonWaitingForQuorum        = "waiting for gang members"
	ErrReasonPodGroupMissing         = "waiting for PodGroup"
	ErrReasonBackoff                 = "gang is backing off after a failed attempt"
	ErrReasonMinResources            = "cluster lacks the gang's minResources"
	ErrReasonGangRejected            = "gang rejected"
	ErrReasonWaitingForPriorityClass = "waiting for the gang's PriorityClass"
	// ErrReasonWaitingForCache: the scheduler has just started and its KubeNexus object
	// cache (PodGroups among them) has not listed yet.
	ErrReasonWaitingForCache = "waiting for the scheduler's KubeNexus object cache to sync"
)

// Plugin is the Coscheduling plugin.
type Plugin struct {
	handle fwk.Handle
	args   *config.CoschedulingArgs
	pgs    *crdcache.Cache
	index  *podIndex
	now    func() time.Time
	// gangs holds the views other plugins publish (nil in unit tests).
	gangs *gangview.Registry
	// classesSynced reports whether the PriorityClass cache has synced (nil: synced).
	classesSynced func() bool
	// cacheWait are the members (by namespace/name) PreEnqueue held because the
	// object cache had not synced yet; they are activated once it has.
	cacheWaitMu sync.Mutex
	cacheWait   map[string]*corev1.Pod

	// added is what the member-added hint worked out about the last added pod.
	added addedMemo
}

var (
	_ fwk.QueueSortPlugin   = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin. It registers its pod index on the scheduler's shared pod
// informer and reads PodGroups from the shared KubeNexus cache.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, crds *crdcache.Provider, gangs *gangview.Registry) (*Plugin, error) {
	args, err := config.DecodeCoschedulingArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pgs, err := crds.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	RegisterMetrics()
	pl := &Plugin{handle: h, args: args, pgs: pgs, now: time.Now, gangs: gangs}
	pl.index = newPodIndex(h.ProfileName(), pl.now)
	pl.index.onChange = pl.memberArrived
	if gangs != nil {
		gangs.Set(h.ProfileName(), pl.pendingMembers)
		gangs.SetPlaced(h.ProfileName(), pl.placedNodes)
		gangs.SetPriority(h.ProfileName(), pl.gangPriority)
		gangs.SetGate(h.ProfileName(), gangview.Gate{Admit: pl.admit, MemberAdded: pl.isSchedulableAfterMemberAdded})
	}
	priorityClasses := h.SharedInformerFactory().Scheduling().V1().PriorityClasses()
	pl.index.priority = gangPriority{
		podGroupClass: func(key gang.Key) string {
			if pg := pgs.PodGroup(key); pg != nil {
				return pg.Spec.PriorityClassName
			}
			return ""
		},
		classes: priorityClasses.Lister(),
	}
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(pl.index.handler()); err != nil {
		return nil, fmt.Errorf("%s: watching pods: %w", Name, err)
	}
	// A PodGroup or PriorityClass change re-resolves the gang's queue priority. Members
	// already in the active queue keep their place until they are re-queued; PodGroup
	// dialects hold members in PreEnqueue until the PodGroup exists, so they enter the
	// queue with its priority.
	if err := pgs.OnPodGroupChange(func(key gang.Key) {
		pl.index.refreshPriority(key)
		pl.activateIfQuorum(key)
	}); err != nil {
		return nil, fmt.Errorf("%s: watching PodGroups: %w", Name, err)
	}
	onClass := func(obj any) {
		if m, err := meta.Accessor(obj); err == nil {
			pl.index.refreshPriorityClass(m.GetName())
		} else if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			if m, err := meta.Accessor(t.Obj); err == nil {
				pl.index.refreshPriorityClass(m.GetName())
			}
		}
	}
	classInformer := priorityClasses.Informer()
	if _, err := classInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    onClass,
		UpdateFunc: func(_, obj any) { onClass(obj) },
		DeleteFunc: onClass,
	}); err != nil {
		return nil, fmt.Errorf("%s: watching PriorityClasses: %w", Name, err)
	}
	// PreEnqueue holds members of gangs with a PriorityClass until the cache has
	// synced; then they are let in.
	pl.classesSynced = classInformer.HasSynced
	go func() {
		if toolscache.WaitForCacheSync(ctx.Done(), classInformer.HasSynced) {
			for _, key := range pl.index.gangsWithPriorityClass() {
				pl.activateIfQuorum(key)
			}
		}
	}()
	// PreEnqueue holds members until the KubeNexus object cache has synced (it must
	// not wait on the queue's path); then every held member goes back through
	// PreEnqueue, which now decides with the PodGroups listed (a member whose PodGroup
	// does not exist goes on to PreFilter, which says so).
	go func() {
		select {
		case <-pgs.WhenSynced():
			pl.activateHeldForCache()
		case <-ctx.Done():
		}
	}()
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// quorum returns the gang's minMember and its PodGroup, if any. known is false when
// the gang is defined by a PodGroup object that does not exist (yet).
func (pl *Plugin) quorum(key gang.Key, labelMin int32) (minMember int32, pg *v1alpha1.PodGroup, known bool) {
	if pg = pl.pgs.PodGroup(key); pg != nil {
		return pg.Spec.MinMember, pg, true
	}
	if labelMin > 0 {
		return labelMin, nil, true
	}
	return 0, nil, false
}

// scheduleTimeout is how long members wait at Permit for the rest of the gang.
func (pl *Plugin) scheduleTimeout(pg *v1alpha1.PodGroup) time.Duration {
	if pg != nil && pg.Spec.ScheduleTimeoutSeconds != nil {
		return time.Duration(*pg.Spec.ScheduleTimeoutSeconds) * time.Second
	}
	return pl.args.ScheduleTimeout()
}

// holdForCache records a member PreEnqueue turned away because the object cache had
// not synced. It reports false when the cache has synced meanwhile: the member is
// decided now, since the activation that follows the sync may already have run.
func (pl *Plugin) holdForCache(pod *corev1.Pod) bool {
	pl.cacheWaitMu.Lock()
	defer pl.cacheWaitMu.Unlock()
	if pl.pgs.Synced() {
		return false
	}
	if pl.cacheWait == nil {
		pl.cacheWait = map[string]*corev1.Pod{}
	}
	pl.cacheWait[pod.Namespace+"/"+pod.Name] = pod
	return true
}

// waitsForCache reports whether PreEnqueue holds the member until the object cache
// has synced.
func (pl *Plugin) waitsForCache(pod *corev1.Pod) bool {
	pl.cacheWaitMu.Lock()
	defer pl.cacheWaitMu.Unlock()
	if pl.cacheWait == nil {
		return false
	}
	_, ok := pl.cacheWait[pod.Namespace+"/"+pod.Name]
	return ok
}

// activateHeldForCache lets in the members held until the object cache synced.
func (pl *Plugin) activateHeldForCache() {
	pl.cacheWaitMu.Lock()
	pods := pl.cacheWait
	pl.cacheWait = nil
	pl.cacheWaitMu.Unlock()
	if len(pods) > 0 {
		pl.handle.Activate(klog.Background(), pods)
	}
}

// activateIfQuorum moves the gang's pending members to the active queue when the
// gang has its quorum, so that no member waits for an unrelated event.
func (pl *Plugin) activateIfQuorum(key gang.Key) {
	pl.index.mu.RLock()
	e := pl.index.get(key)
	if e == nil {
		pl.index.mu.RUnlock()
		return
	}
	labelMin, ungated, have := e.labelMin, e.ungated, maps.Clone(e.roleUngated)
	pl.index.mu.RUnlock()

	minMember, pg, known := pl.quorum(key, labelMin)
	if !known || !quorumMet(minMember, minPerRole(pg), ungated, have) {
		return
	}
	pl.activatePending(key)
}

// activatePending moves the gang's pending members to the active queue.
func (pl *Plugin) activatePending(key gang.Key) {
	pl.index.mu.RLock()
	var pods map[string]*corev1.Pod
	if e := pl.index.get(key); e != nil {
		pods = e.pending()
	}
	pl.index.mu.RUnlock()
	if len(pods) > 0 {
		pl.handle.Activate(klog.Background(), pods)
	}
}

// memberArrived wakes what a member's arrival (or the lifting of its scheduling
// gates) can let into scheduling. The arrival that brings the gang to its quorum
// activates every pending member. After that only a newcomer that PreEnqueue turned
// away is woken (its check ran before the index had counted the members that make the
// quorum): the members already pending were not waiting for it, and re-activating them
// at every arrival sent an elastic gang's n pending members round the queue n times.
func (pl *Plugin) memberArrived(c memberChange) {
	if gang.IsGated(c.pod) {
		return
	}
	minMember, pg, known := pl.quorum(c.key, c.labelMin)
	roles := minPerRole(pg)
	switch {
	case !known || !quorumMet(minMember, roles, c.ungated, c.roles):
	case c.roleChanged || completedBy(c.pod, minMember, roles, c.ungated, c.roles):
		pl.activatePending(c.key)
	case c.pod.Spec.NodeName == "" && pl.index.release(c.pod.UID):
		pl.handle.Activate(klog.Background(), map[string]*corev1.Pod{c.pod.Namespace + "/" + c.pod.Name: c.pod})
	}
}

// SignPod keeps pods of different gangs apart in the scheduler's opportunistic
// batching; Coscheduling filters no node, so plain pods add nothing.
func (pl *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	m, ok, err := gang.Of(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, "invalid gang labels")
	}
	if !ok {
		return nil, nil
	}
	return []fwk.SignFragment{{Key: "kubenexus.io/gang", Value: m.Key.String()}}, nil
}

// gangPriority returns the gang's priority as the queue orders it (its PodGroup's
// PriorityClass capped at its members' own priorities; nil: each member's own),
// for GangPreemption (gangview.PriorityFunc).
func (pl *Plugin) gangPriority(key gang.Key) (*int32, bool) {
	pl.index.mu.RLock()
	defer pl.index.mu.RUnlock()
	e := pl.index.get(key)
	if e == nil {
		return nil, false
	}
	if v, ok := e.queuePriority(); ok {
		return &v, true
	}
	return nil, true
}

// placedNodes returns the nodes the gang's members are bound to, reserved on or
// permitted on (gangview.PlacedFunc); for a part's key (gang.Key.Part), its members'.
func (pl *Plugin) placedNodes(key gang.Key) []string {
	whole, part := key.Whole()
	pl.index.mu.RLock()
	defer pl.index.mu.RUnlock()
	if e := pl.index.get(whole); e != nil {
		return e.placedNodes(inPart(part))
	}
	return nil
}

// pendingMembers returns the gang's members that still need a node, for other
// plugins of the profile (gangview); for a part's key (gang.Key.Part), its members'.
func (pl *Plugin) pendingMembers(key gang.Key) []*corev1.Pod {
	whole, part := key.Whole()
	keep := inPart(part)
	pl.index.mu.RLock()
	defer pl.index.mu.RUnlock()
	e := pl.index.get(whole)
	if e == nil {
		return nil
	}
	pending := e.pending()
	out := make([]*corev1.Pod, 0, len(pending))
	for _, p := range pending {
		if keep == nil || keep(p) {
			out = append(out, p)
		}
	}
	return out
}
