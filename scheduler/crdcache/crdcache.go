// Package crdcache is the scheduler's one informer cache of KubeNexus objects
// (PodGroups, HardwareTiers and ResourceReservations, and scheduler-plugins' and
// Volcano's PodGroups, NodeResourceTopologies and Kueue's Workloads when installed),
// shared by every plugin of every profile: plugins never keep a
// private informer and never call the API server in a scheduling cycle.
package crdcache

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Cache reads KubeNexus objects from memory.
type Cache struct {
	cache cache.Cache
	// foreign are the other schedulers' PodGroup APIs whose CRDs were served when the
	// cache started; their PodGroups are watched too.
	foreign []foreignPodGroups
	// composites: Kubernetes' CompositePodGroups were served (beside its PodGroups)
	// when the cache started, and are watched (composite.go); nil otherwise.
	composites *composites
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
// where the API server serves it), scheduler-plugins, Volcano and KAI, in the order a
// gang's PodGroup is looked up after KubeNexus's own.
var foreignAPIs = []foreignPodGroups{
	{gvk: v1alpha1.NativePodGroupGVK, read: v1alpha1.FromNativePodGroup},
	{gvk: v1alpha1.SigsPodGroupGVK, read: v1alpha1.FromSigsPodGroup},
	{gvk: v1alpha1.VolcanoPodGroupGVK, read: v1alpha1.FromVolcanoPodGroup},
	{gvk: v1alpha1.KAIPodGroupGVK, read: v1alpha1.FromKAIPodGroup},
}

// PodGroup returns the PodGroup named by key, or nil when it does not exist: a
// KubeNexus PodGroup, else (when served) Kubernetes', scheduler-plugins', Volcano's
// or KAI's PodGroup of that name, read into the KubeNexus type (the fields they
// share: minMember, minResources, and scheduleTimeoutSeconds or priorityClassName;
// a KAI PodGroup's sub-groups and topology, FromKAIPodGroup).
// The result's APIVersion says which it is.
func (c *Cache) PodGroup(key gang.Key) *v1alpha1.PodGroup {
	c.wait()
	if key.Composite {
		return c.composite(key)
	}
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

// ReadError is why the PodGroup (or CompositePodGroup) named by key, which exists in
// another API than KubeNexus's own, is no gang PodGroup returns: its spec says what
// KubeNexus cannot read as a gang (e.g. a basic CompositePodGroup, a KAI PodGroup
// whose sub-groups form a cycle). nil when there is none or it reads.
func (c *Cache) ReadError(key gang.Key) error {
	c.wait()
	if key.Composite {
		_, err := c.readComposite(key)
		return err
	}
	objKey := client.ObjectKey{Namespace: key.Namespace, Name: key.Name}
	for _, f := range c.foreign {
		u := f.newObject()
		if err := c.cache.Get(context.Background(), objKey, u); err != nil {
			continue
		}
		if _, err := f.read(u); err != nil {
			return err
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
// A CompositePodGroup's change is reported under its gang's key and each of its
// children's, a child PodGroup's under its own and its composite's.
func (c *Cache) OnPodGroupChange(f func(gang.Key)) error {
	notify := func(obj any) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		f(gang.Key{Namespace: m.GetNamespace(), Name: m.GetName()})
		if u, ok := obj.(*unstructured.Unstructured); ok && c.composites != nil && u.GroupVersionKind() == v1alpha1.NativePodGroupGVK {
			// A composite's child: the composite's gang gains a role.
			if parent := v1alpha1.ParentCompositeOf(u); parent != "" {
				f(gang.Key{Namespace: m.GetNamespace(), Name: parent, Composite: true})
			}
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
	return c.onCompositeChange(f)
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
