// Package placement is the placement core the scheduler's plugins and the manager
// share: pure functions over a small input model, fed from the scheduler's snapshot
// on one side and from the manager's informers on the other.
package placement

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// FreeFunc returns the free capacity of one resource summed over the cluster's nodes.
type FreeFunc func(corev1.ResourceName) resource.Quantity

// Shortfall lists, as "<missing> <resource>" sorted by resource, each resource of
// minResources (less what the gang has already placed, which is no longer free) that
// exceeds the cluster's free capacity. An empty result means the gang's minimum fits.
func Shortfall(minResources, placed corev1.ResourceList, free FreeFunc) []string {
	var short []string
	for name, want := range minResources {
		need := want.DeepCopy()
		if p, ok := placed[name]; ok {
			need.Sub(p)
		}
		if need.Sign() <= 0 {
			continue
		}
		f := free(name)
		if f.Cmp(need) < 0 {
			missing := need.DeepCopy()
			missing.Sub(f)
			short = append(short, fmt.Sprintf("%s %s", missing.String(), name))
		}
	}
	sort.Strings(short)
	return short
}

// Node is a node as the capacity functions see it.
type Node struct {
	Allocatable corev1.ResourceList
	// Requested sums the requests of the node's non-terminal pods; Pods counts them.
	Requested corev1.ResourceList
	Pods      int64
}

// FreeOf sums allocatable minus requested of each resource over nodes (a node's
// free capacity is never negative; the pods resource counts pods).
func FreeOf(nodes []Node) FreeFunc {
	return func(name corev1.ResourceName) resource.Quantity {
		var milli int64
		for i := range nodes {
			n := &nodes[i]
			a := n.Allocatable[name]
			r := n.Requested[name]
			am, rm := a.MilliValue(), r.MilliValue()
			if name == corev1.ResourcePods {
				rm = n.Pods * 1000
			}
			if am > rm {
				milli += am - rm
			}
		}
		return *resource.NewMilliQuantity(milli, resource.DecimalSI)
	}
}
