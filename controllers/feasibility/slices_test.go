package feasibility

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// A Kueue Workload in slices, as the placement-feasibility check reads it: labels
// Kueue's Topology names (a block label KubeNexus's levels do not declare), 2 racks of
// 2 blocks of 4 nodes of 8 GPUs.
func TestDecideSlices(t *testing.T) {
	const block = "cloud.example.com/block"
	cluster := func(used func(rack, blk, i int) int64) *Cluster {
		c := &Cluster{Requested: map[string]corev1.ResourceList{}, Levels: topology.DefaultLevels}
		for r := range 2 {
			for b := range 2 {
				for i := range 4 {
					name := fmt.Sprintf("r%d-b%d-n%d", r, b, i)
					c.Nodes = append(c.Nodes, corev1.Node{
						ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
							v1alpha1.LabelRack: fmt.Sprintf("rack-%d", r), block: fmt.Sprintf("block-%d-%d", r, b)}},
						Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("64"), gpu: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}},
					})
					if u := used(r, b, i); u > 0 {
						c.Requested[name] = corev1.ResourceList{gpu: *resource.NewQuantity(u, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("1")}
					}
				}
			}
		}
		return c
	}
	sliced := func(count int, required string, layers ...SliceLayer) *Workload {
		w := job(count, "2", required)
		w.PodSets[0].Slices = layers
		return w
	}
	free := func(int, int, int) int64 { return 0 }
	// One GPU used on the first node of every block: 15 pods of 2 GPUs fit a block.
	chipped := func(_, _, i int) int64 {
		if i == 0 {
			return 2
		}
		return 0
	}
	for _, tc := range []struct {
		name    string
		cluster *Cluster
		w       *Workload
		fits    bool
		message string
	}{
		{"32 in one rack, slices of 16 in one block", cluster(free), sliced(32, v1alpha1.LabelRack, SliceLayer{block, 16}), true,
			"32 × 2 nvidia.com/gpu fit in slices of 16 in one " + block + ", in rack-0, now"},
		{"a block short of a slice", cluster(chipped), sliced(32, v1alpha1.LabelRack, SliceLayer{block, 16}), false,
			"needs 32 members (32 × 2 nvidia.com/gpu) in one rack, in slices of 16 in one " + block + "; rack-0 holds 0 of the 2 slices of 16 in one " + block},
		{"slices of 15 fit where 16 do not", cluster(chipped), sliced(30, v1alpha1.LabelRack, SliceLayer{block, 15}), true, "fit in slices of 15"},
		{"no domain for the whole: slices anywhere", cluster(free), sliced(64, "", SliceLayer{block, 16}), true, "fit in slices of 16 in one " + block},
		{"a size that does not divide the pods", cluster(free), sliced(24, v1alpha1.LabelRack, SliceLayer{block, 16}), false, "slices[0].size 16 must divide the gang's 24 members"},
	} {
		d := Decide(tc.cluster, tc.w)
		if d.Fits != tc.fits || !strings.Contains(d.Message, tc.message) {
			t.Errorf("%s: fits %v %q, want %v %q", tc.name, d.Fits, d.Message, tc.fits, tc.message)
		}
	}
}
