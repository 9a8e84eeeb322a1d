package resourcereservation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
)

// The manager's repair reservation covers as many of its gang's lost rooms as it
// holds slots this cycle (those on its nodes first); the rest stay held, as do
// other gangs' rooms; the pod's own gang's rooms are never held against it.
func TestHoldLostBesideARepairReservation(t *testing.T) {
	a, b := gang.Key{Namespace: "ns", Name: "a"}, gang.Key{Namespace: "ns", Name: "b"}
	gpus := map[corev1.ResourceName]int64{"nvidia.com/gpu": 8000}
	room := func(k gang.Key, node string) gangs.LostRoom {
		return gangs.LostRoom{Key: k, UID: types.UID(k.Name + "-" + node), Node: node, Requests: gpus}
	}
	// a lost members on n1-n3, b one on n4.
	rooms := []gangs.LostRoom{room(a, "n1"), room(a, "n2"), room(a, "n3"), room(b, "n4")}
	anywhere := func(string, string) bool { return true }
	for _, tc := range []struct {
		name    string
		own     gang.Key
		repairs map[gang.Key]map[string]int
		// heldA is how many of a's rooms stay held; held and free are nodes that
		// must be held, must not be.
		heldA      int
		held, free []string
	}{
		{"no reservation: every room", gang.Key{}, nil, 3, []string{"n1", "n2", "n3", "n4"}, nil},
		{"a slot on a lost member's node covers that room", gang.Key{}, map[gang.Key]map[string]int{a: {"n2": 1}}, 2, []string{"n1", "n3", "n4"}, []string{"n2"}},
		{"slots elsewhere cover as many rooms", gang.Key{}, map[gang.Key]map[string]int{a: {"n9": 2}}, 1, []string{"n4"}, nil},
		{"slots for every room", gang.Key{}, map[gang.Key]map[string]int{a: {"n1": 1, "n9": 5}}, 0, []string{"n4"}, []string{"n1", "n2", "n3"}},
		{"another gang's reservation covers none of a's", gang.Key{}, map[gang.Key]map[string]int{b: {"n4": 1}}, 3, []string{"n1", "n2", "n3"}, []string{"n4"}},
		{"the pod's own gang", a, nil, 0, []string{"n4"}, []string{"n1", "n2", "n3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, names := holdLost(anywhere, rooms, tc.own, tc.repairs, nil, nil)
			heldA := 0
			for _, n := range []string{"n1", "n2", "n3"} {
				if held[n]["nvidia.com/gpu"] > 0 {
					heldA++
				}
			}
			if heldA != tc.heldA {
				t.Errorf("%d of a's rooms held, want %d (%v)", heldA, tc.heldA, names)
			}
			for _, n := range tc.held {
				if held[n]["nvidia.com/gpu"] != 8000 || len(names[n]) != 1 {
					t.Errorf("%s: held %v by %v, want one lost member's 8 GPUs", n, held[n], names[n])
				}
			}
			for _, n := range tc.free {
				if held[n]["nvidia.com/gpu"] != 0 || len(names[n]) != 0 {
					t.Errorf("%s: held %v by %v, want nothing", n, held[n], names[n])
				}
			}
		})
	}
}
