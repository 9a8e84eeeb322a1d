package feasibility

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-nexus/kubenexus/api/hardware"
	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/placement/numa"
)

const gpu = corev1.ResourceName("nvidia.com/gpu")

// fleet is n 8-GPU nodes, in racks of perRack, each with usedGPUs held.
func fleet(n, perRack int, usedGPUs func(i int) int64) *Cluster {
	c := &Cluster{Requested: map[string]corev1.ResourceList{}, Levels: topology.DefaultLevels}
	for i := range n {
		name := fmt.Sprintf("n%02d", i)
		c.Nodes = append(c.Nodes, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				v1alpha1.LabelRack: fmt.Sprintf("rack-%d", i/perRack), "pool": "gpu"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), gpu: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}},
		})
		if u := usedGPUs(i); u > 0 {
			c.Requested[name] = corev1.ResourceList{gpu: *resource.NewQuantity(u, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("1")}
		}
	}
	return c
}

func job(count int, gpus string, required string) *Workload {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), gpu: resource.MustParse(gpus)}
	return &Workload{ClusterQueue: "cq", Tenant: v1alpha1.TenantTierGold, PodSets: []PodSet{{
		Name: "main", Count: count, RequiredTopology: required,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}}}},
	}}}
}

func TestDecide(t *testing.T) {
	half := func(int) int64 { return 4 }
	for _, tc := range []struct {
		name    string
		cluster *Cluster
		w       *Workload
		fits    bool
		message string
	}{
		{"64 GPUs free in halves cannot hold 8 × 8", fleet(16, 4, half), job(8, "8", ""), false,
			"8 × 8 nvidia.com/gpu: the nodes they may use hold 0 of the 8 pods now; 64 nvidia.com/gpu free on those nodes, but fragmented"},
		{"but 16 × 4 fit", fleet(16, 4, half), job(16, "4", ""), true, "16 × 4 nvidia.com/gpu fit on the cluster's free capacity now"},
		{"8 free nodes hold 8 × 8", fleet(16, 4, func(i int) int64 { return int64(i%2) * 8 }), job(8, "8", ""), true, "8 × 8 nvidia.com/gpu fit on the cluster's free capacity now"},
		{"in one rack: the free nodes are spread over four racks", fleet(16, 4, func(i int) int64 { return int64(i%2) * 8 }), job(4, "8", v1alpha1.LabelRack), false,
			"needs 4 members (4 × 8 nvidia.com/gpu) in one rack; the largest rack fits 2; 64 nvidia.com/gpu free on those nodes, but fragmented"},
		{"one rack of four free nodes", fleet(16, 4, func(i int) int64 { return map[bool]int64{true: 0, false: 8}[i < 4] }), job(4, "8", v1alpha1.LabelRack), true,
			"4 × 8 nvidia.com/gpu fit in rack rack-0 now"},
		{"not enough at all", fleet(2, 4, half), job(4, "8", ""), false,
			"4 × 8 nvidia.com/gpu: the nodes they may use hold 0 of the 4 pods now; 8 nvidia.com/gpu free on those nodes, 32 needed"},
	} {
		d := Decide(tc.cluster, tc.w)
		if d.Fits != tc.fits || !strings.Contains(d.Message, tc.message) {
			t.Errorf("%s: fits %v %q, want %v %q", tc.name, d.Fits, d.Message, tc.fits, tc.message)
		}
	}
}

func TestDecideHonoursTiersFlavorsAndTaints(t *testing.T) {
	c := fleet(4, 4, func(int) int64 { return 0 })
	// Two nodes in a tier for another ClusterQueue, one tainted, one left.
	c.Nodes[0].Labels["hw"], c.Nodes[1].Labels["hw"] = "reserved", "reserved"
	c.Tiers = []v1alpha1.HardwareTier{{ObjectMeta: metav1.ObjectMeta{Name: "reserved"}, Spec: v1alpha1.HardwareTierSpec{
		Rank: 10, NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"hw": "reserved"}},
		AllowedTenantTiers: []v1alpha1.TenantTier{v1alpha1.TenantTierGold}, AllowedClusterQueues: []string{"other"},
	}}}
	c.Nodes[2].Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	if d := Decide(c, job(2, "8", "")); d.Fits || !strings.Contains(d.Message, "hold 1 of the 2 pods") {
		t.Errorf("two 8-GPU pods with one usable node: %+v", d)
	}
	if d := Decide(c, job(1, "8", "")); !d.Fits {
		t.Errorf("one 8-GPU pod: %+v", d)
	}
	// A flavor whose node labels no usable node has.
	c.FlavorLabels = map[string]map[string]string{"a100": {"pool": "a100"}}
	w := job(1, "8", "")
	w.PodSets[0].Flavors = []string{"a100"}
	if d := Decide(c, w); d.Fits {
		t.Errorf("flavor a100 on gpu-pool nodes: %+v", d)
	}
	// A flavor whose tolerations let its pods onto the tainted node.
	c.FlavorLabels = map[string]map[string]string{"gpu": {"pool": "gpu"}}
	c.FlavorTolerations = map[string][]corev1.Toleration{"gpu": {{Key: "maintenance", Operator: corev1.TolerationOpExists}}}
	w = job(2, "8", "")
	w.PodSets[0].Flavors = []string{"gpu"}
	if d := Decide(c, w); !d.Fits {
		t.Errorf("flavor gpu tolerating the taint: %+v", d)
	}
	// The other ClusterQueue may use the reserved nodes.
	w = job(3, "8", "")
	w.ClusterQueue = "other"
	if d := Decide(c, w); !d.Fits {
		t.Errorf("ClusterQueue other on its tier: %+v", d)
	}
}

// GPUs published only as DRA devices that a DeviceClass maps to nvidia.com/gpu
// (no nvidia.com/gpu in the nodes' allocatable) count as the nodes' GPUs.
func TestDecideCountsGPUsBackedByDRA(t *testing.T) {
	c := fleet(4, 4, func(i int) int64 { return map[bool]int64{true: 8, false: 0}[i == 0] })
	for i := range c.Nodes {
		delete(c.Nodes[i].Status.Allocatable, gpu)
	}
	if d := Decide(c, job(3, "8", "")); d.Fits {
		t.Fatalf("without the devices counted: fits %q, want no room", d.Message)
	}
	c.Extended = func(string) map[corev1.ResourceName]int64 { return map[corev1.ResourceName]int64{gpu: 8} }
	if d := Decide(c, job(3, "8", "")); !d.Fits {
		t.Errorf("three of four nodes' 8 DRA GPUs free: %q, want 3 × 8 to fit", d.Message)
	}
	if d := Decide(c, job(4, "8", "")); d.Fits || !strings.Contains(d.Message, "24 nvidia.com/gpu free on those nodes, 32 needed") {
		t.Errorf("four members, three nodes free: fits %v %q", d.Fits, d.Message)
	}
}

// A job that does not fit now gets the earliest time it would, from the runtime
// bounds of the pods in its way, and the facts explain shows one per line.
func TestDecideGivesTheEarliestStartAndTheFacts(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	// 8 nodes in racks of 4, every GPU in use.
	c := fleet(8, 4, func(int) int64 { return 8 })
	eightGPUs := corev1.ResourceList{gpu: resource.MustParse("8")}
	w := job(4, "8", v1alpha1.LabelRack)
	d := Decide(c, w)
	if d.Fits || !d.Start.IsZero() || strings.Contains(d.Message, "would fit") {
		t.Fatalf("no pod bounded: %+v, want no fit and no start", d)
	}
	if d.Eligible != 8 || d.TierRefused != 0 || d.Level != "rack" || d.Short == nil || d.Short.BestFits != 0 || d.Free != 0 || d.Need != 32000 || d.Resource != gpu {
		t.Errorf("facts: %+v", d)
	}
	// Rack 1's pods end at 20, 30, 40 and 50 minutes; only three of rack 0's are bounded.
	c.Bounded = map[string][]Bounded{}
	for i := 1; i < 8; i++ {
		c.Bounded[fmt.Sprintf("n%02d", i)] = []Bounded{{Ends: t0.Add(time.Duration(10*i) * time.Minute), Requests: eightGPUs}}
	}
	d = Decide(c, w)
	if d.Fits || !d.Start.Equal(t0.Add(70*time.Minute)) || len(d.Domains) != 1 || d.Domains[0] != "rack-1" {
		t.Fatalf("start %v in %v, want %v in rack-1 (%s)", d.Start, d.Domains, t0.Add(70*time.Minute), d.Message)
	}
	if want := "; they would fit in rack rack-1 by 2026-11-27T02:10:00Z, when running pods reach their runtime bounds"; !strings.HasSuffix(d.Message, want) {
		t.Errorf("message %q, want it to end with %q", d.Message, want)
	}
	// A HardwareTier for silver only over rack 1: gold's job has no start; the tier is named.
	for i := 4; i < 8; i++ {
		c.Nodes[i].Labels["hw"] = "silver"
	}
	c.Tiers = []v1alpha1.HardwareTier{{ObjectMeta: metav1.ObjectMeta{Name: "silver-pool"}, Spec: v1alpha1.HardwareTierSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"hw": "silver"}}, AllowedTenantTiers: []v1alpha1.TenantTier{v1alpha1.TenantTierSilver}}}}
	d = Decide(c, w)
	if !d.Start.IsZero() || d.Eligible != 4 || d.TierRefused != 4 || fmt.Sprint(d.RefusingTiers) != "[silver-pool]" {
		t.Errorf("gold job beside a silver tier: start %v, eligible %d, refused %d by %v", d.Start, d.Eligible, d.TierRefused, d.RefusingTiers)
	}
}

// Pods that ask for more GPU memory per GPU than a node's GPUs have (by its labels)
// cannot use it; nodes that publish no memory label are not refused here.
func TestDecideHonoursGPUMemory(t *testing.T) {
	c := fleet(4, 4, func(int) int64 { return 0 })
	c.Nodes[0].Labels[v1alpha1.LabelGPUMemory] = "40960" // 40Gi A100s
	c.Nodes[1].Labels[v1alpha1.LabelGPUMemory] = "40960"
	c.Nodes[2].Labels[v1alpha1.LabelGPUMemory] = "81920"
	w := job(3, "8", "")
	w.PodSets[0].Template.Annotations = map[string]string{v1alpha1.AnnotationVRAMRequest: "70Gi"}
	d := Decide(c, w)
	if d.Fits || d.Eligible != 2 || d.MemoryRefused != 2 || d.GPUMemory != 70<<30 {
		t.Errorf("3 pods of 70Gi GPUs, 2 nodes with 40Gi GPUs: fits %v, eligible %d, refused for memory %d, memory %d", d.Fits, d.Eligible, d.MemoryRefused, d.GPUMemory)
	}
	w.PodSets[0].Count = 2
	if d := Decide(c, w); !d.Fits {
		t.Errorf("2 pods on the 80 GB node and the unlabelled one: %q", d.Message)
	}
	// A node without the labels whose ResourceSlices publish the GPUs' memory: 48Gi
	// cards are too small; 96Gi ones are not.
	dev := func(mem string) hardware.Device {
		return hardware.Device{Driver: "gpu.nvidia.com", Capacity: map[string]resource.Quantity{"gpu.nvidia.com/memory": resource.MustParse(mem)}}
	}
	c.Devices = func(node string) []hardware.Device {
		if node == "n03" {
			return []hardware.Device{dev("48Gi"), dev("48Gi")}
		}
		return nil
	}
	if d := Decide(c, w); d.Fits || d.MemoryRefused != 3 {
		t.Errorf("n03's devices have 48Gi: fits %v, refused for memory %d", d.Fits, d.MemoryRefused)
	}
	c.Devices = func(node string) []hardware.Device { return []hardware.Device{dev("48Gi"), dev("96Gi")} }
	if d := Decide(c, w); !d.Fits || d.MemoryRefused != 2 {
		t.Errorf("n03's devices include a 96Gi card: fits %v, refused for memory %d", d.Fits, d.MemoryRefused)
	}
	// A malformed request is the webhook's and the scheduler's to report: no refusal here.
	w.PodSets[0].Template.Annotations[v1alpha1.AnnotationVRAMRequest] = "lots"
	w.PodSets[0].Count = 4
	if d := Decide(c, w); !d.Fits || d.MemoryRefused != 0 || d.GPUMemory != 0 {
		t.Errorf("a malformed memory request: fits %v, refused %d, memory %d", d.Fits, d.MemoryRefused, d.GPUMemory)
	}
}

// A pod whose NUMA policy no cell of a node could meet even with nothing else on it
// cannot use that node: the node's labels or its NodeResourceTopology say how large
// its cells are, the pod's hint or the kubelet's policy (the stricter) how it must fit.
func TestDecideHonoursNUMA(t *testing.T) {
	c := fleet(4, 4, func(int) int64 { return 0 })
	c.Nodes[0].Labels[v1alpha1.LabelNUMANodeCount] = "4" // 16 CPUs a cell
	c.Nodes[1].Labels[v1alpha1.LabelNUMANodeCount] = "4"
	c.Nodes[2].Labels[v1alpha1.LabelNUMANodeCount] = "2" // 32 CPUs a cell
	for i := range c.Nodes {
		c.Nodes[i].Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("256Gi")
	}
	c.GPUResources = []corev1.ResourceName{gpu}
	cell := func(id int) numa.Cell {
		return numa.Cell{ID: id, Allocatable: numa.Amounts{corev1.ResourceCPU: 32000, gpu: 4}}
	}
	c.NUMA = map[string]*numa.Topology{"n03": {Source: "NodeResourceTopology n03", Cells: []numa.Cell{cell(0), cell(1)}, KubeletPolicy: v1alpha1.NUMAPolicySingleNUMA}}
	pods := func(count int, cpus string, hint v1alpha1.NUMAPolicy) *Workload {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpus), corev1.ResourceMemory: resource.MustParse("8Gi"), gpu: resource.MustParse("1")}
		w := job(count, "1", "")
		w.PodSets[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
		if hint != "" {
			w.PodSets[0].Template.Annotations = map[string]string{v1alpha1.AnnotationNUMAPolicy: string(hint)}
		}
		return w
	}
	d := Decide(c, pods(3, "24", v1alpha1.NUMAPolicySingleNUMA))
	if !d.Fits || d.Eligible != 2 || d.NUMARefused != 2 || d.NUMAWhy != "node n00: single-numa: no NUMA cell with 24 CPUs free; best cell has 16 CPUs" {
		t.Errorf("24 CPUs in one cell, two nodes of 16-CPU cells: fits %v, eligible %d, refused %d %q", d.Fits, d.Eligible, d.NUMARefused, d.NUMAWhy)
	}
	if d := Decide(c, pods(5, "24", v1alpha1.NUMAPolicySingleNUMA)); d.Fits {
		t.Errorf("5 pods of 24 CPUs on the two nodes whose cells hold them (64 CPUs each): %q", d.Message)
	}
	// Without a hint only the kubelet's policy (n03's) applies: 40 CPUs fit no cell there.
	if d := Decide(c, pods(1, "40", "")); !d.Fits || d.NUMARefused != 1 || !strings.HasPrefix(d.NUMAWhy, "node n03: single-numa: no NUMA cell with 40 CPUs") {
		t.Errorf("40 CPUs, no hint: fits %v, refused %d %q", d.Fits, d.NUMARefused, d.NUMAWhy)
	}
	// restricted lets a pod span the fewest cells that hold it; n03's kubelet policy
	// is stricter there.
	if d := Decide(c, pods(1, "40", v1alpha1.NUMAPolicyRestricted)); !d.Fits || d.NUMARefused != 1 || !strings.HasPrefix(d.NUMAWhy, "node n03: single-numa: ") {
		t.Errorf("restricted 40 CPUs: only n03's kubelet policy (single-numa) refuses; fits %v, refused %d %q", d.Fits, d.NUMARefused, d.NUMAWhy)
	}
}

// Room a ResourceReservation holds for another gang is not free; the owner's own pods
// may use it; a reservation that expires gives its room back then.
func TestDecideHonoursReservations(t *testing.T) {
	now := time.Now()
	c := fleet(2, 4, func(int) int64 { return 0 })
	rr := func(node, owner string, slots, consumed int32, expires *metav1.Time) v1alpha1.ResourceReservation {
		r := v1alpha1.ResourceReservation{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: owner + "-" + node}}
		r.Spec.Owner = v1alpha1.ReservationOwner{Kind: v1alpha1.ReservationOwnerPodGroup, Name: owner}
		r.Spec.Slots = slots
		r.Spec.Resources = corev1.ResourceList{gpu: resource.MustParse("4")}
		r.Status = v1alpha1.ResourceReservationStatus{Phase: v1alpha1.ReservationReserved, NodeName: node, ConsumedSlots: consumed, ExpireTime: expires}
		return r
	}
	// Two slots of 4 GPUs held on each node for the gang "other", one consumed on n01;
	// a reservation that has expired holds nothing.
	c.Held = heldBy([]v1alpha1.ResourceReservation{
		rr("n00", "other", 2, 0, nil),
		rr("n01", "other", 2, 1, &metav1.Time{Time: now.Add(10 * time.Minute)}),
		rr("n01", "old", 1, 0, &metav1.Time{Time: now.Add(-time.Minute)}),
	}, now)
	if len(c.Held) != 2 {
		t.Fatalf("held: %+v", c.Held)
	}
	w := job(1, "8", "")
	d := Decide(c, w)
	if d.Fits || d.Free != 4000 {
		t.Errorf("8 GPUs where the reservations leave 0 and 4 free: fits %v, free %d", d.Fits, d.Free)
	}
	// n01's reservation expires in 10 minutes: the gang fits then.
	if !d.Start.Equal(now.Add(10*time.Minute)) || d.StartWhen != "when ResourceReservations of others expire" {
		t.Errorf("start %v %q, want when n01's reservation expires (%v)", d.Start, d.StartWhen, now.Add(10*time.Minute))
	}
	w.Gang = &types.NamespacedName{Namespace: "ml", Name: "other"}
	if d := Decide(c, w); !d.Fits {
		t.Errorf("the owner's own pods may use the room: %q", d.Message)
	}
}

// GPUs NVIDIA's DRA driver publishes (no nvidia.com/gpu in allocatable) count by their
// whole free cards, and pods ask for them through their claim templates: n0 has one
// of its four 80Gi GPUs partly used by a 20Gi share, n1 none; pods of 2 whole GPUs
// fit three, not four.
func TestDecideCountsDRAGPUs(t *testing.T) {
	gpuDevice := func(name string) hardware.Device {
		return hardware.Device{Driver: "gpu.nvidia.com", Pool: "p", Name: name, Shared: true,
			Capacity: map[string]resource.Quantity{"gpu.nvidia.com/memory": resource.MustParse("80Gi")}}
	}
	alloc := hardware.NewClaimAllocation([]*resourceapi.ResourceClaim{{Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
			Driver: "gpu.nvidia.com", Pool: "p", Device: "n0-gpu-1", ShareID: ptr.To(types.UID("s")),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("20Gi")}}}}}}}})
	cards := map[string]*hardware.GPUs{}
	c := &Cluster{Requested: map[string]corev1.ResourceList{}, Levels: topology.DefaultLevels}
	for _, name := range []string{"n0", "n1"} {
		c.Nodes = append(c.Nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourcePods: resource.MustParse("110")}}})
		var devs []hardware.Device
		for g := range 4 {
			devs = append(devs, gpuDevice(fmt.Sprintf("%s-gpu-%d", name, g)))
		}
		cards[name] = hardware.NewGPUs(devs, []bool{true, true, true, true}, nil, alloc)
	}
	c.Cards = func(n string) *hardware.GPUs { return cards[n] }
	pods := func(count int) *Workload {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
		return &Workload{ClusterQueue: "cq", Tenant: v1alpha1.TenantTierGold, PodSets: []PodSet{{Name: "main", Count: count, DRAGPUs: 2,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl}}}}}}}}
	}
	if d := Decide(c, pods(3)); !d.Fits {
		t.Errorf("3 × 2 DRA GPUs on 3 + 4 whole free GPUs: %s, want them to fit", d.Message)
	}
	d := Decide(c, pods(4))
	if want := "4 × 2 nvidia.com/gpu: the nodes they may use hold 3 of the 4 pods now; 7 nvidia.com/gpu free on those nodes, 8 needed"; d.Fits || !strings.Contains(d.Message, want) {
		t.Errorf("4 × 2 DRA GPUs: fits %v %q, want %q", d.Fits, d.Message, want)
	}

	// Evicting the inference pod whose claim holds the share of n0-gpu-1 frees it.
	devs := map[string][]hardware.Device{}
	flags := map[string][]bool{}
	for _, name := range []string{"n0", "n1"} {
		for g := range 4 {
			devs[name] = append(devs[name], gpuDevice(fmt.Sprintf("%s-gpu-%d", name, g)))
		}
		flags[name] = []bool{true, true, true, true}
	}
	claim := &resourceapi.ResourceClaim{Status: resourceapi.ResourceClaimStatus{
		Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
			Driver: "gpu.nvidia.com", Pool: "p", Device: "n0-gpu-1", ShareID: ptr.To(types.UID("s")),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("20Gi")}}}}},
		ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "infer", UID: "infer-uid"}}}}
	gc := hardware.NewGPUCards(devs, flags, nil, []*resourceapi.ResourceClaim{claim})
	c.Cards, c.CardsWithout = gc.Of, gc.Without
	infer := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "infer", Namespace: "serve", UID: "infer-uid"}, Spec: corev1.PodSpec{NodeName: "n0"}}
	if d := Decide(c.Without([]*corev1.Pod{infer}), pods(4)); !d.Fits {
		t.Errorf("4 × 2 DRA GPUs once the pod holding a share is evicted: %s, want them to fit", d.Message)
	}
	if d := Decide(c, pods(4)); d.Fits {
		t.Errorf("Without changed the cluster it was called on")
	}
}

// The domains a decision names are those of the required level, read from that
// level's node label — whatever lower level the plan found room at.
func TestDecideNamesDomainsByTheRequiredLevel(t *testing.T) {
	c := &Cluster{Requested: map[string]corev1.ResourceList{}, Levels: topology.DefaultLevels}
	for i := range 2 {
		name := fmt.Sprintf("n%d", i)
		labels := map[string]string{}
		for _, l := range topology.DefaultLevels {
			labels[l.NodeLabel] = fmt.Sprintf("%s-%d", l.Name, i)
		}
		c.Nodes = append(c.Nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), gpu: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}}})
	}
	c.Requested["n0"] = corev1.ResourceList{gpu: resource.MustParse("8")} // only n1 has room
	for _, l := range topology.DefaultLevels {
		t.Run(l.Name, func(t *testing.T) {
			d := Decide(c, job(1, "8", l.NodeLabel))
			want := l.Name + "-1"
			if !d.Fits || d.Level != l.Name || len(d.Domains) != 1 || d.Domains[0] != want {
				t.Fatalf("fits %v in %s %v, want %s %s (%s)", d.Fits, d.Level, d.Domains, l.Name, want, d.Message)
			}
			if msg := fmt.Sprintf("fit in %s %s now", l.Name, want); !strings.Contains(d.Message, msg) {
				t.Errorf("message %q, want %q", d.Message, msg)
			}
		})
	}
}

// A gang whose members run in a domain of its required level must be completed
// there, as the scheduler's plan holds it to its anchors: a replacement for a lost
// member does not "fit" in another rack.
func TestDecideKeepsAPlacedGangToItsDomain(t *testing.T) {
	// rack-0 (n00–n03) is full, rack-1 (n04–n07) free.
	c := fleet(8, 4, func(i int) int64 { return map[bool]int64{true: 8, false: 0}[i < 4] })
	placed := []string{"n00", "n01", "n02"}

	w := job(1, "8", v1alpha1.LabelRack)
	w.PlacedOn = placed
	d := Decide(c, w)
	if d.Fits || d.Short == nil || d.Short.Anchored != "rack-0" || d.Anchored != "rack-0" || d.Free != 0 || d.Need != 8000 {
		t.Fatalf("fits %v, anchored %q/%+v, free %d need %d: want no fit in rack-0 with 0 free (%s)", d.Fits, d.Anchored, d.Short, d.Free, d.Need, d.Message)
	}
	if want := "in rack-0, where its placed members run; it fits 0"; !strings.Contains(d.Message, want) {
		t.Errorf("message %q, want it to contain %q", d.Message, want)
	}
	// A fresh gang fits in the free rack.
	if d := Decide(c, job(1, "8", v1alpha1.LabelRack)); !d.Fits || d.Domains[0] != "rack-1" || d.Anchored != "" {
		t.Errorf("a fresh gang: fits %v in %v (%s), want rack-1", d.Fits, d.Domains, d.Message)
	}
	// A gang that only prefers one rack may go elsewhere.
	w = job(1, "8", "")
	w.PlacedOn = placed
	if d := Decide(c, w); !d.Fits {
		t.Errorf("a preferred gang with placed members: no fit (%s)", d.Message)
	}
}
