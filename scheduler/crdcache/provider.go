package crdcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/kueuecompat"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

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
	p.once.Do(func() { p.cache, p.err = p.start(ctx, cfg) })
	return p.cache, p.err
}

// start creates the cache, its informers for what the API server serves, and
// starts it; its reads wait for it to sync.
func (p *Provider) start(ctx context.Context, cfg *rest.Config) (*Cache, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(nrtv1alpha2.AddToScheme(scheme))
	utilruntime.Must(kueuecompat.AddToScheme(scheme))
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, NewInformer: newListThenWatchInformer})
	if err != nil {
		return nil, fmt.Errorf("creating the KubeNexus object cache: %w", err)
	}
	for _, w := range []struct {
		obj  client.Object
		what string
	}{{&v1alpha1.PodGroup{}, "PodGroups"}, {&v1alpha1.HardwareTier{}, "HardwareTiers"}, {&v1alpha1.ResourceReservation{}, "ResourceReservations"}} {
		if _, err := c.GetInformer(ctx, w.obj); err != nil {
			return nil, fmt.Errorf("watching %s: %w", w.what, err)
		}
	}
	foreign, err := watchForeign(ctx, c, cfg)
	if err != nil {
		return nil, err
	}
	composites, err := watchComposites(ctx, c, cfg, foreign)
	if err != nil {
		return nil, err
	}
	// NUMA facts, where an exporter (NFD's topology updater, RTE) publishes them.
	nrt, err := served(cfg, nrtv1alpha2.SchemeGroupVersion, "noderesourcetopologies")
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", nrtv1alpha2.SchemeGroupVersion, err)
	}
	if nrt {
		if _, err := c.GetInformer(ctx, &nrtv1alpha2.NodeResourceTopology{}); err != nil {
			return nil, fmt.Errorf("watching NodeResourceTopologies: %w", err)
		}
	}
	kueueServed, kueueAPI, err := watchKueue(ctx, c, cfg)
	if err != nil {
		return nil, err
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
	go p.waitForSync(ctx, c, synced)
	return &Cache{cache: c, foreign: foreign, composites: composites, nrt: nrt, kueue: kueueServed, kueueAPI: kueueAPI,
		kueueReader: kueuecompat.Reader(c, kueueAPI), synced: synced}, nil
}

// watchForeign watches Kubernetes' and other schedulers' PodGroups, when served at
// start-up (a CRD installed or an API turned on later is picked up when the
// scheduler restarts), and returns the APIs it watches.
func watchForeign(ctx context.Context, c cache.Cache, cfg *rest.Config) ([]foreignPodGroups, error) {
	var foreign []foreignPodGroups
	for _, f := range foreignAPIs {
		ok, err := served(cfg, f.gvk.GroupVersion(), "podgroups")
		if err != nil {
			return nil, fmt.Errorf("discovering %s: %w", f.gvk.GroupVersion(), err)
		}
		if !ok {
			continue
		}
		if _, err := c.GetInformer(ctx, f.newObject()); err != nil {
			return nil, fmt.Errorf("watching %s PodGroups: %w", f.gvk.Group, err)
		}
		foreign = append(foreign, f)
	}
	return foreign, nil
}

// watchKueue watches Kueue's Workloads (which ClusterQueue admitted a pod:
// HardwareTiers may be limited to some) and ClusterQueues, in the version served:
// Kueue 0.15 and later serve v1beta2, earlier ones only v1beta1.
func watchKueue(ctx context.Context, c cache.Cache, cfg *rest.Config) (bool, schema.GroupVersion, error) {
	var api schema.GroupVersion
	found := false
	for _, gv := range []schema.GroupVersion{kueuecompat.Current, kueuecompat.Legacy} {
		ok, err := served(cfg, gv, "workloads")
		if err != nil {
			return false, api, fmt.Errorf("discovering %s: %w", gv, err)
		}
		if ok {
			found, api = true, gv
			break
		}
	}
	if !found {
		return false, api, nil
	}
	if err := c.IndexField(ctx, kueuecompat.Object(&kueue.Workload{}, api), workloadOwnerIndex, func(o client.Object) []string {
		var uids []string
		for _, ref := range o.GetOwnerReferences() {
			uids = append(uids, string(ref.UID))
		}
		return uids
	}); err != nil {
		return false, api, fmt.Errorf("indexing Kueue Workloads: %w", err)
	}
	if _, err := c.GetInformer(ctx, kueuecompat.Object(&kueue.Workload{}, api)); err != nil {
		return false, api, fmt.Errorf("watching Kueue Workloads: %w", err)
	}
	if _, err := c.GetInformer(ctx, kueuecompat.Object(&kueue.ClusterQueue{}, api)); err != nil {
		return false, api, fmt.Errorf("watching Kueue ClusterQueues: %w", err)
	}
	return true, api, nil
}

// waitForSync closes synced once the cache has synced. Without these objects gangs,
// tiers and reservations would be decided wrongly: a cache that does not sync
// within syncTimeout stops the scheduler, saying why.
func (p *Provider) waitForSync(ctx context.Context, c cache.Cache, synced chan struct{}) {
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
	klog.FromContext(ctx).Error(nil, "KubeNexus object cache did not sync (are the CRDs installed and readable?)", "timeout", syncTimeout)
	klog.FlushAndExit(klog.ExitFlushTimeout, 1)
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
