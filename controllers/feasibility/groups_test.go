package feasibility

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// A prefill/decode pair whose roles ask for the same (4 GPUs a pod), each role in
// one NVLink domain, both in one rack: rack-0 has an NVLink domain of two 4-GPU
// nodes (2 members) and one of two 8-GPU nodes (4 members) — only the two roles
// apart hold it.
func TestDecideSubGroups(t *testing.T) {
	c := &Cluster{Requested: map[string]corev1.ResourceList{}, Levels: topology.DefaultLevels}
	for _, n := range []struct {
		name, rack, clique, gpus string
	}{
		{"r0-d0-0", "rack-0", "r0-d0", "4"}, {"r0-d0-1", "rack-0", "r0-d0", "4"},
		{"r0-d1-0", "rack-0", "r0-d1", "8"}, {"r0-d1-1", "rack-0", "r0-d1", "8"},
		{"r1-d0-0", "rack-1", "r1-d0", "4"}, {"r1-d0-1", "rack-1", "r1-d0", "4"},
	} {
		c.Nodes = append(c.Nodes, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{v1alpha1.LabelRack: n.rack, v1alpha1.LabelGPUClique: n.clique}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), gpu: resource.MustParse(n.gpus), corev1.ResourcePods: resource.MustParse("110")}},
		})
	}
	pair := func(prefill, decode int, level string) *Workload {
		w := job(prefill, "4", v1alpha1.LabelRack)
		w.PodSets[0].Name, w.PodSets[0].Role, w.PodSets[0].GroupTopology = "prefill", "prefill", level
		d := w.PodSets[0]
		d.Name, d.Role, d.Count = "decode", "decode", decode
		w.PodSets = append(w.PodSets, d)
		return w
	}
	for _, tc := range []struct {
		name    string
		w       *Workload
		fits    bool
		message string
	}{
		{"each role in an NVLink domain of its own", pair(2, 4, v1alpha1.LabelGPUClique), true,
			"fit in rack rack-0, prefill in one nvlink, decode in one nvlink (prefill on r0-d0-0, r0-d0-1; decode on r0-d1-0, r0-d1-1), now"},
		{"decode larger than any NVLink domain", pair(2, 6, v1alpha1.LabelGPUClique), false,
			"needs its decode members (6 × 4 nvidia.com/gpu) in one nvlink within one rack; rack-0 holds 4 of the 6 in one nvlink"},
	} {
		d := Decide(c, tc.w)
		if d.Fits != tc.fits || !strings.Contains(d.Message, tc.message) {
			t.Errorf("%s: fits %v %q, want %v %q", tc.name, d.Fits, d.Message, tc.fits, tc.message)
		}
		if d.Groups != "prefill in one nvlink, decode in one nvlink" {
			t.Errorf("%s: groups %q", tc.name, d.Groups)
		}
	}
}
