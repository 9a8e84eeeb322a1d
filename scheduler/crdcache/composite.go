package crdcache

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// compositeChildIndex indexes Kubernetes' PodGroups and CompositePodGroups by the
// CompositePodGroup their spec.parentCompositePodGroupName names.
const compositeChildIndex = "kubenexus.parentComposite"

// composites are the informers' stores of Kubernetes' PodGroups and
// CompositePodGroups, read without copying: CompositeOf runs for each pod of a
// PodGroup in the queue's comparator and hints, where the cache's copying Get of
// two objects per call would cost more than the rest of the comparison.
type composites struct {
	podGroups, composites toolscache.Indexer
}

// watchComposites watches Kubernetes' CompositePodGroups (scheduling.k8s.io/v1alpha3)
// when the API server serves them beside its PodGroups, and indexes the PodGroups
// by their parent. It returns nil when they are not watched.
func watchComposites(ctx context.Context, c cache.Cache, cfg *rest.Config, foreign []foreignPodGroups) (*composites, error) {
	native := false
	for _, f := range foreign {
		native = native || f.gvk == v1alpha1.NativePodGroupGVK
	}
	if !native {
		return nil, nil
	}
	ok, err := served(cfg, v1alpha1.CompositePodGroupGVK.GroupVersion(), "compositepodgroups")
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", v1alpha1.CompositePodGroupGVK.GroupVersion(), err)
	}
	if !ok {
		return nil, nil
	}
	byParent := func(o client.Object) []string {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		if parent := v1alpha1.ParentCompositeOf(u); parent != "" {
			return []string{parent}
		}
		return nil
	}
	for _, obj := range []client.Object{v1alpha1.NewNativePodGroup(), v1alpha1.NewCompositePodGroup()} {
		if err := c.IndexField(ctx, obj, compositeChildIndex, byParent); err != nil {
			return nil, fmt.Errorf("indexing %ss by their CompositePodGroup: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
		}
	}
	out := &composites{}
	for _, w := range []struct {
		obj   client.Object
		store *toolscache.Indexer
	}{{v1alpha1.NewNativePodGroup(), &out.podGroups}, {v1alpha1.NewCompositePodGroup(), &out.composites}} {
		inf, err := c.GetInformer(ctx, w.obj)
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", w.obj.GetObjectKind().GroupVersionKind().Kind, err)
		}
		withStore, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
		if !ok {
			return nil, fmt.Errorf("watching %s: the informer %T keeps no store", w.obj.GetObjectKind().GroupVersionKind().Kind, inf)
		}
		*w.store = withStore.GetIndexer()
	}
	return out, nil
}

// get returns the object of store at namespace/name, not a copy (not to be
// changed), or nil.
func get(store toolscache.Indexer, namespace, name string) *unstructured.Unstructured {
	obj, found, err := store.GetByKey(namespace + "/" + name)
	if err != nil || !found {
		return nil
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

// CompositeOf returns the key of the gang a Kubernetes PodGroup belongs to when
// that is a CompositePodGroup: the highest composite of gang policy on its chain
// of parents, or one of them not seen yet (the gang waits for it;
// v1alpha1.CompositeRoot). ok is false for a PodGroup of no composite or of a basic
// one.
//
// It does not wait for the cache to sync (it is asked where the scheduling queue's
// lock is held): before then, no PodGroup is in a composite, and the sync's events
// (OnPodGroupChange) re-file the members.
func (c *Cache) CompositeOf(namespace, podGroup string) (gang.Key, bool) {
	if c == nil || c.composites == nil || !c.Synced() {
		return gang.Key{}, false
	}
	pg := get(c.composites.podGroups, namespace, podGroup)
	if pg == nil {
		return gang.Key{}, false
	}
	name, ok := v1alpha1.CompositeRoot(pg, func(name string) *unstructured.Unstructured { return get(c.composites.composites, namespace, name) })
	if !ok {
		return gang.Key{}, false
	}
	return gang.Key{Namespace: namespace, Name: name, Composite: true}, true
}

// composite reads the gang of a root CompositePodGroup with everything under it
// (v1alpha1.ReadCompositeTree), or nil when it does not exist or cannot be read.
func (c *Cache) composite(key gang.Key) *v1alpha1.PodGroup {
	out, _ := c.readComposite(key)
	return out
}

// readComposite is composite with the reason one that exists cannot be read (nil,
// nil: there is none).
func (c *Cache) readComposite(key gang.Key) (*v1alpha1.PodGroup, error) {
	if c.composites == nil {
		return nil, nil
	}
	ctx := context.Background()
	cpg := v1alpha1.NewCompositePodGroup()
	if err := c.cache.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, cpg); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	var listErr error
	pg, err := v1alpha1.ReadCompositeTree(cpg, func(composite string) (kids, groups []*unstructured.Unstructured) {
		kids, groups, err := c.childrenOf(key.Namespace, composite)
		if err != nil {
			listErr = err
		}
		return kids, groups
	})
	if listErr != nil {
		return nil, listErr
	}
	return pg, err
}

// childrenOf lists the CompositePodGroups and PodGroups of namespace whose parent is
// composite, from the informers' indexes.
func (c *Cache) childrenOf(namespace, composite string) (kids, groups []*unstructured.Unstructured, err error) {
	ctx := context.Background()
	cl := v1alpha1.NewCompositePodGroupList()
	if err := c.cache.List(ctx, cl, client.InNamespace(namespace), client.MatchingFields{compositeChildIndex: composite}); err != nil {
		return nil, nil, err
	}
	pl := v1alpha1.NewNativePodGroupList()
	if err := c.cache.List(ctx, pl, client.InNamespace(namespace), client.MatchingFields{compositeChildIndex: composite}); err != nil {
		return nil, nil, err
	}
	for i := range cl.Items {
		kids = append(kids, &cl.Items[i])
	}
	for i := range pl.Items {
		groups = append(groups, &pl.Items[i])
	}
	return kids, groups, nil
}

// onCompositeChange calls f with the keys a CompositePodGroup's change concerns:
// its own gang's, its ancestors' (a nested composite's change is the root's), and
// those of every PodGroup and composite under it (their pods join the root's gang
// once it is seen). A child PodGroup's change (onSpecChange of the PodGroups) also
// concerns its parent's gang.
func (c *Cache) onCompositeChange(f func(gang.Key)) error {
	if c.composites == nil {
		return nil
	}
	return c.onSpecChange(v1alpha1.NewCompositePodGroup(), false, func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		ns := u.GetNamespace()
		f(gang.Key{Namespace: ns, Name: u.GetName(), Composite: true})
		up := v1alpha1.ParentCompositeOf(u)
		for depth := 0; up != "" && depth < v1alpha1.MaxCompositeDepth; depth++ {
			f(gang.Key{Namespace: ns, Name: up, Composite: true})
			p := get(c.composites.composites, ns, up)
			if p == nil {
				break
			}
			up = v1alpha1.ParentCompositeOf(p)
		}
		c.walkDown(ns, u.GetName(), 1, f)
	})
}

// walkDown calls f with the keys of everything under composite: its PodGroups' and
// its nested composites', to MaxCompositeDepth.
func (c *Cache) walkDown(namespace, composite string, depth int, f func(gang.Key)) {
	kids, groups, err := c.childrenOf(namespace, composite)
	if err != nil {
		return
	}
	for _, g := range groups {
		f(gang.Key{Namespace: namespace, Name: g.GetName()})
	}
	if depth >= v1alpha1.MaxCompositeDepth {
		return
	}
	for _, k := range kids {
		f(gang.Key{Namespace: namespace, Name: k.GetName(), Composite: true})
		c.walkDown(namespace, k.GetName(), depth+1, f)
	}
}
