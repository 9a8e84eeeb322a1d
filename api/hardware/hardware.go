// Package hardware decides which nodes a HardwareTier selects: by node labels, by
// the DRA devices the node's ResourceSlices publish, or both. The scheduler's
// TenantHardware, the manager's HardwareTier status and the admission webhook all
// match nodes with it.
package hardware

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Device is one device a ResourceSlice publishes for a node.
type Device struct {
	Driver, Pool, Name string
	// Attributes and Capacity are keyed by fully qualified name: a name the slice
	// gives without a domain is in its driver's ("gpu.nvidia.com/productName").
	Attributes map[string]resourceapi.DeviceAttribute
	Capacity   map[string]resource.Quantity
	// Consumes are the shared counters allocating the device takes (a partition of
	// a partitionable device; see Simultaneous).
	Consumes []CounterUse
	// Shared: allowMultipleAllocations (consumable capacity); Defaults are its
	// capacities' requestPolicy defaults by qualified name, in milli-units.
	Shared   bool
	Defaults map[string]int64
	// Policies are its capacities' requestPolicies by qualified name (nil: none).
	Policies map[string]*resourceapi.CapacityRequestPolicy
	// Spec is the device as the slice publishes it (CEL selectors read it).
	Spec *resourceapi.Device
}

// Qualify is an attribute's or capacity's name in its driver's domain when it
// names none ("memory" of gpu.nvidia.com is "gpu.nvidia.com/memory"), as the DRA
// API reads it.
func Qualify(driver string, name resourceapi.QualifiedName) string {
	if strings.Contains(string(name), "/") {
		return string(name)
	}
	return driver + "/" + string(name)
}

// DevicesOf returns the devices of a ResourceSlice.
func DevicesOf(s *resourceapi.ResourceSlice) []Device {
	qualify := func(name resourceapi.QualifiedName) string { return Qualify(s.Spec.Driver, name) }
	out := make([]Device, 0, len(s.Spec.Devices))
	for i := range s.Spec.Devices {
		d := &s.Spec.Devices[i]
		dev := Device{
			Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Name: d.Name,
			Attributes: make(map[string]resourceapi.DeviceAttribute, len(d.Attributes)),
			Capacity:   make(map[string]resource.Quantity, len(d.Capacity)),
			Spec:       d,
		}
		for k, a := range d.Attributes {
			dev.Attributes[qualify(k)] = a
		}
		for k, c := range d.Capacity {
			dev.Capacity[qualify(k)] = c.Value
			if c.RequestPolicy != nil {
				if dev.Policies == nil {
					dev.Policies = map[string]*resourceapi.CapacityRequestPolicy{}
				}
				dev.Policies[qualify(k)] = c.RequestPolicy
			}
			if c.RequestPolicy != nil && c.RequestPolicy.Default != nil {
				if dev.Defaults == nil {
					dev.Defaults = map[string]int64{}
				}
				dev.Defaults[qualify(k)] = c.RequestPolicy.Default.MilliValue()
			}
		}
		dev.Shared = d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
		for _, u := range d.ConsumesCounters {
			use := CounterUse{Set: CounterSetKey(s.Spec.Driver, s.Spec.Pool.Name, u.CounterSet), Counters: make(map[string]int64, len(u.Counters))}
			for name, c := range u.Counters {
				use.Counters[name] = c.Value.MilliValue()
			}
			dev.Consumes = append(dev.Consumes, use)
		}
		out = append(out, dev)
	}
	return out
}

// NodeOf is the node a ResourceSlice publishes devices for; "" for slices of
// several nodes (a node selector, all nodes), which tiers do not read.
func NodeOf(s *resourceapi.ResourceSlice) string {
	if s.Spec.NodeName == nil {
		return ""
	}
	return *s.Spec.NodeName
}

// UsesDevices reports whether some tier selects nodes by their DRA devices.
func UsesDevices(tiers []v1alpha1.HardwareTier) bool {
	for i := range tiers {
		if len(tiers[i].Spec.DeviceSelectors) > 0 {
			return true
		}
	}
	return false
}

// ListDevices reads every ResourceSlice through c and returns the devices each
// node publishes. A cluster that does not serve resource.k8s.io/v1 has none.
func ListDevices(ctx context.Context, c client.Reader) (func(node string) []Device, error) {
	var list resourceapi.ResourceSliceList
	if err := c.List(ctx, &list); err != nil {
		if meta.IsNoMatchError(err) {
			return func(string) []Device { return nil }, nil
		}
		return nil, err
	}
	byNode := map[string][]Device{}
	for _, s := range CurrentSlices(pointers(list.Items)) {
		if node := NodeOf(s); node != "" {
			byNode[node] = append(byNode[node], DevicesOf(s)...)
		}
	}
	return func(node string) []Device { return byNode[node] }, nil
}

// DeviceMemoryCapacity is the capacity of a DRA device that holds its memory, in
// any driver's domain ("gpu.nvidia.com/memory"), unless configured otherwise.
const DeviceMemoryCapacity = "memory"

// CapacityNamed returns the device's capacity called name, qualified
// ("gpu.nvidia.com/memory") or not ("memory", in any domain).
func (d *Device) CapacityNamed(name string) (resource.Quantity, bool) {
	k, ok := d.CapacityKey(name)
	return d.Capacity[k], ok
}

// CapacityKey returns the qualified name of the device's capacity called name.
func (d *Device) CapacityKey(name string) (string, bool) {
	if _, ok := d.Capacity[name]; ok {
		return name, true
	}
	if !strings.Contains(name, "/") {
		for k := range d.Capacity {
			if strings.HasSuffix(k, "/"+name) {
				return k, true
			}
		}
	}
	return "", false
}

// AttributeNamed returns the device's attribute called name, qualified or not.
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

// attributeString is an attribute's value as selectors compare it.
func attributeString(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return *a.StringValue
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue)
	case a.VersionValue != nil:
		return *a.VersionValue
	}
	return ""
}

// Selector is a HardwareTier's choice of nodes.
type Selector struct {
	labels  labels.Selector
	devices []v1alpha1.DeviceSelector
}

// NewSelector reads a tier's spec. A tier selects by nodeSelector, deviceSelectors
// or both (a node must then match both); an empty nodeSelector with no device
// selector would select every node and is an error.
func NewSelector(spec *v1alpha1.HardwareTierSpec) (*Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(&spec.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.nodeSelector: %w", err)
	}
	if sel.Empty() && len(spec.DeviceSelectors) == 0 {
		return nil, fmt.Errorf("spec.nodeSelector is empty and spec.deviceSelectors is unset: the tier would select every node")
	}
	return &Selector{labels: sel, devices: spec.DeviceSelectors}, nil
}

// UsesDevices reports whether the selector reads devices.
func (s *Selector) UsesDevices() bool { return len(s.devices) > 0 }

// Matches reports whether a node with these labels and devices is selected: its
// labels match nodeSelector and, with deviceSelectors, one of its devices matches
// one of them.
func (s *Selector) Matches(nodeLabels map[string]string, devs []Device) bool {
	if !s.labels.Matches(labels.Set(nodeLabels)) {
		return false
	}
	if len(s.devices) == 0 {
		return true
	}
	for i := range devs {
		for j := range s.devices {
			if deviceMatches(&s.devices[j], &devs[i]) {
				return true
			}
		}
	}
	return false
}

// String describes the selector for messages.
func (s *Selector) String() string {
	var parts []string
	if !s.labels.Empty() {
		parts = append(parts, "nodes "+s.labels.String())
	}
	for _, d := range s.devices {
		parts = append(parts, "devices "+describe(&d))
	}
	return strings.Join(parts, " with ")
}

func deviceMatches(sel *v1alpha1.DeviceSelector, d *Device) bool {
	if sel.Driver != "" && sel.Driver != d.Driver {
		return false
	}
	for _, r := range sel.Attributes {
		a, ok := d.AttributeNamed(r.Name)
		if !ok {
			return false
		}
		v, found := attributeString(a), false
		for _, want := range r.Values {
			if v == want {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, r := range sel.Capacity {
		q, ok := d.CapacityNamed(r.Name)
		if !ok || q.Cmp(r.Min) < 0 {
			return false
		}
	}
	return true
}

func describe(d *v1alpha1.DeviceSelector) string {
	var parts []string
	if d.Driver != "" {
		parts = append(parts, "driver="+d.Driver)
	}
	for _, a := range d.Attributes {
		parts = append(parts, a.Name+" in ("+strings.Join(a.Values, ",")+")")
	}
	for _, c := range d.Capacity {
		parts = append(parts, c.Name+">="+c.Min.String())
	}
	return strings.Join(parts, ",")
}

// Access is what a HardwareTier lets a pod do on its nodes.
type Access int

const (
	// Allowed: the pod's tenant tier is in allowedTenantTiers.
	Allowed Access = iota
	// Borrowed: not allowed, but the tier lends to preemptible pods.
	Borrowed
	// Denied: neither.
	Denied
)

// AccessFor is what a tier with these allowed tenant tiers and borrowing policy
// lets a pod of tenant tier tenant do.
func AccessFor(allowed []v1alpha1.TenantTier, borrowing v1alpha1.BorrowingPolicy, tenant v1alpha1.TenantTier, preemptible bool) Access {
	switch {
	case slices.Contains(allowed, tenant):
		return Allowed
	case borrowing == v1alpha1.BorrowingPreemptible && preemptible:
		return Borrowed
	default:
		return Denied
	}
}

// AdmitsClusterQueue reports whether a tier whose allowedClusterQueues are allowed
// admits a workload that Kueue admitted through clusterQueue ("": not through
// Kueue): any workload when the tier names no ClusterQueue.
func AdmitsClusterQueue(allowed []string, clusterQueue string) bool {
	return len(allowed) == 0 || slices.Contains(allowed, clusterQueue)
}

// GPUMemoryOf reads a node's memory per GPU, in bytes, from GPU Feature Discovery's
// label (MiB), else the fallback label (a quantity). label is "" when the node has
// neither; a malformed value is an error naming the label.
func GPUMemoryOf(node *corev1.Node) (bytes int64, label string, err error) {
	if raw, ok := node.Labels[v1alpha1.LabelGPUMemory]; ok {
		mib, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || mib <= 0 || mib > math.MaxInt64>>20 {
			return 0, "", fmt.Errorf("node label %s=%q must be the MiB of memory per GPU", v1alpha1.LabelGPUMemory, raw)
		}
		return mib << 20, v1alpha1.LabelGPUMemory, nil
	}
	if raw, ok := node.Labels[v1alpha1.LabelGPUVRAMFallback]; ok {
		q, err := resource.ParseQuantity(raw)
		if err != nil || q.Sign() <= 0 {
			return 0, "", fmt.Errorf("node label %s=%q must be a quantity of memory per GPU (for example 80Gi)", v1alpha1.LabelGPUVRAMFallback, raw)
		}
		return q.Value(), v1alpha1.LabelGPUVRAMFallback, nil
	}
	return 0, "", nil
}
