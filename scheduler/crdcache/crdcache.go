// Package crdcache is the scheduler's one informer cache of KubeNexus objects
// (PodGroups, HardwareTiers and ResourceReservations, and scheduler-plugins' and
// Volcano's PodGroups, NodeResourceTopologies and Kueue's Workloads when installed),
// shared by every plugin of every profile: plugins never keep a
// private informer and never call the API server in a scheduling cycle.
package crdcache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/kueuecompat"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// Cache reads KubeNexus objects from memory.
type Cache struct {
	cache cache.Cache
	// foreign are the other schedulers' PodGroup APIs whose CRDs were served when the
	// cache started; their PodGroups are watched too.
	foreign []foreignPodGroups
	// nrt: the NodeResourceTopology API (topology.node.k8s.io/v1alpha2) was served
	// when the cache started, and its objects are watched.
	nrt bool
	// kueue: Kueue's Workloads were served when the cache started, and are watched,
	// indexed by owner, in the version served then (kueueAPI); kueueReader reads them
	// as v1beta2 objects whichever it is.
	kueue       bool
	kueueAPI    schema.GroupVersion
	kueueReader client.Reader
	// synced is closed once every informer has listed: each read waits for it, so
	// that nothing is decided on a partial view (see Provider.Get).
	synced <-chan struct{}
	// controllerPods lists the pods that name a controller (see
	// SetControllerPods); nil: not counted.
	controllerPods atomic.Pointer[ControllerPods]
}

// ControllerPods lists the pods of a namespace whose controller ownerReference has
// uid.
type ControllerPods func(namespace string, uid types.UID) []*corev1.Pod

// SetControllerPods gives the cache the scheduler's pods by controller, with which
// ClusterQueueOf bounds how many pods one admitted Workload vouches for.
func (c *Cache) SetControllerPods(f ControllerPods) { c.controllerPods.Store(&f) }

// wait blocks until the cache has synced. A cache that cannot sync stops the process
// (Provider.Get), so this does not wait for ever.
func (c *Cache) wait() { <-c.synced }

// Synced reports, without waiting, whether the cache has synced. The scheduling
// queue runs PreEnqueue, SignPod and queueing hints under its lock, where a wait
// stalls every pod and node event behind it. Coscheduling uses this there;
// TenantHardware's and ResourceReservation's SignPod wait for their first snapshot
// (signing a pod without it would break batching's contract, and a pod is signed
// only once, when queued), which the list at resourceVersion 0 keeps short (see
// newListThenWatchInformer).
func (c *Cache) Synced() bool {
	select {
	case <-c.synced:
		return true
	default:
		return false
	}
}

// WhenSynced is closed once the cache has synced.
func (c *Cache) WhenSynced() <-chan struct{} { return c.synced }

// workloadOwnerIndex indexes Kueue Workloads by the UIDs of their owners (a Job, a
// JobSet, or the pods of a plain pod group).
const workloadOwnerIndex = "kubenexus.ownerUID"

// foreignPodGroups is another scheduler's PodGroup API that KubeNexus honours.
type foreignPodGroups struct {
	gvk schema.GroupVersionKind
	// read converts one of its PodGroups into the KubeNexus type.
	read func(*unstructured.Unstructured) (*v1alpha1.PodGroup, error)
}

func (f foreignPodGroups) newObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(f.gvk)
	return u
}

// foreignAPIs are the PodGroup APIs of Kubernetes itself (scheduling.k8s.io/v1beta1,
// where the API server serves it), scheduler-plugins and Volcano, in the order a
// gang's PodGroup is looked up after KubeNexus's own.
var foreignAPIs = []foreignPodGroups{
	{gvk: v1alpha1.NativePodGroupGVK, read: v1alpha1.FromNativePodGroup},
	{gvk: v1alpha1.SigsPodGroupGVK, read: v1alpha1.FromSigsPodGroup},
	{gvk: v1alpha1.VolcanoPodGroupGVK, read: v1alpha1.FromVolcanoPodGroup},
}

// PodGroup returns the PodGroup named by key, or nil when it does not exist: a
// KubeNexus PodGroup, else (when served) Kubernetes', scheduler-plugins' or
// Volcano's PodGroup of that name, read into the KubeNexus type (the fields they
// share: minMember, minResources, and scheduleTimeoutSeconds or priorityClassName).
// The result's APIVersion says which it is.
func (c *Cache) PodGroup(key gang.Key) *v1alpha1.PodGroup {
	c.wait()
	ctx, objKey := context.Background(), client.ObjectKey{Namespace: key.Namespace, Name: key.Name}
	pg := &v1alpha1.PodGroup{}
	if err := c.cache.Get(ctx, objKey, pg); err == nil {
		pg.APIVersion, pg.Kind = v1alpha1.GroupVersion.String(), "PodGroup"
		return pg
	}
	for _, f := range c.foreign {
		u := f.newObject()
		if err := c.cache.Get(ctx, objKey, u); err != nil {
			continue
		}
		if out, err := f.read(u); err == nil {
			return out
		}
	}
	return nil
}

// ForeignPodGroupKinds lists the other schedulers' PodGroup kinds being watched.
func (c *Cache) ForeignPodGroupKinds() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(c.foreign))
	for _, f := range c.foreign {
		out = append(out, f.gvk)
	}
	return out
}

// OnPodGroupChange calls f with the key of every PodGroup (of any watched API)
// added, or whose spec changed (its generation); status updates are not reported.
func (c *Cache) OnPodGroupChange(f func(gang.Key)) error {
	notify := func(obj any) {
		if m, err := meta.Accessor(obj); err == nil {
			f(gang.Key{Namespace: m.GetNamespace(), Name: m.GetName()})
		}
	}
	if err := c.onSpecChange(&v1alpha1.PodGroup{}, false, notify); err != nil {
		return err
	}
	for _, fa := range c.foreign {
		if err := c.onSpecChange(fa.newObject(), false, notify); err != nil {
			return err
		}
	}
	return nil
}

// onSpecChange calls f with every object of obj's kind that is added, whose spec
// changed (its generation) and, with deletes, that is deleted.
func (c *Cache) onSpecChange(obj client.Object, deletes bool, f func(obj any)) error {
	inf, err := c.cache.GetInformer(context.Background(), obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	h := toolscache.ResourceEventHandlerFuncs{
		AddFunc: f,
		UpdateFunc: func(oldObj, newObj any) {
			o, errOld := meta.Accessor(oldObj)
			n, errNew := meta.Accessor(newObj)
			if errOld == nil && errNew == nil && o.GetGeneration() == n.GetGeneration() {
				return
			}
			f(newObj)
		},
	}
	if deletes {
		h.DeleteFunc = f
	}
	_, err = inf.AddEventHandler(h)
	return err
}

// HardwareTiers returns every HardwareTier, sorted by name.
func (c *Cache) HardwareTiers() ([]v1alpha1.HardwareTier, error) {
	c.wait()
	var list v1alpha1.HardwareTierList
	if err := c.cache.List(context.Background(), &list); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b v1alpha1.HardwareTier) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// OnHardwareTierChange calls f whenever a HardwareTier is added, deleted, or its
// spec changes; status updates are not reported.
func (c *Cache) OnHardwareTierChange(f func()) error {
	return c.onSpecChange(&v1alpha1.HardwareTier{}, true, func(any) { f() })
}

// OnWorkloadAdmitted calls f when a Kueue Workload arrives or the ClusterQueue that
// admitted it changes (admission is status: no generation bump). Nothing is watched
// when Kueue's Workloads are not served.
func (c *Cache) OnWorkloadAdmitted(f func()) error {
	if !c.kueue {
		return nil
	}
	inf, err := c.cache.GetInformer(context.Background(), kueuecompat.Object(&kueue.Workload{}, c.kueueAPI), cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	admittedBy := func(obj any) kueue.ClusterQueueReference {
		wl := &kueue.Workload{}
		if o, ok := obj.(runtime.Object); ok && kueuecompat.ToCurrent(o, wl) == nil && wl.Status.Admission != nil {
			return wl.Status.Admission.ClusterQueue
		}
		return ""
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { f() },
		UpdateFunc: func(oldObj, newObj any) {
			if admittedBy(oldObj) != admittedBy(newObj) {
				f()
			}
		},
	})
	return err
}

// Reservations returns every ResourceReservation.
func (c *Cache) Reservations() ([]v1alpha1.ResourceReservation, error) {
	c.wait()
	var list v1alpha1.ResourceReservationList
	if err := c.cache.List(context.Background(), &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Reservation returns the ResourceReservation named by key, or nil.
func (c *Cache) Reservation(key client.ObjectKey) *v1alpha1.ResourceReservation {
	c.wait()
	rr := &v1alpha1.ResourceReservation{}
	if err := c.cache.Get(context.Background(), key, rr); err != nil {
		return nil
	}
	return rr
}

// OnReservationChange calls f whenever a ResourceReservation is added, changed
// (spec or status: the scheduler and the manager both write its status) or deleted.
func (c *Cache) OnReservationChange(f func()) error {
	inf, err := c.cache.GetInformer(context.Background(), &v1alpha1.ResourceReservation{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { f() },
		UpdateFunc: func(any, any) { f() },
		DeleteFunc: func(any) { f() },
	})
	return err
}

// OnNodeResourceTopologyChange calls f with every NodeResourceTopology added or
// updated, and with a nil object and its name when one is deleted. It does nothing
// when the API is not served.
func (c *Cache) OnNodeResourceTopologyChange(f func(name string, nrt *nrtv1alpha2.NodeResourceTopology)) error {
	if !c.nrt {
		return nil
	}
	inf, err := c.cache.GetInformer(context.Background(), &nrtv1alpha2.NodeResourceTopology{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	set := func(obj any) {
		if n, ok := obj.(*nrtv1alpha2.NodeResourceTopology); ok {
			f(n.Name, n)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, newObj any) { set(newObj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, err := meta.Accessor(obj); err == nil {
				f(m.GetName(), nil)
			}
		},
	})
	return err
}

// ClusterQueueOf returns the ClusterQueue through which Kueue admitted the pod's
// Workload — the Workload owned by the pod itself or by its controller — and
// whether there is one. Written by Kueue in the Workload's status, so the pod
// cannot claim it.
func (c *Cache) ClusterQueueOf(pod *corev1.Pod) (string, bool) {
	if !c.kueue {
		return "", false
	}
	c.wait()
	var list kueue.WorkloadList
	if err := c.kueueReader.List(context.Background(), &list, client.InNamespace(pod.Namespace), client.MatchingFields{workloadOwnerIndex: string(pod.UID)}); err == nil {
		for i := range list.Items {
			if a := list.Items[i].Status.Admission; a != nil {
				return string(a.ClusterQueue), true
			}
		}
	}
	// The pod's controller is an ownerReference its author writes: the Workload of
	// the object it names vouches for the pod only when it is that object's (same
	// kind and name, not only the UID), and only for as many pods as it was admitted
	// with — the oldest of those that claim it — so that pods made up to claim an
	// admitted job's queue neither take its tier nor run beyond its quota.
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return "", false
	}
	if err := c.kueueReader.List(context.Background(), &list, client.InNamespace(pod.Namespace), client.MatchingFields{workloadOwnerIndex: string(ref.UID)}); err != nil {
		return "", false
	}
	for i := range list.Items {
		wl := &list.Items[i]
		a := wl.Status.Admission
		if a == nil || !ownedBy(wl, ref) || !c.vouchedFor(pod, ref.UID, admittedPods(wl)) {
			continue
		}
		return string(a.ClusterQueue), true
	}
	return "", false
}

// ownedBy reports whether the Workload's owner with ref's UID is the object ref
// names (kind and name too).
func ownedBy(wl *kueue.Workload, ref *metav1.OwnerReference) bool {
	for _, o := range wl.OwnerReferences {
		if o.UID == ref.UID {
			return o.Kind == ref.Kind && o.Name == ref.Name && groupOf(o.APIVersion) == groupOf(ref.APIVersion)
		}
	}
	return false
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion
	}
	return gv.Group
}

// admittedPods is how many pods the Workload was admitted with: its pod sets'
// admitted counts (their spec counts where the admission gives none).
func admittedPods(wl *kueue.Workload) int {
	n := 0
	for i, ps := range wl.Spec.PodSets {
		count := int(ps.Count)
		if a := wl.Status.Admission; a != nil && i < len(a.PodSetAssignments) && a.PodSetAssignments[i].Count != nil {
			count = int(*a.PodSetAssignments[i].Count)
		}
		n += count
	}
	return n
}

// vouchedFor reports whether pod is among the first admitted (by creation, then
// name) of the unfinished pods that claim the controller uid. Without a pod lister
// (SetControllerPods) every claimant is.
func (c *Cache) vouchedFor(pod *corev1.Pod, uid types.UID, admitted int) bool {
	list := c.controllerPods.Load()
	if list == nil {
		return true
	}
	claimants := (*list)(pod.Namespace, uid)
	if !slices.ContainsFunc(claimants, func(p *corev1.Pod) bool { return p.UID == pod.UID }) {
		claimants = append(claimants, pod)
	}
	older := func(a, b *corev1.Pod) bool {
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	}
	ahead := 0
	for _, p := range claimants {
		if p.UID != pod.UID && !workload.Finished(p) && older(p, pod) {
			ahead++
		}
	}
	return ahead < admitted
}

// ClusterQueueLabels returns the labels of a Kueue ClusterQueue, and whether it
// exists (and Kueue is installed).
func (c *Cache) ClusterQueueLabels(name string) (map[string]string, bool) {
	if !c.kueue {
		return nil, false
	}
	c.wait()
	cq := &kueue.ClusterQueue{}
	if err := c.kueueReader.Get(context.Background(), client.ObjectKey{Name: name}, cq); err != nil {
		return nil, false
	}
	return cq.Labels, true
}

// Provider creates the Cache on first use and hands the same one to every caller.
type Provider struct {
	// runCtx bounds the life of the cache (the scheduler process's).
	runCtx context.Context
	once   sync.Once
	cache  *Cache
	err    error
}

// NewProvider returns a Provider whose cache runs until runCtx is done.
func NewProvider(runCtx context.Context) *Provider { return &Provider{runCtx: runCtx} }

// syncTimeout bounds how long the first list may take before the scheduler stops.
const syncTimeout = time.Minute

// Get returns the shared Cache, creating and starting it with cfg on first call.
func (p *Provider) Get(ctx context.Context, cfg *rest.Config) (*Cache, error) {
	p.once.Do(func() {
		scheme := runtime.NewScheme()
		utilruntime.Must(v1alpha1.AddToScheme(scheme))
		utilruntime.Must(nrtv1alpha2.AddToScheme(scheme))
		utilruntime.Must(kueuecompat.AddToScheme(scheme))
		c, err := cache.New(cfg, cache.Options{Scheme: scheme, NewInformer: newListThenWatchInformer})
		if err != nil {
			p.err = fmt.Errorf("creating the KubeNexus object cache: %w", err)
			return
		}
		if _, err := c.GetInformer(ctx, &v1alpha1.PodGroup{}); err != nil {
			p.err = fmt.Errorf("watching PodGroups: %w", err)
			return
		}
		if _, err := c.GetInformer(ctx, &v1alpha1.HardwareTier{}); err != nil {
			p.err = fmt.Errorf("watching HardwareTiers: %w", err)
			return
		}
		if _, err := c.GetInformer(ctx, &v1alpha1.ResourceReservation{}); err != nil {
			p.err = fmt.Errorf("watching ResourceReservations: %w", err)
			return
		}
		// Kubernetes' and other schedulers' PodGroups, when served at start-up (a CRD
		// installed or an API turned on later is picked up when the scheduler restarts).
		var foreign []foreignPodGroups
		for _, f := range foreignAPIs {
			ok, err := served(cfg, f.gvk.GroupVersion(), "podgroups")
			if err != nil {
				p.err = fmt.Errorf("discovering %s: %w", f.gvk.GroupVersion(), err)
				return
			}
			if !ok {
				continue
			}
			if _, err := c.GetInformer(ctx, f.newObject()); err != nil {
				p.err = fmt.Errorf("watching %s PodGroups: %w", f.gvk.Group, err)
				return
			}
			foreign = append(foreign, f)
		}
		// NUMA facts, where an exporter (NFD's topology updater, RTE) publishes them.
		nrt, err := served(cfg, nrtv1alpha2.SchemeGroupVersion, "noderesourcetopologies")
		if err != nil {
			p.err = fmt.Errorf("discovering %s: %w", nrtv1alpha2.SchemeGroupVersion, err)
			return
		}
		if nrt {
			if _, err := c.GetInformer(ctx, &nrtv1alpha2.NodeResourceTopology{}); err != nil {
				p.err = fmt.Errorf("watching NodeResourceTopologies: %w", err)
				return
			}
		}
		// Kueue's Workloads: which ClusterQueue admitted a pod (HardwareTiers may be
		// limited to some).
		// Kueue 0.15 and later serve v1beta2, earlier ones only v1beta1.
		var kueueServed bool
		var kueueAPI schema.GroupVersion
		for _, gv := range []schema.GroupVersion{kueuecompat.Current, kueuecompat.Legacy} {
			ok, err := served(cfg, gv, "workloads")
			if err != nil {
				p.err = fmt.Errorf("discovering %s: %w", gv, err)
				return
			}
			if ok {
				kueueServed, kueueAPI = true, gv
				break
			}
		}
		if kueueServed {
			if err := c.IndexField(ctx, kueuecompat.Object(&kueue.Workload{}, kueueAPI), workloadOwnerIndex, func(o client.Object) []string {
				var uids []string
				for _, ref := range o.GetOwnerReferences() {
					uids = append(uids, string(ref.UID))
				}
				return uids
			}); err != nil {
				p.err = fmt.Errorf("indexing Kueue Workloads: %w", err)
				return
			}
			if _, err := c.GetInformer(ctx, kueuecompat.Object(&kueue.Workload{}, kueueAPI)); err != nil {
				p.err = fmt.Errorf("watching Kueue Workloads: %w", err)
				return
			}
			if _, err := c.GetInformer(ctx, kueuecompat.Object(&kueue.ClusterQueue{}, kueueAPI)); err != nil {
				p.err = fmt.Errorf("watching Kueue ClusterQueues: %w", err)
				return
			}
		}
		go func() {
			if err := c.Start(p.runCtx); err != nil {
				klog.FromContext(ctx).Error(err, "KubeNexus object cache stopped")
			}
		}()
		// The plugins get the cache now and their reads wait for it to sync, so that
		// it lists while kube-scheduler's own informers do, not before they start
		// (waiting here added the cache's first lists to the scheduler's time to
		// ready).
		synced := make(chan struct{})
		p.cache = &Cache{cache: c, foreign: foreign, nrt: nrt, kueue: kueueServed, kueueAPI: kueueAPI,
			kueueReader: kueuecompat.Reader(c, kueueAPI), synced: synced}
		go func() {
			syncCtx, cancel := context.WithTimeout(p.runCtx, syncTimeout)
			defer cancel()
			if c.WaitForCacheSync(syncCtx) {
				close(synced)
				return
			}
			if p.runCtx.Err() != nil {
				close(synced) // shutting down: nothing waits for a list that will not come
				return
			}
			// Without these objects gangs, tiers and reservations would be decided
			// wrongly: stop, and say why.
			klog.FromContext(ctx).Error(nil, "KubeNexus object cache did not sync (are the CRDs installed and readable?)", "timeout", syncTimeout)
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		}()
	})
	return p.cache, p.err
}

// newListThenWatchInformer is the cache's informer constructor: its reflectors list
// from the API server's watch cache (resourceVersion 0) and then watch, instead of
// streaming the initial objects over a watch (client-go's WatchListClient, on by
// default). On 1.37 a watch-list of an idle custom resource — HardwareTiers and
// ResourceReservations are rarely written — ends its initial events only after
// about a second, waiting for the watch cache to prove itself current, and
// TenantHardware signs the first pods queued at start-up only once its first tier
// snapshot is in; a list at resourceVersion 0 is answered from the watch cache at
// once. What the watch-list saves is the memory of one large list response; these
// kinds are small next to pods (Kueue's Workloads, one per job, are the largest).
func newListThenWatchInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if l, ok := lw.(*toolscache.ListWatch); ok {
		lw = listThenWatch{l}
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// listThenWatch tells the reflector not to use a watch-list.
type listThenWatch struct{ *toolscache.ListWatch }

// IsWatchListSemanticsUnSupported is read by client-go's reflector.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// served reports whether the API server serves resource in gv.
func served(cfg *rest.Config, gv schema.GroupVersion, resource string) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	list, err := dc.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}
