// Package devices indexes the DRA devices that ResourceSlices publish, by node, from
// the scheduler's informer: what VRAM reads device memory from and what
// TenantHardware matches HardwareTier device selectors against. The index is
// rebuilt from the lister on first use after a slice changes, never in an API call.
package devices

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// Device is one device a ResourceSlice publishes for a node.
type Device = hardware.Device

// IDOf is the device's identity as the DRA allocator names it.
func IDOf(d *Device) structured.DeviceID { return structured.MakeDeviceID(d.Driver, d.Pool, d.Name) }

// Index is the devices of every node.
type Index struct {
	lister resourcelisters.ResourceSliceLister
	// classes lists DeviceClasses: those naming an extended resource make their
	// devices count as that resource (Extended).
	classes resourcelisters.DeviceClassLister
	// rules lists DeviceTaintRules (nil while the DRADeviceTaintRules gate is off)
	// and claims the ResourceClaims with the allocations in flight: the devices
	// they make unavailable back no extended resource (Extended).
	rules  resourcelisters.DeviceTaintRuleLister
	claims fwk.ResourceClaimTracker
	// version counts slice and class changes, availability those of taint rules
	// and of own claims' allocations.
	version      atomic.Int64
	availability atomic.Int64
	mu           sync.Mutex
	snap         atomic.Pointer[snapshot]
	ext          atomic.Pointer[extended]
	// onChange are called after a slice changes.
	onChange []func()
}

// New returns the index fed by the scheduler's ResourceSlice informer.
func New(h fwk.Handle) (*Index, error) {
	inf := h.SharedInformerFactory().Resource().V1().ResourceSlices()
	classes := h.SharedInformerFactory().Resource().V1().DeviceClasses()
	x := &Index{lister: inf.Lister(), classes: classes.Lister()}
	changed := func(any) {
		x.version.Add(1)
		x.mu.Lock()
		hooks := x.onChange
		x.mu.Unlock()
		for _, f := range hooks {
			f()
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, n any) { changed(n) },
		DeleteFunc: changed,
	}
	for _, inf := range []toolscache.SharedIndexInformer{inf.Informer(), classes.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	unavailable := func(any) { x.availability.Add(1) }
	// kube-scheduler watches DeviceTaintRules only with the gate on (it is off
	// against API servers that do not serve them, schedconfig.FeatureGatesForAPIServer).
	if utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules) {
		rules := h.SharedInformerFactory().Resource().V1().DeviceTaintRules()
		x.rules = rules.Lister()
		if _, err := rules.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: unavailable, UpdateFunc: func(_, n any) { unavailable(n) }, DeleteFunc: unavailable,
		}); err != nil {
			return nil, err
		}
	}
	if dra := h.SharedDRAManager(); dra != nil {
		x.claims = dra.ResourceClaims()
		// Only an own claim's allocation changes what is available.
		own := func(obj any) bool {
			c, ok := obj.(*resourceapi.ResourceClaim)
			if !ok {
				return true // a tombstone: look again
			}
			return c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" && c.Status.Allocation != nil
		}
		if _, err := h.SharedInformerFactory().Resource().V1().ResourceClaims().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if own(obj) {
					unavailable(obj)
				}
			},
			UpdateFunc: func(o, n any) {
				oc, ok1 := o.(*resourceapi.ResourceClaim)
				nc, ok2 := n.(*resourceapi.ResourceClaim)
				if (own(o) || own(n)) && (!ok1 || !ok2 || !equality.Semantic.DeepEqual(oc.Status.Allocation, nc.Status.Allocation)) {
					unavailable(n)
				}
			},
			DeleteFunc: func(obj any) {
				if own(obj) {
					unavailable(obj)
				}
			},
		}); err != nil {
			return nil, err
		}
	}
	// Free capacity read from the snapshot (nodefree) counts the extended resources
	// these devices back.
	nodefree.UseDRABacked(x.Extended)
	return x, nil
}

// OnChange registers f to run after a ResourceSlice is added, updated or deleted.
func (x *Index) OnChange(f func()) {
	x.mu.Lock()
	x.onChange = append(x.onChange, f)
	x.mu.Unlock()
}

// OnNode returns the devices published for node (slices with spec.nodeName).
func (x *Index) OnNode(node string) []Device { return x.snapshot().byNode[node] }

// Published is the devices of every node, the pools' shared counters and the
// DeviceClasses as of one version of the slices and classes; read-only.
type Published struct {
	// Version changes with every change of a slice or class.
	Version int64
	ByNode  map[string][]Device
	// NonLocal are the devices of slices that name no node (allNodes, a node
	// selector, per-device node selection): devices several nodes may reach, which
	// ByNode leaves out.
	NonLocal []Device
	Counters hardware.Counters
	Classes  []*resourceapi.DeviceClass
}

// Published returns what the slices and classes publish now.
func (x *Index) Published() Published {
	sn := x.snapshot()
	return Published{Version: sn.version, ByNode: sn.byNode, NonLocal: sn.nonLocal, Counters: sn.counters, Classes: sn.classes}
}

// Counters returns the shared counters of every pool (partitionable devices).
func (x *Index) Counters() hardware.Counters { return x.snapshot().counters }

// Extended returns how many devices of node back each extended resource a
// DeviceClass names (hardware.ExtendedResources), leaving out those that
// DeviceTaintRules taint and pods' own ResourceClaims hold; nil when none does.
// Own claims are read as the scheduler's claim tracker holds them when a slice,
// class, rule or own claim last changed: an allocation made in a binding cycle
// counts once the claim's status reaches the informer.
func (x *Index) Extended(node string) map[corev1.ResourceName]int64 {
	sn := x.snapshot()
	if len(sn.classes) == 0 {
		return nil
	}
	a := x.availability.Load()
	e := x.ext.Load()
	if e == nil || e.version != sn.version || e.availability != a {
		e = x.extendedAt(sn, a)
	}
	// Per node, once per change: Score asks for every node of every pod, and an
	// allocation (one per scheduled DRA pod) changes the held devices.
	if n, ok := e.byNode.Load(node); ok {
		return n.(map[corev1.ResourceName]int64)
	}
	n := e.backing.Node(node, e.off)
	e.byNode.Store(node, n)
	return n
}

// extendedAt returns the view as of the slices' version and availability a: the
// devices' matching against classes (CEL) is redone only when slices or classes
// changed, the held devices when an own claim's allocation or a rule did.
func (x *Index) extendedAt(sn *snapshot, a int64) *extended {
	x.mu.Lock()
	defer x.mu.Unlock()
	prev := x.ext.Load()
	if prev != nil && prev.version == sn.version && prev.availability == a {
		return prev
	}
	e := &extended{version: sn.version, availability: a, off: x.unavailable()}
	if prev != nil && prev.version == sn.version {
		e.backing = prev.backing
	} else {
		e.backing = hardware.NewBacking(sn.slices, sn.classes)
	}
	x.ext.Store(e)
	return e
}

// snapshot is the devices by node as of a version of the slices and classes.
type snapshot struct {
	version  int64
	byNode   map[string][]Device
	nonLocal []Device
	counters hardware.Counters
	slices   []*resourceapi.ResourceSlice
	classes  []*resourceapi.DeviceClass
}

// extended is what backs each extended resource per node, as of a version of the
// slices and classes and one of the taint rules and own claims.
type extended struct {
	version, availability int64
	backing               *hardware.Backing
	off                   *hardware.Unavailable
	// byNode caches backing.Node per node: map[corev1.ResourceName]int64 values.
	byNode sync.Map
}

func (x *Index) snapshot() *snapshot {
	v := x.version.Load()
	if sn := x.snap.Load(); sn != nil && sn.version == v {
		return sn
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if sn := x.snap.Load(); sn != nil && sn.version == v {
		return sn
	}
	m := map[string][]Device{}
	var nonLocal []Device
	counters := hardware.Counters{}
	slices, err := x.lister.List(labels.Everything())
	if err == nil {
		slices = hardware.CurrentSlices(slices)
		for _, s := range slices {
			hardware.CountersOf(s, counters)
			if node := hardware.NodeOf(s); node != "" {
				m[node] = append(m[node], hardware.DevicesOf(s)...)
			} else {
				nonLocal = append(nonLocal, hardware.DevicesOf(s)...)
			}
		}
	}
	var classes []*resourceapi.DeviceClass
	if x.classes != nil {
		classes, _ = x.classes.List(labels.Everything())
	}
	sn := &snapshot{version: v, byNode: m, nonLocal: nonLocal, counters: counters, slices: slices, classes: classes}
	x.snap.Store(sn)
	return sn
}

// unavailable are the devices no extended-resource request can get.
func (x *Index) unavailable() *hardware.Unavailable {
	off := &hardware.Unavailable{}
	if x.rules != nil {
		off.Rules, _ = x.rules.List(labels.Everything())
	}
	if x.claims != nil {
		if claims, err := x.claims.List(); err == nil {
			off.Held = hardware.HeldByOwnClaims(claims)
		}
	}
	return off
}

// Provider creates the Index on first use and hands the same one to every plugin of
// every profile (they share the scheduler's informer factory).
type Provider struct {
	once  sync.Once
	index *Index
	err   error
}

// Get returns the shared Index.
func (p *Provider) Get(h fwk.Handle) (*Index, error) {
	p.once.Do(func() { p.index, p.err = New(h) })
	return p.index, p.err
}
