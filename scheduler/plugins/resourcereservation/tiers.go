package resourcereservation

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kube-nexus/kubenexus/api/hardware"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
)

// nodeDevices gives a node's DRA devices (the shared device index).
type nodeDevices interface {
	OnNode(node string) []hardware.Device
}

// tierGate says whether a namespace's tenant may hold capacity on a node: the
// same rule as the manager's ResourceReservation webhook (hardware.TierSet
// RefusesHolding), applied again here because a reservation can predate the rule,
// its node can join a tier, or its namespace change tier after admission. A
// refused reservation holds nothing and is never placed on such a node.
type tierGate struct {
	cache      *crdcache.Cache
	namespaces corelisters.NamespaceLister
	nodes      corelisters.NodeLister
	devices    nodeDevices
}

// tiers is the cluster's HardwareTiers now (nil: none, or the cache cannot list).
func (g *tierGate) tiers(logger klog.Logger) *hardware.TierSet {
	if g == nil || g.cache == nil {
		return nil
	}
	hwts, err := g.cache.HardwareTiers()
	if err != nil {
		logger.Error(err, "Listing HardwareTiers from the cache")
		return nil
	}
	if len(hwts) == 0 {
		return nil
	}
	tiers, _ := hardware.NewTierSet(hwts) // a tier whose selector does not build selects no node (TenantHardware reports it)
	return tiers
}

// tenantOf is the tenant tier of a namespace, as the scheduler reads it for pods
// (its tenant.kubenexus.io/tier label, bronze without one).
func (g *tierGate) tenantOf(namespace string) v1alpha1.TenantTier {
	var l map[string]string
	if ns, err := g.namespaces.Get(namespace); err == nil {
		l = ns.Labels
	}
	return workload.TierOf(workload.Namespace{Labels: l}, "")
}

// refuses explains why tiers keep the namespace's tenant from holding capacity on
// node ("" when they do not, or the node is not known).
func (g *tierGate) refuses(tiers *hardware.TierSet, namespace string, node *corev1.Node) string {
	if tiers == nil || node == nil {
		return ""
	}
	return g.refusesTenant(tiers, g.tenantOf(namespace), node)
}

// refusesTenant is refuses for a tenant tier already read.
func (g *tierGate) refusesTenant(tiers *hardware.TierSet, tenant v1alpha1.TenantTier, node *corev1.Node) string {
	if tiers == nil || node == nil {
		return ""
	}
	var devices func(string) []hardware.Device
	if g.devices != nil {
		devices = g.devices.OnNode
	}
	return tiers.RefusesHolding(node.Name, node.Labels, devices, tenant)
}

// refusesOn is refuses for a node named by a reservation.
func (g *tierGate) refusesOn(tiers *hardware.TierSet, namespace, nodeName string) string {
	if tiers == nil || nodeName == "" {
		return ""
	}
	node, err := g.nodes.Get(nodeName)
	if err != nil {
		return ""
	}
	return g.refuses(tiers, namespace, node)
}

// watch rebuilds the index when what the gate reads changes: a HardwareTier, a
// namespace's tier label, the labels of a node a reservation names.
func (g *tierGate) watch(c *crdcache.Cache, namespaces, nodes toolscache.SharedIndexInformer, rebuild func(), onNode func(string) bool) error {
	if err := c.OnHardwareTierChange(rebuild); err != nil {
		return err
	}
	if _, err := namespaces.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Namespace)
			n, ok2 := newObj.(*corev1.Namespace)
			if ok1 && ok2 && o.Labels[v1alpha1.LabelTenantTier] != n.Labels[v1alpha1.LabelTenantTier] {
				rebuild()
			}
		},
	}); err != nil {
		return err
	}
	_, err := nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok && onNode(n.Name) {
				rebuild()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && !reflect.DeepEqual(o.Labels, n.Labels) && onNode(n.Name) {
				rebuild()
			}
		},
	})
	return err
}
