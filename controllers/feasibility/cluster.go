package feasibility

import (
	"context"
	"time"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement/numa"
)

// Read lists what Decide needs: nodes, the pods on them, HardwareTiers and their DRA
// devices, the KubeNexusConfig's topology levels and GPU resource names, the nodes'
// NodeResourceTopologies (none where that API is not served or readable) and Kueue's
// ResourceFlavors (none where Kueue is not installed). Pods holds every pod listed, for callers that look
// at more than capacity. Only list access is needed.
func Read(ctx context.Context, r client.Reader) (*Cluster, []corev1.Pod, error) {
	c := &Cluster{Requested: map[string]corev1.ResourceList{}, FlavorLabels: map[string]map[string]string{}, FlavorTolerations: map[string][]corev1.Toleration{},
		Levels: topology.DefaultLevels, Bounded: map[string][]Bounded{}}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return nil, nil, err
	}
	c.Nodes = nodes.Items
	var pods corev1.PodList
	if err := r.List(ctx, &pods); err != nil {
		return nil, nil, err
	}
	for i := range pods.Items {
		c.addPod(&pods.Items[i])
	}
	var tiers v1alpha1.HardwareTierList
	if err := r.List(ctx, &tiers); err != nil {
		return nil, nil, err
	}
	c.Tiers = tiers.Items
	// The devices serve HardwareTiers' device selectors and the GPU memory of nodes
	// that publish it only in their ResourceSlices.
	devices, err := hardware.ListDevices(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	c.Devices = devices
	extended, err := hardware.ListExtended(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	c.Extended = extended
	var rrs v1alpha1.ResourceReservationList
	if err := r.List(ctx, &rrs); err != nil {
		return nil, nil, err
	}
	c.Held = heldBy(rrs.Items, time.Now())
	c.Accumulating = accumulating(rrs.Items, time.Now())
	var configs v1alpha1.KubeNexusConfigList
	if err := r.List(ctx, &configs); err != nil {
		return nil, nil, err
	}
	if len(configs.Items) > 0 && len(configs.Items[0].Spec.Topology.Levels) > 0 {
		c.Levels = topology.Levels(configs.Items[0].Spec.Topology.Levels)
	}
	rf := &v1alpha1.ResourceFragmentationPlugin{}
	if len(configs.Items) > 0 {
		rf = &configs.Items[0].Spec.Plugins.ResourceFragmentation
	}
	c.GPUResources = rf.GPUResources()
	cards, classes, err := hardware.ListGPUCards(ctx, r, rf.DeviceClasses(), c.GPUResources)
	if err != nil {
		return nil, nil, err
	}
	if cards != nil {
		c.Cards, c.CardsWithout, c.GPUClasses = cards.Of, cards.Without, classes
	}
	var nrts nrtv1alpha2.NodeResourceTopologyList
	if err := r.List(ctx, &nrts); err != nil && !NotServed(err) && !apierrors.IsForbidden(err) {
		return nil, nil, err
	}
	for i := range nrts.Items {
		// A report that cannot be read is left out: the node's labels, if any, say
		// the rest, and the scheduler reports the error on the pods it refuses.
		if t, err := numa.FromNRT(&nrts.Items[i]); err == nil {
			if c.NUMA == nil {
				c.NUMA = map[string]*numa.Topology{}
			}
			c.NUMA[nrts.Items[i].Name] = t
		}
	}
	c.configure(configs.Items)
	var flavors kueue.ResourceFlavorList
	if err := r.List(ctx, &flavors); err != nil && !NotServed(err) {
		return nil, nil, err
	}
	for _, f := range flavors.Items {
		c.FlavorLabels[f.Name] = f.Spec.NodeLabels
		c.FlavorTolerations[f.Name] = f.Spec.Tolerations
	}
	return c, pods.Items, nil
}

// addPod counts what a pod that occupies its node requests there, and its runtime
// bound if it has one.
func (c *Cluster) addPod(p *corev1.Pod) {
	if !workload.OccupiesNode(p) {
		return
	}
	used := c.Requested[p.Spec.NodeName]
	if used == nil {
		used = corev1.ResourceList{}
		c.Requested[p.Spec.NodeName] = used
	}
	requests := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	for name, q := range requests {
		sum := used[name]
		sum.Add(q)
		used[name] = sum
	}
	n := used[corev1.ResourcePods]
	n.Add(*resource.NewQuantity(1, resource.DecimalSI))
	used[corev1.ResourcePods] = n
	if bound, ok := workload.RuntimeBound(p); ok {
		c.Bounded[p.Spec.NodeName] = append(c.Bounded[p.Spec.NodeName], Bounded{Pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, Ends: workload.Ends(p, bound), Requests: requests})
	}
}

// configure takes the Kueue, queue and preemption settings of the KubeNexusConfig (the
// first listed; the defaults without one).
func (c *Cluster) configure(configs []v1alpha1.KubeNexusConfig) {
	c.RetryAfterSeconds = v1alpha1.DefaultKueueRetryAfterSeconds
	c.Consolidation = DefaultConsolidation
	if len(configs) == 0 {
		return
	}
	spec := &configs[0].Spec
	c.TierFromClusterQueue = spec.Kueue.TenantTierFrom == v1alpha1.TenantTierFromClusterQueue
	c.StarvationAgingSeconds = spec.Plugins.Coscheduling.StarvationAgingSeconds
	if spec.Kueue.RetryAfterSeconds != nil {
		c.RetryAfterSeconds = *spec.Kueue.RetryAfterSeconds
	}
	if p := spec.Plugins.GangPreemption.PreemptServicesForBatch; p != nil {
		c.PreemptServicesForBatch = *p
	}
	if k := spec.Plugins.GangPreemption.Consolidation; k != nil {
		if k.Enabled != nil {
			c.Consolidation.Enabled = *k.Enabled
		}
		if k.CheckpointedPods != nil {
			c.Consolidation.CheckpointedPods = *k.CheckpointedPods
		}
		if k.MaxEvictionsPerGang != nil {
			c.Consolidation.MaxEvictionsPerGang = *k.MaxEvictionsPerGang
		}
	}
}

// NotServed reports an error that says the API server does not serve a kind (its
// CRD is not installed) or the reader's scheme does not know it.
func NotServed(err error) bool {
	return apimeta.IsNoMatchError(err) || runtime.IsNotRegisteredError(err)
}

// accumulating are the PodGroups whose accumulating reservation (label
// scheduling.kubenexus.io/accumulate) is not placed on a node yet and not expired,
// with when it expires (its expireTime, else its creation plus its TTL).
func accumulating(rrs []v1alpha1.ResourceReservation, now time.Time) map[types.NamespacedName]time.Time {
	out := map[types.NamespacedName]time.Time{}
	for i := range rrs {
		rr := &rrs[i]
		if rr.Labels[v1alpha1.LabelReservationAccumulate] != "true" || rr.Spec.Owner.Kind != v1alpha1.ReservationOwnerPodGroup {
			continue
		}
		if rr.Status.Phase != "" && rr.Status.Phase != v1alpha1.ReservationPending {
			continue
		}
		ttl := rr.Spec.TTLSeconds
		if ttl <= 0 {
			ttl = 600
		}
		expires := rr.CreationTimestamp.Add(time.Duration(ttl) * time.Second)
		if rr.Status.ExpireTime != nil {
			expires = rr.Status.ExpireTime.Time
		}
		if !expires.After(now) {
			continue
		}
		key := types.NamespacedName{Namespace: rr.Namespace, Name: rr.Spec.Owner.Name}
		if expires.After(out[key]) {
			out[key] = expires
		}
	}
	return out
}

// heldBy is the room reservations hold on their nodes at now: the unconsumed slots of
// those Reserved on a node and not expired. Reservations still accumulating (no node
// yet) hold no node's room: the forecast lets their gang keep room as it frees
// (accumulating).
func heldBy(rrs []v1alpha1.ResourceReservation, now time.Time) []Held {
	var out []Held
	for i := range rrs {
		rr := &rrs[i]
		if rr.Status.Phase != v1alpha1.ReservationReserved || rr.Status.NodeName == "" {
			continue
		}
		var expires time.Time
		if rr.Status.ExpireTime != nil {
			if expires = rr.Status.ExpireTime.Time; !expires.After(now) {
				continue
			}
		}
		slots := int64(rr.Unconsumed())
		if slots <= 0 {
			continue
		}
		h := Held{Reservation: types.NamespacedName{Namespace: rr.Namespace, Name: rr.Name}, Node: rr.Status.NodeName, Expires: expires, Requests: corev1.ResourceList{}}
		if rr.Spec.Owner.Kind == v1alpha1.ReservationOwnerPodGroup {
			h.Owner = types.NamespacedName{Namespace: rr.Namespace, Name: rr.Spec.Owner.Name}
		}
		for name, q := range rr.Spec.Resources {
			q.Mul(slots)
			h.Requests[name] = q
		}
		out = append(out, h)
	}
	return out
}
