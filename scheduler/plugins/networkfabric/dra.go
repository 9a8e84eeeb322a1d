package networkfabric

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/scheduler/placement"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"
)

// GPUs published through DRA. A member whose ResourceClaims ask for devices of a
// GPU DeviceClass (dragpus.View) asks the plan
// for them as two resources: whole GPUs need whole free cards, and every GPU, or a
// share of one, needs that much free card capacity on the node. A node has as much
// of them as its cards have free in the scheduler's allocated state, read once per
// plan. Capacity is summed over a node's cards, so a share may be planned where only
// the crumbs of several cards add up to it (the DynamicResources filter then refuses
// the node); nominated pods' claims are not counted.

// draGPUs is what the plugin reads of GPUs published through DRA (dragpus.View).
type draGPUs interface {
	// AsksOnce is what the pod's claims ask of GPU devices: whole GPUs, or a share
	// of one in thousandths. The claims in counted (by name) were counted for
	// another member and are left out; the pod's others are added to it.
	AsksOnce(pod *corev1.Pod, counted map[string]bool) (gpus, share int64)
	// FreeCards reads the allocated state once and returns each GPU node's whole
	// free cards and the free capacity of its cards in thousandths (ok false: the
	// node publishes none).
	FreeCards() (func(node string) (whole, milli int64, ok bool), error)
}

// draAsks adds what the pod's claims ask of DRA GPUs to into, in milli-units. A
// claim several members share asks once for the gang: counted holds the claims
// counted for its other members (draGPUs.AsksOnce).
func (pl *Plugin) draAsks(pod *corev1.Pod, counted map[string]bool, into map[corev1.ResourceName]int64) {
	if len(pod.Spec.ResourceClaims) == 0 || pl.gpus == nil {
		return
	}
	switch gpus, share := pl.gpus.AsksOnce(pod, counted); {
	case gpus > 0:
		into[placement.DRAWholeGPUs] += gpus * 1000
		into[placement.DRAGPUCapacity] += gpus * 1000
	case share > 0:
		into[placement.DRAGPUCapacity] += share
	}
}

// asksDRA reports whether some shape asks for DRA GPUs.
func asksDRA(shapes []placement.Shape) bool {
	for _, s := range shapes {
		if s.Requests[placement.DRAGPUCapacity] > 0 {
			return true
		}
	}
	return false
}

// draFree is the node's free DRA GPUs in milli-units (whole cards, capacity), read
// from the cards once per planFor call (callers hold pl.mu); ok is false for a
// node that publishes none.
func (pl *Plugin) draFree(node string) (whole, capacity int64, ok bool) {
	if !pl.cardsRead {
		pl.cardsRead = true
		if pl.gpus != nil {
			cards, err := pl.gpus.FreeCards()
			if err != nil {
				klog.ErrorS(err, "Reading the DRA GPU cards for a gang plan")
			}
			pl.cards = cards
		}
	}
	if pl.cards == nil {
		return 0, 0, false
	}
	w, m, ok := pl.cards(node)
	return w * 1000, m, ok
}

// freeOf is the node's free capacity of one resource in milli-units
// (nodefree.Of), the DRA GPU resources from its cards (callers hold pl.mu).
func (pl *Plugin) freeOf(ni fwk.NodeInfo, name corev1.ResourceName) int64 {
	switch name {
	case placement.DRAWholeGPUs, placement.DRAGPUCapacity:
		whole, capacity, _ := pl.draFree(ni.Node().Name)
		if name == placement.DRAWholeGPUs {
			return whole
		}
		return capacity
	}
	return nodefree.Of(ni, name)
}
