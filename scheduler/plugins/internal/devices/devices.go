// Package devices indexes the DRA devices that ResourceSlices publish, by node, from
// the scheduler's informer: what VRAM reads device memory from and what
// TenantHardware matches HardwareTier device selectors against. The index is
// rebuilt from the lister on first use after a slice changes, never in an API call.
package devices

import (
	"strings"
	"sync"
	"sync/atomic"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
)

// Device is one device a ResourceSlice publishes for a node.
type Device struct {
	ID structured.DeviceID
	// Attributes and Capacity are keyed by fully qualified name: an attribute the
	// slice names without a domain is in its driver's ("gpu.nvidia.com/productName").
	Attributes map[string]resourceapi.DeviceAttribute
	Capacity   map[string]resource.Quantity
}

// CapacityNamed returns the device's capacity whose name is name, qualified
// ("gpu.nvidia.com/memory") or not ("memory", in any domain).
func (d *Device) CapacityNamed(name string) (resource.Quantity, bool) {
	if q, ok := d.Capacity[name]; ok {
		return q, true
	}
	if !strings.Contains(name, "/") {
		for k, q := range d.Capacity {
			if strings.HasSuffix(k, "/"+name) {
				return q, true
			}
		}
	}
	return resource.Quantity{}, false
}

// AttributeNamed returns the device's attribute named name, qualified or not.
func (d *Device) AttributeNamed(name string) (resourceapi.DeviceAttribute, bool) {
	if a, ok := d.Attributes[name]; ok {
		return a, true
	}
	if !strings.Contains(name, "/") {
		for k, a := range d.Attributes {
			if strings.HasSuffix(k, "/"+name) {
				return a, true
			}
		}
	}
	return resourceapi.DeviceAttribute{}, false
}

// Index is the devices of every node.
type Index struct {
	lister resourcelisters.ResourceSliceLister
	// version counts slice changes.
	version atomic.Int64
	mu      sync.Mutex
	snap    atomic.Pointer[snapshot]
	// onChange are called after a slice changes.
	onChange []func()
}

// New returns the index fed by the scheduler's ResourceSlice informer.
func New(h fwk.Handle) (*Index, error) {
	inf := h.SharedInformerFactory().Resource().V1().ResourceSlices()
	x := &Index{lister: inf.Lister()}
	changed := func(any) {
		x.version.Add(1)
		x.mu.Lock()
		hooks := x.onChange
		x.mu.Unlock()
		for _, f := range hooks {
			f()
		}
	}
	if _, err := inf.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, n any) { changed(n) },
		DeleteFunc: changed,
	}); err != nil {
		return nil, err
	}
	return x, nil
}

// OnChange registers f to run after a ResourceSlice is added, updated or deleted.
func (x *Index) OnChange(f func()) {
	x.mu.Lock()
	x.onChange = append(x.onChange, f)
	x.mu.Unlock()
}

// Empty reports whether no node publishes any device.
func (x *Index) Empty() bool { return len(x.snapshot()) == 0 }

// OnNode returns the devices published for node (slices with spec.nodeName).
func (x *Index) OnNode(node string) []Device { return x.snapshot()[node] }

// snapshot is the devices by node as of a version of the slices.
type snapshot struct {
	version int64
	byNode  map[string][]Device
}

func (x *Index) snapshot() map[string][]Device {
	v := x.version.Load()
	if sn := x.snap.Load(); sn != nil && sn.version == v {
		return sn.byNode
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if sn := x.snap.Load(); sn != nil && sn.version == v {
		return sn.byNode
	}
	m := map[string][]Device{}
	slices, err := x.lister.List(labels.Everything())
	if err == nil {
		for _, s := range slices {
			if s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
				continue
			}
			node := *s.Spec.NodeName
			for i := range s.Spec.Devices {
				m[node] = append(m[node], deviceOf(s, &s.Spec.Devices[i]))
			}
		}
	}
	x.snap.Store(&snapshot{version: v, byNode: m})
	return m
}

func deviceOf(s *resourceapi.ResourceSlice, d *resourceapi.Device) Device {
	qualify := func(name resourceapi.QualifiedName) string {
		if strings.Contains(string(name), "/") {
			return string(name)
		}
		return s.Spec.Driver + "/" + string(name)
	}
	out := Device{
		ID:         structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name),
		Attributes: make(map[string]resourceapi.DeviceAttribute, len(d.Attributes)),
		Capacity:   make(map[string]resource.Quantity, len(d.Capacity)),
	}
	for k, a := range d.Attributes {
		out.Attributes[qualify(k)] = a
	}
	for k, c := range d.Capacity {
		out.Capacity[qualify(k)] = c.Value
	}
	return out
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
