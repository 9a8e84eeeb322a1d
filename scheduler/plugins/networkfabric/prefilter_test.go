package networkfabric

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-nexus/kubenexus/api/topology"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

// Two racks: rack-0 has one premium and three standard 8-GPU nodes, rack-1 two
// premium and two standard. The tenant prefers premium (score 100 over 50).
func mixedRacks() []placement.PlanNode {
	var nodes []placement.PlanNode
	for r, premium := range []int{1, 2} {
		for i := range 4 {
			pref := int64(50)
			if i < premium {
				pref = 100
			}
			nodes = append(nodes, placement.PlanNode{
				Name:       fmt.Sprintf("r%d-n%d", r, i),
				Domains:    []string{"", "", fmt.Sprintf("rack-%d", r), "zone"},
				Free:       map[corev1.ResourceName]int64{"nvidia.com/gpu": 8000, corev1.ResourcePods: 110000},
				Eligible:   []bool{true},
				Preference: pref,
			})
		}
	}
	return nodes
}

func TestComputeByPreference(t *testing.T) {
	gang := func(n int) []placement.Shape {
		return []placement.Shape{{Requests: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8000, corev1.ResourcePods: 1000}, Count: n}}
	}
	claimed := func(p placement.Plan) (premium, standard int) {
		for name := range p.Claims {
			for _, n := range mixedRacks() {
				if n.Name == name && n.Preference == 100 {
					premium++
				} else if n.Name == name {
					standard++
				}
			}
		}
		return premium, standard
	}
	// Two members: rack-1's two premium nodes hold them.
	p, _ := computeByPreference(mixedRacks(), gang(2), topology.Policy{Level: 3})
	if pr, st := claimed(p); pr != 2 || st != 0 || p.Domains[0] != "rack-1" {
		t.Errorf("2 members: %v premium %d standard %d; want rack-1's two premium nodes", p.Domains, pr, st)
	}
	// Three members (preferred): the three premium nodes, over two racks, rather than
	// one rack of mixed hardware.
	p, _ = computeByPreference(mixedRacks(), gang(3), topology.Policy{Level: 2})
	if pr, st := claimed(p); pr != 3 || st != 0 {
		t.Errorf("3 members, preferred: premium %d standard %d; want all three premium nodes", pr, st)
	}
	// Three members, required in one rack: premium cannot do it, one rack of mixed
	// hardware can.
	p, short := computeByPreference(mixedRacks(), gang(3), topology.Policy{Required: true, Level: 2})
	if short != nil || len(p.Domains) != 1 {
		t.Errorf("3 members, required rack: %v %v; want one rack", p.Domains, short)
	}
}

func TestShapesOfBoundsMembersThatKeepApart(t *testing.T) {
	member := func(name string, antiAffinity bool, hostPort int32) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name, p.Namespace = name, "ml"
		p.Labels = map[string]string{"job": "train"}
		c := corev1.Container{Name: "w", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}
		if hostPort > 0 {
			c.Ports = []corev1.ContainerPort{{ContainerPort: hostPort, HostPort: hostPort, Protocol: corev1.ProtocolTCP}}
		}
		p.Spec.Containers = []corev1.Container{c}
		if antiAffinity {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"job": "train"}}, TopologyKey: corev1.LabelHostname,
			}}}}
		}
		return p
	}
	tests := map[string]struct {
		members []*corev1.Pod
		want    []int // MaxPerNode per shape
	}{
		"plain members share nodes":            {[]*corev1.Pod{member("a", false, 0), member("b", false, 0)}, []int{0}},
		"hostname anti-affinity to each other": {[]*corev1.Pod{member("a", true, 0), member("b", true, 0)}, []int{1}},
		"a host port":                          {[]*corev1.Pod{member("a", false, 9000), member("b", false, 9000)}, []int{1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			shapes, roles := shapesOf(tc.members)
			if len(shapes) != len(tc.want) || len(roles) != len(tc.want) {
				t.Fatalf("got %d shapes, want %d", len(shapes), len(tc.want))
			}
			for i, s := range shapes {
				if s.MaxPerNode != tc.want[i] || s.Count != 2 {
					t.Errorf("shape %d: MaxPerNode %d count %d, want %d and 2", i, s.MaxPerNode, s.Count, tc.want[i])
				}
			}
		})
	}
}
