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

// A set (a KAI sub-group over several leaves): decode's leader, CPU only, with its
// workers, in one NVLink domain, in one rack together, within one zone. rack-0's
// NVLink domain holds the workers but its CPUs no leader beside them; rack-1's
// holds both.
func TestDecideSet(t *testing.T) {
	fleet := func(rack1CPUs string) *Cluster {
		c := &Cluster{Requested: map[string]corev1.ResourceList{}, Levels: topology.DefaultLevels}
		for _, n := range []struct{ name, rack, clique, cpu string }{
			{"r0-d0-0", "rack-0", "r0-d0", "16"}, {"r0-d0-1", "rack-0", "r0-d0", "16"},
			{"r1-d0-0", "rack-1", "r1-d0", rack1CPUs}, {"r1-d0-1", "rack-1", "r1-d0", rack1CPUs},
		} {
			c.Nodes = append(c.Nodes, corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{
					v1alpha1.LabelTopologyZone: "zone-0", v1alpha1.LabelRack: n.rack, v1alpha1.LabelGPUClique: n.clique}},
				Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(n.cpu), gpu: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}},
			})
		}
		return c
	}
	w := job(4, "4", v1alpha1.LabelTopologyZone)
	w.PodSets[0].Name, w.PodSets[0].Role, w.PodSets[0].GroupTopology = "workers", "decode-workers", v1alpha1.LabelGPUClique
	w.PodSets[0].Set, w.PodSets[0].SetTopology = "decode", v1alpha1.LabelRack
	leader := job(1, "0", v1alpha1.LabelTopologyZone).PodSets[0]
	leader.Name, leader.Role, leader.Set, leader.SetTopology = "leader", "decode-leader", "decode", v1alpha1.LabelRack
	cpuOnly := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	leader.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: cpuOnly, Limits: cpuOnly}
	w.PodSets = append(w.PodSets, leader)

	d := Decide(fleet("64"), w)
	if want := "fit in zone zone-0, decode-workers in one nvlink, decode (decode-workers, decode-leader) in one rack (decode-workers on r1-d0-0, r1-d0-1; decode-leader on r1-d0-"; !d.Fits || !strings.Contains(d.Message, want) {
		t.Errorf("rack-1 has room: fits %v %q, want %q", d.Fits, d.Message, want)
	}
	d = Decide(fleet("16"), w)
	if want := "needs its decode members (4 × 4 nvidia.com/gpu + 1 × 8000m cpu) in one rack within one zone; zone-0 holds 4 of the 5 in one rack"; d.Fits || !strings.Contains(d.Message, want) {
		t.Errorf("no rack has room for the leader: fits %v %q, want %q", d.Fits, d.Message, want)
	}
}
