package networkfabric

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement"

	testutil "github.com/kube-nexus/kubenexus/test/util"
	"github.com/kube-nexus/kubenexus/test/util/schedtest"
	"github.com/kube-nexus/kubenexus/test/util/snapshot"
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
	p, _ := computeByPreference(mixedRacks(), nil, gang(2), topology.Policy{Level: 3})
	if pr, st := claimed(p); pr != 2 || st != 0 || p.Domains[0] != "rack-1" {
		t.Errorf("2 members: %v premium %d standard %d; want rack-1's two premium nodes", p.Domains, pr, st)
	}
	// Three members (preferred): the three premium nodes, over two racks, rather than
	// one rack of mixed hardware.
	p, _ = computeByPreference(mixedRacks(), nil, gang(3), topology.Policy{Level: 2})
	if pr, st := claimed(p); pr != 3 || st != 0 {
		t.Errorf("3 members, preferred: premium %d standard %d; want all three premium nodes", pr, st)
	}
	// Three members, required in one rack: premium cannot do it, one rack of mixed
	// hardware can.
	p, short := computeByPreference(mixedRacks(), nil, gang(3), topology.Policy{Required: true, Level: 2})
	if short != nil || len(p.Domains) != 1 {
		t.Errorf("3 members, required rack: %v %v; want one rack", p.Domains, short)
	}
}

// A gold CPU-only gang on a rack of premium GPU nodes and CPU servers of a lower
// tier: the CPU servers while they hold it, the GPU nodes only when they do not.
func TestComputeByPreferenceKeepsCPUGangsOffAccelerators(t *testing.T) {
	var nodes []placement.PlanNode
	var keptOff []bool
	for i, gpu := range []bool{true, true, true, false, false} {
		n := placement.PlanNode{
			Name:       fmt.Sprintf("n%d", i),
			Domains:    []string{"", "", "rack-0", "zone"},
			Free:       map[corev1.ResourceName]int64{corev1.ResourceCPU: 32000, corev1.ResourcePods: 110000},
			Eligible:   []bool{true},
			Preference: 50,
		}
		if gpu {
			n.Name, n.Preference = fmt.Sprintf("gpu-%d", i), 100
		}
		nodes = append(nodes, n)
		keptOff = append(keptOff, gpu)
	}
	cpuGang := func(n int, cpu int64) []placement.Shape {
		return []placement.Shape{{Requests: map[corev1.ResourceName]int64{corev1.ResourceCPU: cpu, corev1.ResourcePods: 1000}, Count: n}}
	}
	claimedGPU := func(p placement.Plan) (gpu, cpu int) {
		for name := range p.Claims {
			if strings.HasPrefix(name, "gpu-") {
				gpu++
			} else {
				cpu++
			}
		}
		return gpu, cpu
	}
	tests := map[string]struct {
		shapes            []placement.Shape
		keptOff           []bool
		wantGPU, wantCPUs int
	}{
		"three 1-CPU pods fit the CPU servers":                  {cpuGang(3, 1000), keptOff, 0, 1},
		"two 32-CPU pods fill the CPU servers":                  {cpuGang(2, 32000), keptOff, 0, 2},
		"three 32-CPU pods need a GPU node":                     {cpuGang(3, 32000), keptOff, 1, 2},
		"without WorkloadAware's rule, the preferred tier wins": {cpuGang(3, 1000), nil, 1, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, _ := computeByPreference(nodes, tc.keptOff, tc.shapes, topology.Policy{Level: 2})
			if !p.Fits {
				t.Fatalf("plan does not fit: %+v", p)
			}
			if gpu, cpu := claimedGPU(p); gpu != tc.wantGPU || cpu != tc.wantCPUs {
				t.Errorf("claims on %d GPU and %d CPU nodes (%v); want %d and %d", gpu, cpu, p.Claims, tc.wantGPU, tc.wantCPUs)
			}
		})
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
			shapes, roles := shapesOf(tc.members, nil, false)
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

// Members whose claims ask for DRA GPUs ask the plan for them: whole GPUs as whole
// cards and their capacity, a share as capacity; members asking differently are
// different shapes.
func TestShapesOfCountsDRAGPUs(t *testing.T) {
	// A GPU class (NVIDIA's, a default GPU class) of one driver, whose node n
	// publishes a GPU of 80Gi that claims share; claims made from template "two"
	// ask for two GPUs, from "quarter" for 20Gi of one: a quarter of the card.
	const driver = "gpu.example.com"
	class := gpuClass(driver)
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "n-gpus"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: driver, Pool: resourceapi.ResourcePool{Name: "n", Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To("n"),
		Devices: []resourceapi.Device{{Name: "gpu-0", AllowMultipleAllocations: ptr.To(true),
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}}},
	}}
	template := func(name string, req resourceapi.ExactDeviceRequest) *resourceapi.ResourceClaimTemplate {
		req.DeviceClassName = class.Name
		return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml"},
			Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
				Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &req}}}}}}
	}
	two := template("two", resourceapi.ExactDeviceRequest{AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2})
	quarter := template("quarter", resourceapi.ExactDeviceRequest{AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
		Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("20Gi")}}})
	pl, s := newPlugin(t, []runtime.Object{testutil.MakeNode("n").Obj(), class, slice, two, quarter})
	member := func(name, asks string) *corev1.Pod {
		return claimMember(name, corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: ptr.To(asks)})
	}
	schedtest.WaitFor(t, "the DRA GPU view to read the class, the slice and the templates", func() bool {
		_, share := s.GPUs().Asks(member("c", "quarter"))
		return share > 0
	})
	shapes, _ := shapesOf([]*corev1.Pod{member("a", "two"), member("b", "two"), member("c", "quarter")}, pl.draAsks, false)
	got := map[string]map[corev1.ResourceName]int64{}
	for _, s := range shapes {
		got[fmt.Sprint(s.Count)] = map[corev1.ResourceName]int64{placement.DRAWholeGPUs: s.Requests[placement.DRAWholeGPUs], placement.DRAGPUCapacity: s.Requests[placement.DRAGPUCapacity]}
	}
	want := map[string]map[corev1.ResourceName]int64{
		"2": {placement.DRAWholeGPUs: 2000, placement.DRAGPUCapacity: 2000},
		"1": {placement.DRAWholeGPUs: 0, placement.DRAGPUCapacity: 250},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DRA GPUs per shape (by member count) (-want +got):\n%s", diff)
	}
	if !asksDRA(shapes) {
		t.Errorf("asksDRA = false, want true")
	}
}

// A claim several members name asks the plan once, for the first of them by name;
// one a running pod (another consumer) holds asks nothing: its devices are not free.
func TestShapesOfCountsASharedClaimOnce(t *testing.T) {
	const driver = "gpu.example.com"
	class := gpuClass(driver)
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "n-gpus"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: driver, Pool: resourceapi.ResourcePool{Name: "n", Generation: 1, ResourceSliceCount: 1}, NodeName: ptr.To("n"),
		Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}, {Name: "gpu-2"}, {Name: "gpu-3"}},
	}}
	claim := func(name string, holder types.UID) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class.Name, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2}}}}}}
		if holder != "" {
			c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "runs", UID: holder}}
		}
		return c
	}
	pl, s := newPlugin(t, []runtime.Object{testutil.MakeNode("n").Obj(), class, slice, claim("pair", ""), claim("held", "uid-of-runs")})
	member := func(name, claim string) *corev1.Pod {
		return claimMember(name, corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To(claim)})
	}
	schedtest.WaitFor(t, "the DRA GPU view to read the class, the slice and the claims", func() bool {
		gpus, _ := s.GPUs().Asks(member("x", "pair"))
		return gpus > 0
	})
	shapes, _ := shapesOf([]*corev1.Pod{member("b", "pair"), member("a", "pair"), member("c", "held")}, pl.draAsks, false)
	got := map[int64]int{}
	for _, s := range shapes {
		got[s.Requests[placement.DRAWholeGPUs]] += s.Count
	}
	if want := map[int64]int{2000: 1, 0: 2}; !maps.Equal(got, want) {
		t.Errorf("members by whole DRA GPUs asked (milli) = %v, want %v: the shared claim once, the held one not at all", got, want)
	}
	// Reserve releases a shared claim once, as the plan counted it.
	released := map[string]bool{}
	for _, name := range []string{"b", "a"} {
		dra := map[corev1.ResourceName]int64{}
		pl.draAsks(member(name, "pair"), released, dra)
		if want := map[bool]int64{true: 2000, false: 0}[name == "b"]; dra[placement.DRAWholeGPUs] != want {
			t.Errorf("member %s releases %d milli whole GPUs, want %d", name, dra[placement.DRAWholeGPUs], want)
		}
	}
}

// filed are members for the gang Service to file, as the profile's pods: each in
// the gang its labels name, or in gang g when they name none.
func filed(members ...*corev1.Pod) []runtime.Object {
	var out []runtime.Object
	for _, m := range members {
		p := m.DeepCopy()
		p.Spec.SchedulerName = schedtest.SchedulerName
		if _, ok, _ := gang.Of(p); !ok {
			if p.Labels == nil {
				p.Labels = map[string]string{}
			}
			p.Labels[v1alpha1.LabelPodGroup] = "g"
		}
		out = append(out, p)
	}
	return out
}

// testPlugin is a plugin without plans whose gang Service has members pending
// (filed).
func testPlugin(t *testing.T, members ...*corev1.Pod) *Plugin {
	t.Helper()
	pl, _ := newPlugin(t, filed(members...))
	return pl
}

// The member whose arrival completes the quorum is often scheduled before
// Coscheduling's index has counted it (the index and the queue are separate handlers
// of the pod informer). The plan must still cover it: planned for the three members
// the index shows, the gang of four goes to the rack with three whole nodes and its
// fourth member to another rack.
func TestPreFilterPlansThePodTheIndexHasNotSeen(t *testing.T) {
	nodes := twoRacks(map[string]int64{"r0-n0": 1})
	members := []*corev1.Pod{gpuPod("m0", 8), gpuPod("m1", 8), gpuPod("m2", 8), gpuPod("m3", 8)}
	key := gang.Key{Namespace: "ml", Name: "g"}
	for _, m := range members {
		m.Labels = map[string]string{"pod-group.scheduling.kubenexus.io/name": "g", "pod-group.scheduling.kubenexus.io/min-available": "4"}
	}
	pl := testPlugin(t, members[:3]...)

	ap, st := pl.planFor(key, members[3], topology.Policy{Level: len(topology.DefaultLevels) - 1}, 4, nodes)
	if !st.IsSuccess() {
		t.Fatalf("planFor: %v", st)
	}
	if ap.need != 4 || !ap.fits {
		t.Fatalf("plan for %d members (fits %v), want one that holds all 4", ap.need, ap.fits)
	}
	if got, want := sets.KeySet(ap.rank), sets.New("r1-n0", "r1-n1", "r1-n2", "r1-n3"); !got.Equal(want) {
		t.Errorf("plan's nodes %v, want rack-1's %v", sets.List(got), sets.List(want))
	}
}

// Room preemption made for another gang is nominated to its members: kube-scheduler's
// Filter counts them on that node, so the plan must not count it free (a gang
// planned there had members refused and was rejected into its backoff). The gang's
// own nominated members and pods it outranks do not take room from it.
func TestPlanLeavesRoomNominatedToOthers(t *testing.T) {
	key := gang.Key{Namespace: "ml", Name: "g"}
	labelled := func(p *corev1.Pod, g string, prio int32) *corev1.Pod {
		p.Labels = map[string]string{"pod-group.scheduling.kubenexus.io/name": g, "pod-group.scheduling.kubenexus.io/min-available": "4"}
		p.Spec.Priority = &prio
		return p
	}
	for _, tc := range []struct {
		name      string
		nominated *corev1.Pod
		wantRack  int
	}{
		{"nothing nominated", nil, 0},
		{"another gang's member of equal priority", labelled(gpuPod("other-0", 8), "other", 100), 1},
		{"a pod of lower priority", labelled(gpuPod("low-0", 8), "low", 10), 0},
		{"a member of the gang itself", labelled(gpuPod("m3", 8), "g", 100), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			members := []*corev1.Pod{gpuPod("m0", 8), gpuPod("m1", 8), gpuPod("m2", 8), gpuPod("m3", 8)}
			for _, m := range members {
				labelled(m, "g", 100)
			}
			pl, s := newPlugin(t, filed(members...))
			if tc.nominated != nil {
				s.Env.Nominate(tc.nominated, "r0-n1")
			}
			ap, st := pl.planFor(key, members[0], topology.Policy{Level: len(topology.DefaultLevels) - 1}, 4, twoRacks(nil))
			if !st.IsSuccess() || !ap.fits {
				t.Fatalf("planFor: %v (fits %v), want a plan that holds the gang", st, ap != nil && ap.fits)
			}
			want := sets.New[string]()
			for i := range 4 {
				want.Insert(fmt.Sprintf("r%d-n%d", tc.wantRack, i))
			}
			if got := sets.KeySet(ap.rank); !got.Equal(want) {
				t.Errorf("plan's nodes %v, want rack-%d's %v", sets.List(got), tc.wantRack, sets.List(want))
			}
		})
	}
}

// A gang that cannot be placed whole beside the capacity another gang's plan sets
// aside is refused before any member is reserved: going on, it would hold nodes at
// Permit that the other gang was promised.
func TestPlanForRefusesAGangThatFitsOnlyOnClaimedCapacity(t *testing.T) {
	nodes := twoRacks(nil)
	key := gang.Key{Namespace: "ml", Name: "g"}
	members := []*corev1.Pod{gpuPod("m0", 8), gpuPod("m1", 8), gpuPod("m2", 8), gpuPod("m3", 8), gpuPod("m4", 8)}
	// Another gang of four whole nodes is planned first: its plan sets four nodes
	// aside.
	var others []*corev1.Pod
	for i := range 4 {
		o := gpuPod(fmt.Sprintf("other-%d", i), 8)
		o.Labels = map[string]string{v1alpha1.LabelPodGroup: "other"}
		others = append(others, o)
	}
	pl := testPlugin(t, append(append([]*corev1.Pod(nil), members...), others...)...)
	other, st := pl.planFor(gang.Key{Namespace: "ml", Name: "other"}, others[0], topology.Policy{Level: len(topology.DefaultLevels) - 1}, 4, nodes)
	if !st.IsSuccess() || !other.fits || len(other.claims) != 4 {
		t.Fatalf("the other gang's plan: %v, claims %v; want four whole nodes set aside", st, other.claims)
	}

	_, st = pl.planFor(key, members[0], topology.Policy{Level: len(topology.DefaultLevels) - 1}, 5, nodes)
	if st.Code() != fwk.Unschedulable {
		t.Fatalf("five whole nodes asked, four free beside another gang's claims: status %v, want Unschedulable", st)
	}
	if want := "InsufficientCapacity: gang ml/g: 4 of its 5 pending members (5 × 8 nvidia.com/gpu) fit beside the capacity set aside for gangs being placed; it waits for them"; st.Message() != want {
		t.Errorf("message %q, want %q", st.Message(), want)
	}
	if pl.plans[key] != nil {
		t.Error("the refused gang got a plan")
	}
}

// An elastic gang (minMember below its members) whose quorum fits is planned, not
// refused: the members beyond the room wait, as minMember allows.
func TestPlanForGoesOnWhenTheQuorumOfAnElasticGangFits(t *testing.T) {
	nodes := twoRacks(map[string]int64{"r0-n0": 8, "r0-n1": 8, "r0-n2": 8, "r0-n3": 8, "r1-n0": 8, "r1-n1": 8})
	key := gang.Key{Namespace: "ml", Name: "g"}
	members := []*corev1.Pod{gpuPod("m0", 8), gpuPod("m1", 8), gpuPod("m2", 8)}
	fresh := func() *Plugin { return testPlugin(t, members...) }
	policy := topology.Policy{Level: len(topology.DefaultLevels) - 1}

	ap, st := fresh().planFor(key, members[0], policy, 2, nodes)
	if !st.IsSuccess() {
		t.Fatalf("three members, minMember 2, two whole nodes free: %v, want a plan", st)
	}
	if ap.fits || len(ap.claims) != 2 {
		t.Errorf("plan fits=%v with %d claimed nodes, want one that holds two members and says it does not hold all", ap.fits, len(ap.claims))
	}
	if _, st := fresh().planFor(key, members[0], policy, 3, nodes); st.Code() != fwk.Unschedulable {
		t.Errorf("three members, minMember 3, two whole nodes free: %v, want Unschedulable", st)
	}
}

// twoRacks is two racks of four 8-GPU nodes, r<rack>-n<i>; used holds GPUs taken per node.
// A LeaderWorkerSet with exclusive placement creates a group's workers only once
// its leader is bound: the leader, alone in its gang, is planned for the whole group
// of three, in the rack that holds three (rack-0 has two nodes taken), and the room
// for the two workers stays claimed in the plan after the leader is reserved.
func TestPlanForPlansALeaderFirstGroupWhole(t *testing.T) {
	nodes := twoRacks(map[string]int64{"r0-n0": 8, "r0-n1": 8})
	leader := gpuPod("vllm-0", 8)
	leader.Labels = map[string]string{"leaderworkerset.sigs.k8s.io/name": "vllm", "leaderworkerset.sigs.k8s.io/group-index": "0",
		"leaderworkerset.sigs.k8s.io/worker-index": "0", "pod-group.scheduling.kubenexus.io/name": "vllm-0", "pod-group.scheduling.kubenexus.io/min-available": "1"}
	leader.Annotations = map[string]string{"leaderworkerset.sigs.k8s.io/size": "3", "leaderworkerset.sigs.k8s.io/exclusive-topology": "network.kubenexus.io/rack"}
	key := gang.Key{Namespace: "ml", Name: "vllm-0"}
	pl := testPlugin(t)
	policy, ok, err := topology.PolicyOf(leader, nil, topology.DefaultLevels)
	if err != nil || !ok || !policy.Required {
		t.Fatalf("policy %+v %v %v, want required", policy, ok, err)
	}
	ap, st := pl.planFor(key, leader, policy, 1, nodes)
	if !st.IsSuccess() {
		t.Fatalf("planFor: %v", st)
	}
	if ap.need != 3 || !ap.fits {
		t.Fatalf("plan for %d members (fits %v), want the group of 3", ap.need, ap.fits)
	}
	if got := sets.KeySet(ap.rank); !got.IsSuperset(sets.New("r1-n0", "r1-n1", "r1-n2")) || got.Has("r0-n2") {
		t.Errorf("plan's nodes %v, want rack-1's only", sets.List(got))
	}
	// Without the annotations the leader is a gang of one, planned alone.
	plain := leader.DeepCopy()
	plain.Annotations = nil
	pl = testPlugin(t)
	ap, st = pl.planFor(key, plain, topology.Policy{Required: true, Level: 2}, 1, nodes)
	if !st.IsSuccess() || ap.need != 1 {
		t.Fatalf("plain leader: plan for %d members (%v), want 1", ap.need, st)
	}
}

func twoRacks(used map[string]int64) []fwk.NodeInfo {
	var nodes []fwk.NodeInfo
	for r := range 2 {
		for i := range 4 {
			name := fmt.Sprintf("r%d-n%d", r, i)
			node := testutil.MakeNode(name).Label("network.kubenexus.io/rack", fmt.Sprintf("rack-%d", r)).Capacity("nvidia.com/gpu", "8").Obj()
			var pods []*corev1.Pod
			if g := used[name]; g > 0 {
				pods = append(pods, gpuPod("taken-"+name, g))
			}
			nodes = append(nodes, snapshot.NodeInfo(node, pods...))
		}
	}
	return nodes
}

func gpuPod(name string, gpus int64) *corev1.Pod {
	return testutil.MakePod(name, "ml").UID(name).GPUs(gpus).Obj()
}

// A gang that asks more than all nodes have free together is refused before any
// node is planned, saying what it needs and what is free; an elastic gang whose
// quorum fits is not (its members beyond the room wait), nor a gang with a required
// policy (its refusal names the domain that holds most).
func TestPlanForRefusesAGangLargerThanTheFreeCapacity(t *testing.T) {
	used := map[string]int64{}
	for r := range 2 {
		for i := range 4 {
			used[fmt.Sprintf("r%d-n%d", r, i)] = 8
		}
	}
	used["r1-n3"] = 4 // 4 GPUs free in the whole cluster
	nodes := twoRacks(used)
	key := gang.Key{Namespace: "ml", Name: "g"}
	members := []*corev1.Pod{gpuPod("m0", 2), gpuPod("m1", 2), gpuPod("m2", 2), gpuPod("m3", 2)}
	fresh := func() *Plugin { return testPlugin(t, members...) }
	preferred := topology.Policy{Level: len(topology.DefaultLevels) - 1}

	_, st := fresh().planFor(key, members[0], preferred, 4, nodes)
	if want := "InsufficientCapacity: gang ml/g: its 4 pending members (4 × 2 nvidia.com/gpu) need 8 nvidia.com/gpu and all nodes together have 4 nvidia.com/gpu free, so some member fits no node"; st.Code() != fwk.Unschedulable || st.Message() != want {
		t.Errorf("status %v %q, want Unschedulable %q", st.Code(), st.Message(), want)
	}
	// Elastic: a quorum of 2 fits the 4 free GPUs.
	if ap, st := fresh().planFor(key, members[0], preferred, 2, nodes); !st.IsSuccess() || ap == nil {
		t.Errorf("elastic gang whose quorum fits: status %v, want a plan", st)
	}
	// Required: refused for its topology, saying which rack holds most.
	_, st = fresh().planFor(key, members[0], topology.Policy{Required: true, Level: 1, Source: "test"}, 4, nodes)
	if !strings.Contains(st.Message(), "TopologyUnsatisfiable") {
		t.Errorf("required policy: %q, want the topology refusal", st.Message())
	}
}

// flatNodes is n unlabelled 8-GPU nodes, f<i>; full lists nodes with no GPU free.
func flatNodes(n int, full func(i int) bool) []fwk.NodeInfo { return gpuNodes("f", n, 0, full) }

// gpuNodes is n 8-GPU nodes named prefix<i>, in racks of rackSize in order (no rack
// label when 0); full marks nodes whose GPUs are taken.
func gpuNodes(prefix string, n, rackSize int, full func(i int) bool) []fwk.NodeInfo {
	var nodes []fwk.NodeInfo
	for i := range n {
		node := testutil.MakeNode(fmt.Sprintf("%s%03d", prefix, i)).Capacity("nvidia.com/gpu", "8")
		if rackSize > 0 {
			node = node.Label("network.kubenexus.io/rack", fmt.Sprintf("rack-%02d", i/rackSize))
		}
		var pods []*corev1.Pod
		if full(i) {
			pods = append(pods, gpuPod(fmt.Sprintf("taken-%d", i), 8))
		}
		nodes = append(nodes, snapshot.NodeInfo(node.Obj(), pods...))
	}
	return nodes
}

// On a flat cluster (no node carries a topology label) a plan looks at a window of
// the nodes first, the next plan at the next window; when the window does not hold
// the gang (a required policy's refusal included), or nothing tracks the nodes, it
// plans over every node.
func TestPlanForOnAFlatClusterPlansOverAWindow(t *testing.T) {
	const n = 300
	w := windowSize(n) // 144: 48% of 300
	if w != 144 {
		t.Fatalf("windowSize(300) = %d, want kube-scheduler's 144", w)
	}
	key := gang.Key{Namespace: "ml", Name: "g"}
	members := []*corev1.Pod{gpuPod("m0", 8), gpuPod("m1", 8), gpuPod("m2", 8)}
	// Gang h: three members of the same shape.
	others := []*corev1.Pod{gpuPod("h0", 8), gpuPod("h1", 8), gpuPod("h2", 8)}
	for _, o := range others {
		o.Labels = map[string]string{v1alpha1.LabelPodGroup: "h"}
	}
	fresh := func(labelledNodes ...string) *Plugin {
		kube := filed(append(append([]*corev1.Pod(nil), members...), others...)...)
		for _, name := range labelledNodes {
			kube = append(kube, testutil.MakeNode(name).Label("network.kubenexus.io/rack", "rack-0").Obj())
		}
		pl, _ := newPlugin(t, kube)
		return pl
	}
	preferred := topology.Policy{Level: len(topology.DefaultLevels) - 1}
	index := func(name string) int {
		var i int
		_, _ = fmt.Sscanf(name, "f%d", &i)
		return i
	}
	inRange := func(ap *activePlan, from, to int) bool {
		for name := range ap.claims {
			if i := index(name); i < from || i >= to {
				return false
			}
		}
		return len(ap.claims) == 3
	}

	// Every node free: the first plan claims within the first window, the next
	// gang's plan within the second.
	pl := fresh()
	nodes := flatNodes(n, func(int) bool { return false })
	ap, st := pl.planFor(key, members[0], preferred, 3, nodes)
	if !st.IsSuccess() || !inRange(ap, 0, w) || pl.nextStart != w {
		t.Fatalf("first plan: %v, claims %v, next start %d; want 3 nodes among the first %d", st, sets.KeySet(ap.claims), pl.nextStart, w)
	}
	other := gang.Key{Namespace: "ml", Name: "h"}
	ap, st = pl.planFor(other, others[0], preferred, 3, nodes)
	if !st.IsSuccess() || !inRange(ap, w, 2*w) {
		t.Fatalf("second plan: %v, claims %v; want 3 nodes among %d–%d", st, sets.KeySet(ap.claims), w, 2*w-1)
	}

	// The first window full: planned over every node, and the room past it found.
	nodes = flatNodes(n, func(i int) bool { return i < w+10 })
	pl = fresh()
	if ap, st = pl.planFor(key, members[0], preferred, 3, nodes); !st.IsSuccess() || !ap.fits || !inRange(ap, w+10, n) || pl.nextStart != 0 {
		t.Errorf("full window: %v, claims %v, next start %d; want a whole plan past the window, the start unmoved", st, sets.KeySet(ap.claims), pl.nextStart)
	}

	// Nothing tracking the nodes (a handle without informers): no window (the start
	// does not move).
	nodes = flatNodes(n, func(int) bool { return false })
	if p, _ := newPluginOn(t, withoutInformers, filed(members...)); !isSuccess(p.planFor(key, members[0], preferred, 3, nodes)) || p.nextStart != 0 {
		t.Errorf("no node tracker: next start %d; want a plan over every node", p.nextStart)
	}
	// Required (unlabelled nodes are domains of their own, so it is refused): the
	// window does not hold it, and the refusal comes from every node.
	pl = fresh()
	if _, st := pl.planFor(key, members[0], topology.Policy{Required: true, Level: len(topology.DefaultLevels) - 1}, 3, nodes); st.Code() != fwk.UnschedulableAndUnresolvable || pl.nextStart != 0 {
		t.Errorf("required: %v, next start %d; want the topology refusal over every node", st, pl.nextStart)
	}
}

// Nodes with no room for any member are left out of the planning (in a full
// cluster, nearly all of them), but not out of the plan's domain: the plan's nodes
// are still every node of the rack it chose, full ones included, and a required
// policy's refusal still counts what the fullest rack holds.
func TestPlanForLeavesFullNodesOutOfThePlanningNotOutOfTheDomain(t *testing.T) {
	nodes := twoRacks(map[string]int64{"r0-n0": 8, "r0-n1": 8, "r0-n2": 8, "r1-n0": 8})
	members := []*corev1.Pod{gpuPod("m0", 8), gpuPod("m1", 8), gpuPod("m2", 8)}
	key := gang.Key{Namespace: "ml", Name: "g"}
	rack := 2 // topology.DefaultLevels: nvlink, tor, rack, zone
	if topology.DefaultLevels[rack].NodeLabel != "network.kubenexus.io/rack" {
		t.Fatalf("level %d is %s, want the rack level", rack, topology.DefaultLevels[rack].NodeLabel)
	}
	ap, st := testPlugin(t, members...).planFor(key, members[0], topology.Policy{Level: rack}, 3, nodes)
	if !st.IsSuccess() || !ap.fits {
		t.Fatalf("planFor: %v (fits %v), want a plan that holds the gang", st, ap != nil && ap.fits)
	}
	if got, want := sets.KeySet(ap.rank), sets.New("r1-n0", "r1-n1", "r1-n2", "r1-n3"); !got.Equal(want) {
		t.Errorf("plan's nodes %v, want all of rack-1 %v", sets.List(got), sets.List(want))
	}
	if got, want := sets.KeySet(ap.claims), sets.New("r1-n1", "r1-n2", "r1-n3"); !got.Equal(want) {
		t.Errorf("plan claims %v, want rack-1's free nodes %v", sets.List(got), sets.List(want))
	}

	four := append(members, gpuPod("m3", 8))
	_, st = testPlugin(t, four...).planFor(key, four[0], topology.Policy{Required: true, Level: rack}, 4, nodes)
	if want := "needs 4 members (4 × 8 nvidia.com/gpu) in one rack; the largest rack fits 3"; st.IsSuccess() || !strings.Contains(st.Message(), want) {
		t.Errorf("required rack for 4: %v, want a refusal saying %q", st, want)
	}
}

func isSuccess(_ *activePlan, st *fwk.Status) bool { return st.IsSuccess() }

// On a cluster labelled with racks, the window is made of whole racks: a gang that
// one rack of the window holds is planned there, preferred or required, and the
// next plan looks at the racks after it; a gang no rack of the window holds (the
// window's racks full, or the gang larger than a rack) is planned over every node.
func TestPlanForOnRacksPlansOverAWindowOfWholeRacks(t *testing.T) {
	const n, size = 300, 10 // 30 racks; the window (144 nodes) is 15 whole racks
	key := gang.Key{Namespace: "ml", Name: "g"}
	members := []*corev1.Pod{gpuPod("m0", 8), gpuPod("m1", 8), gpuPod("m2", 8)}
	// Every node carries a rack label.
	fresh := func(members ...*corev1.Pod) *Plugin {
		kube := filed(members...)
		for _, ni := range gpuNodes("n", n, size, func(int) bool { return false }) {
			kube = append(kube, ni.Node())
		}
		pl, _ := newPlugin(t, kube)
		return pl
	}
	racks := func(ap *activePlan) sets.Set[int] {
		out := sets.New[int]()
		for name := range ap.claims {
			var i int
			_, _ = fmt.Sscanf(name, "n%d", &i)
			out.Insert(i / size)
		}
		return out
	}
	preferred := topology.Policy{Level: len(topology.DefaultLevels) - 1}
	required := topology.Policy{Required: true, Level: 2}

	for name, policy := range map[string]topology.Policy{"preferred": preferred, "required rack": required} {
		pl := fresh(members...)
		nodes := gpuNodes("n", n, size, func(int) bool { return false })
		ap, st := pl.planFor(key, members[0], policy, 3, nodes)
		if got := racks(ap); !st.IsSuccess() || got.Len() != 1 || sets.List(got)[0] >= 15 || pl.nextStart == 0 {
			t.Fatalf("%s, first plan: %v, racks %v, next start %d; want one of the first 15 racks and the start moved on", name, st, sets.List(got), pl.nextStart)
		}
		if got := sets.KeySet(ap.rank); got.Len() != size {
			t.Errorf("%s: plan's nodes %v, want the whole rack", name, sets.List(got))
		}
		start := pl.nextStart
		ap, st = pl.planFor(gang.Key{Namespace: "ml", Name: "h"}, members[0], policy, 3, nodes)
		if got := racks(ap); !st.IsSuccess() || got.Len() != 1 || sets.List(got)[0] < start/size {
			t.Errorf("%s, second plan: %v, racks %v; want a rack from rack %d on", name, st, sets.List(got), start/size)
		}
	}

	// The first 15 racks full: the plan is over every node, in a rack past them.
	pl := fresh(members...)
	nodes := gpuNodes("n", n, size, func(i int) bool { return i < 15*size })
	ap, st := pl.planFor(key, members[0], preferred, 3, nodes)
	if got := racks(ap); !st.IsSuccess() || !ap.fits || got.Len() != 1 || sets.List(got)[0] < 15 || pl.nextStart != 0 {
		t.Errorf("window full: %v, racks %v, next start %d; want one rack past the 15th, the start unmoved", st, sets.List(got), pl.nextStart)
	}

	// A gang of 12, larger than a rack: the window would spread it over racks, the
	// plan over every node does too (and is the one taken).
	var twelve []*corev1.Pod
	for i := range 12 {
		twelve = append(twelve, gpuPod(fmt.Sprintf("b%d", i), 8))
	}
	pl = fresh(twelve...)
	nodes = gpuNodes("n", n, size, func(int) bool { return false })
	if ap, st = pl.planFor(key, twelve[0], preferred, 12, nodes); !st.IsSuccess() || !ap.fits || racks(ap).Len() != 2 || pl.nextStart != 0 {
		t.Errorf("gang of 12: %v, racks %v, next start %d; want two racks from the plan over every node", st, sets.List(racks(ap)), pl.nextStart)
	}
}

// withoutInformers is a handle without shared informers.
func withoutInformers(h fwk.Handle) fwk.Handle { return noInformers{h} }

type noInformers struct{ fwk.Handle }

func (noInformers) SharedInformerFactory() informers.SharedInformerFactory { return nil }

// gpuClass is a GPU DeviceClass (NVIDIA's name, a default GPU class) of driver's
// devices.
func gpuClass(driver string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}}}}
}

// claimMember is a member in namespace ml asking for one CPU, with the one claim pc.
func claimMember(name string, pc corev1.PodResourceClaim) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = name, "ml", types.UID("uid-"+name)
	p.Spec.Containers = []corev1.Container{{Name: "w", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{pc}
	return p
}
