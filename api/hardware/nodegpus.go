package hardware

import (
	corev1 "k8s.io/api/core/v1"
)

// NodeGPUs is a node's GPU capacity, read the same way by every component that
// counts GPUs (HardwareTier status, the scheduler's GPU gauges, the plugins): the
// GPU resources in its allocatable (a device plugin), else the GPU resources DRA
// devices back through a DeviceClass's extended resource name (extended; nil: not
// read), else its cards (devices of a GPU DeviceClass; nil: none). fromCards says
// the cards are the source: then the GPUs allocated are the cards not wholly free
// (a GPU partly used holds no whole-GPU member), not what pods request.
func NodeGPUs(allocatable corev1.ResourceList, extended map[corev1.ResourceName]int64, cards *GPUs, resources []corev1.ResourceName) (capacity int64, fromCards bool) {
	for _, r := range resources {
		if q, ok := allocatable[r]; ok {
			capacity += q.Value()
		}
	}
	if capacity > 0 {
		return capacity, false
	}
	for _, r := range resources {
		capacity += extended[r]
	}
	if capacity > 0 {
		return capacity, false
	}
	if cards != nil && len(cards.Cards) > 0 {
		return int64(len(cards.Cards)), true
	}
	return 0, false
}
