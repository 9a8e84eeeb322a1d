package resourcefragmentation

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/resourcereservation"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

func gpuPod(name string, gpus int64) *corev1.Pod {
	w := testutil.MakePod(name, "ml").UID(name).SchedulerName("kubenexus-scheduler").Req("cpu", "1")
	if gpus > 0 {
		w = w.GPUs(gpus)
	}
	return w.Obj()
}

// node has 8 GPUs, used of them requested by a bound pod.
func node(name string, used int64) gpuNode {
	n := gpuNode{node: testutil.MakeNode(name).Capacity("cpu", "64", string(gpu), "8").Obj()}
	if used > 0 {
		b := gpuPod(name+"-used", used)
		b.Spec.NodeName = name
		n.pods = append(n.pods, b)
	}
	return n
}

// best scores pod on nodes as the framework would and returns the winner.
func best(t *testing.T, pl *Plugin, pod *corev1.Pod, nodes []fwk.NodeInfo) string {
	t.Helper()
	cs := schedframework.NewCycleState()
	if st := pl.PreScore(context.Background(), cs, pod, nodes); !st.IsSuccess() {
		t.Fatalf("PreScore: %v", st)
	}
	var scores fwk.NodeScoreList
	for _, ni := range nodes {
		s, st := pl.Score(context.Background(), cs, pod, ni)
		if !st.IsSuccess() {
			t.Fatalf("Score: %v", st)
		}
		scores = append(scores, fwk.NodeScore{Name: ni.Node().Name, Score: s})
	}
	if st := pl.NormalizeScore(context.Background(), cs, pod, scores); !st.IsSuccess() {
		t.Fatal(st)
	}
	win := scores[0]
	for _, s := range scores[1:] {
		if s.Score > win.Score {
			win = s
		}
	}
	return fmt.Sprintf("%s=%d", win.Name, win.Score)
}

func TestSmallPodGoesWhereFragmentationIs(t *testing.T) {
	pod := gpuPod("one", 1)
	nodes := []gpuNode{node("pristine", 0), node("six-used", 6)}
	// past-2 and past-8 arrived earlier and have been placed since: arrivals only.
	pl, s := newPlugin(t, setup{nodes: nodes, queued: []*corev1.Pod{pod}, arrived: []*corev1.Pod{gpuPod("past-2", 2), gpuPod("past-8", 8)}})
	if got := best(t, pl, pod, infos(t, s, nodes...)); got != "six-used=100" {
		t.Errorf("1-GPU pod went to %s, want six-used=100", got)
	}
}

func TestQueuedWholeNodeDemandKeepsPristineNodesWhole(t *testing.T) {
	// Twelve 4-GPU arrivals weigh the expectation toward 4-GPU tasks, for which a
	// half-used node is worth keeping (by fragmentation alone the 1-GPU pod would
	// split the pristine node); one 8-GPU pod is queued, and only one node can host it.
	var past []*corev1.Pod
	for i := range 12 {
		past = append(past, gpuPod(fmt.Sprintf("past-4-%d", i), 4))
	}
	pod := gpuPod("one", 1)
	nodes := []gpuNode{node("pristine", 0), node("half-used", 4)}
	pl, s := newPlugin(t, setup{nodes: nodes, queued: []*corev1.Pod{gpuPod("waiting-8", 8), pod}, arrived: past})
	if got := best(t, pl, pod, infos(t, s, nodes...)); got != "half-used=100" {
		t.Errorf("with an 8-GPU pod queued, the 1-GPU pod went to %s, want half-used=100", got)
	}
	// Two pristine nodes for one queued 8-GPU pod: splitting one is allowed, and the
	// half-used node (worth keeping for 4-GPU tasks) is spared.
	nodes = append(nodes, node("pristine-2", 0))
	addNode(t, s, nodes[2])
	if got := best(t, pl, pod, infos(t, s, nodes...)); got != "pristine=100" {
		t.Errorf("with two whole nodes for one queued 8-GPU pod, the 1-GPU pod went to %s, want pristine=100 (a whole node to spare; the half-used node kept for 4-GPU tasks)", got)
	}
}

func TestCPUPodsAreSkippedWithoutGPUDemand(t *testing.T) {
	pl, s := newPlugin(t, setup{nodes: []gpuNode{node("a", 0)}})
	cs := schedframework.NewCycleState()
	if st := pl.PreScore(context.Background(), cs, gpuPod("cpu", 0), infos(t, s, node("a", 0))); !st.IsSkip() {
		t.Errorf("PreScore for a CPU pod with no GPU pod expected: %v, want Skip", st)
	}
	// GPU pods expected, but none of the pod's nodes has a GPU free.
	pl, s = newPlugin(t, setup{nodes: []gpuNode{node("full", 8)}, arrived: []*corev1.Pod{shapedPod("past", 1, "4", "16Gi")}})
	if st := pl.PreScore(context.Background(), cs, gpuPod("cpu", 0), infos(t, s, node("full", 8))); !st.IsSkip() {
		t.Errorf("PreScore for a CPU pod whose nodes have no GPU free: %v, want Skip", st)
	}
}

// A pod that asks for no GPU takes the CPU that GPU tasks need beside their GPUs: it
// goes where taking it strands no GPU — a node without GPUs free, or one whose CPU is
// more than its free GPUs need — and not where it eats into the CPU those GPUs need.
func TestCPUPodsLeaveGPUsTheirCPU(t *testing.T) {
	var past []*corev1.Pod
	for i := range 4 {
		past = append(past, shapedPod(fmt.Sprintf("past-%d", i), 1, "8", "32Gi"))
	}
	pod := shapedPod("cpu-task", 0, "16", "16Gi")
	// 8 GPUs free each; their tasks need 64 CPUs. "tight" has 64: every core taken
	// strands GPUs. "ample" has 96: 32 to spare. "used-up" has its GPUs taken.
	tight, ample := sizedNode("tight", "64", "512Gi", 0), sizedNode("ample", "96", "512Gi", 0)
	usedUp := sizedNode("used-up", "64", "512Gi", 8)
	pl, s := newPlugin(t, setup{nodes: []gpuNode{tight, ample}, arrived: past})
	if got := best(t, pl, pod, infos(t, s, tight, ample)); got != "ample=100" {
		t.Errorf("the CPU pod went to %s, want ample=100 (its spare CPU strands no GPU)", got)
	}
	pl, s = newPlugin(t, setup{nodes: []gpuNode{tight, usedUp}, arrived: past})
	if got := best(t, pl, pod, infos(t, s, tight, usedUp)); got != "used-up=100" {
		t.Errorf("the CPU pod went to %s, want used-up=100 (no GPU free to strand)", got)
	}
}

func TestTrackerQueuesAndForgets(t *testing.T) {
	tr := newTracker("kubenexus-scheduler", []corev1.ResourceName{gpu}, 600)
	p := gpuPod("a", 8)
	tr.observe(p, true)
	other := gpuPod("b", 8)
	other.Spec.SchedulerName = "default-scheduler"
	tr.observe(other, true)
	if _, q := tr.snapshot(""); q[8] != 1 {
		t.Fatalf("queued %v, want one 8-GPU pod (the other scheduler's pod is not ours)", q)
	}
	if _, q := tr.snapshot("a"); len(q) != 0 {
		t.Errorf("the pod being scheduled counts itself: %v", q)
	}
	bound := p.DeepCopy()
	bound.Spec.NodeName = "n1"
	tr.observe(bound, false)
	d, q := tr.snapshot("")
	if len(q) != 0 || len(d) != 1 || d[0].GPUs != 8 || d[0].Weight <= 0 {
		t.Errorf("after binding: queued %v demand %v; want none queued and the arrival remembered", q, d)
	}
}

// A node that takes a queued size's last host is ranked below the others without
// flattening their ranking.
func TestNormalizeKeepsTheRankingBesideAPenalizedNode(t *testing.T) {
	pl, _ := newPlugin(t, setup{})
	scores := fwk.NodeScoreList{
		{Name: "penalized", Score: -breakPenalty - 500},
		{Name: "worse", Score: -3000},
		{Name: "better", Score: -1000},
	}
	if st := pl.NormalizeScore(context.Background(), nil, nil, scores); !st.IsSuccess() {
		t.Fatal(st)
	}
	want := map[string]int64{"penalized": 19, "worse": 20, "better": 100}
	for _, s := range scores {
		if s.Score != want[s.Name] {
			t.Errorf("%s: %d, want %d", s.Name, s.Score, want[s.Name])
		}
	}
}

// Tasks that need a large node are a shape of their own, not averaged into the many
// small ones of the same GPU count: a node without their CPU strands GPUs for them.
func TestDemandKeepsLargeShapesApart(t *testing.T) {
	tr := newTracker("kubenexus-scheduler", []corev1.ResourceName{gpu}, 600)
	task := func(name string, cpu string) *corev1.Pod {
		p := gpuPod(name, 8)
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		return p
	}
	for i := range 9 {
		tr.observe(task(fmt.Sprintf("small-%d", i), "64"), true)
	}
	tr.observe(task("large", "120"), true)
	d, _ := tr.snapshot("")
	if len(d) != 2 {
		t.Fatalf("demand %+v, want two shapes of 8 GPUs (64 and 120 CPUs)", d)
	}
	for _, n := range d {
		// Means of decayed weights: within a milli-CPU of the class's own CPU.
		if (n.MilliCPU < 63999 || n.MilliCPU > 64001) && (n.MilliCPU < 119999 || n.MilliCPU > 120001) {
			t.Errorf("shape %+v: CPU averaged across classes", n)
		}
	}
}

// A wholly free multi-node NVLink domain is kept for the tasks that take whole nodes:
// a 1-GPU pod goes to a free node of a domain already in use.
func TestFreeNVLinkDomainsStayWhole(t *testing.T) {
	inClique := func(n gpuNode, clique string) gpuNode {
		n.node.Labels = map[string]string{"nvidia.com/gpu.clique": clique}
		return n
	}
	cluster := []gpuNode{
		inClique(node("a-0", 0), "a"), inClique(node("a-1", 0), "a"),
		inClique(node("b-0", 4), "b"), inClique(node("b-1", 0), "b"),
	}
	pod := gpuPod("one", 1)
	// Whole-node tasks (8 GPUs) have arrived: domain a stays whole, and by
	// fragmentation alone b-1 (pristine) and a's nodes would tie below b-0, so the
	// pod goes to b-0.
	pl, s := newPlugin(t, setup{nodes: cluster, queued: []*corev1.Pod{pod}, arrived: []*corev1.Pod{gpuPod("past-8", 8)}})
	nodes := infos(t, s, cluster...)
	got := best(t, pl, pod, nodes)
	if got != "b-0=100" {
		t.Errorf("1-GPU pod went to %s, want b-0=100 (domain a kept whole)", got)
	}
	// Domain a's nodes rank in the lower band.
	cs := schedframework.NewCycleState()
	if st := pl.PreScore(context.Background(), cs, pod, nodes); !st.IsSuccess() {
		t.Fatal(st)
	}
	sa, _ := pl.Score(context.Background(), cs, pod, nodes[0])
	sb, _ := pl.Score(context.Background(), cs, pod, nodes[3])
	if sa >= sb || sa > -breakPenalty/2 {
		t.Errorf("a-0 scored %d, b-1 %d: a free domain's node should rank below", sa, sb)
	}
	// With only 1-GPU work in the demand there are no whole-node tasks to keep a
	// domain for.
	pl, s = newPlugin(t, setup{nodes: cluster, queued: []*corev1.Pod{pod}, arrived: []*corev1.Pod{gpuPod("past-1", 1)}})
	nodes = infos(t, s, cluster...)
	cs = schedframework.NewCycleState()
	if st := pl.PreScore(context.Background(), cs, pod, nodes); !st.IsSuccess() {
		t.Fatal(st)
	}
	if sa, _ := pl.Score(context.Background(), cs, pod, nodes[0]); sa <= -breakPenalty/2 {
		t.Errorf("without whole-node demand a-0 is still penalised (%d)", sa)
	}
}

// Room that a reservation of another owner holds is not free to the pod: a 1-GPU pod
// that would take the fragmented node's last 2 GPUs goes to the pristine node once
// those 2 are held.
func TestReservedRoomIsNotFree(t *testing.T) {
	pod := gpuPod("one", 1)
	nodes := []gpuNode{node("reserved", 6), node("open", 0)}
	c := setup{nodes: nodes, queued: []*corev1.Pod{pod}, arrived: []*corev1.Pod{gpuPod("past-2", 2), gpuPod("past-8", 8)}}
	pl, s := newPlugin(t, c)
	if got := best(t, pl, pod, infos(t, s, nodes...)); got != "reserved=100" {
		t.Fatalf("without reservations the fragmented node wins: got %s, want reserved=100", got)
	}
	// A reservation of another owner holds 2 GPUs on "reserved".
	c.reservations = resourcereservation.NewSharedOf([]v1alpha1.ResourceReservation{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "hold", CreationTimestamp: metav1.Now()},
		Spec: v1alpha1.ResourceReservationSpec{Owner: v1alpha1.ReservationOwner{Kind: v1alpha1.ReservationOwnerPodGroup, Name: "theirs"},
			NodeName: "reserved", Slots: 1, Resources: corev1.ResourceList{gpu: resource.MustParse("2")}},
	}})
	pl, s = newPlugin(t, c)
	if got := best(t, pl, pod, infos(t, s, nodes...)); got != "open=100" {
		t.Errorf("with the reserved node's free GPUs held: got %s, want open=100", got)
	}
}

// shapedPod asks for gpus, cpu and memory.
func shapedPod(name string, gpus int64, cpu, mem string) *corev1.Pod {
	p := gpuPod(name, gpus)
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
	return p
}

// sizedNode has 8 GPUs, cpu and memory, used GPUs of them requested by a bound pod.
func sizedNode(name, cpu, mem string, used int64) gpuNode {
	n := node(name, used)
	n.node.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpu)
	n.node.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse(mem)
	return n
}

func TestTheOnlyHostOfTheLargestTasksIsKeptWhole(t *testing.T) {
	// Recent arrivals: six 4-GPU tasks and two 8-GPU tasks of 120 CPUs and 720Gi that
	// only the large node hosts. FGD alone would split the large node for a 1-GPU
	// pod (it strands 7 GPUs for a quarter of the demand there, against 3 for three
	// quarters on a half-used node); the large node is the only host of the 8-GPU
	// tasks, and more of them are expected than there are hosts.
	var past []*corev1.Pod
	for i := range 6 {
		past = append(past, shapedPod(fmt.Sprintf("past-4-%d", i), 4, "16", "64Gi"))
	}
	for i := range 2 {
		past = append(past, shapedPod(fmt.Sprintf("past-big-%d", i), 8, "120", "720Gi"))
	}
	pod := shapedPod("one", 1, "4", "16Gi")
	nodes := []gpuNode{sizedNode("large", "128", "768Gi", 0)}
	for i := range 4 {
		nodes = append(nodes, sizedNode(fmt.Sprintf("half-used-%d", i), "96", "384Gi", 4))
	}
	pl, s := newPlugin(t, setup{nodes: nodes, queued: []*corev1.Pod{pod}, arrived: past})
	if got := best(t, pl, pod, infos(t, s, nodes...)); got != "half-used-0=100" {
		t.Errorf("the 1-GPU pod went to %s, want half-used-0=100 (the large node kept whole)", got)
	}
}

// GPU pods are scored against the whole fleet and are never signable; a CPU pod is
// signable while no GPU pod is expected (the plugin skips it then) and not while
// one is.
func TestSignPod(t *testing.T) {
	signable := func(pl *Plugin, pod *corev1.Pod) bool {
		frags, st := pl.SignPod(context.Background(), pod)
		if len(frags) != 0 {
			t.Errorf("%s: fragments %v, want none", pod.Name, frags)
		}
		return st.IsSuccess()
	}
	withQueued := func(queued ...*corev1.Pod) *Plugin {
		pl, _ := newPlugin(t, setup{queued: queued})
		return pl
	}
	if signable(withQueued(), gpuPod("gpu", 1)) {
		t.Error("a GPU pod is signable, want refused")
	}
	if !signable(withQueued(), gpuPod("cpu", 0)) {
		t.Error("a CPU pod with no GPU pod expected is refused, want signable")
	}
	if signable(withQueued(gpuPod("queued", 2)), gpuPod("cpu", 0)) {
		t.Error("a CPU pod while a GPU pod is queued is signable, want refused")
	}
}

// The rooms kept across cycles follow what the scheduler changes in place: a pod
// added to a node (its NodeInfo's generation moves) and a Node object replaced.
func TestKeptRoomsFollowTheNodesChanges(t *testing.T) {
	pod := gpuPod("one", 1)
	pl, s := newPlugin(t, setup{nodes: []gpuNode{node("a", 0), node("b", 6)}, queued: []*corev1.Pod{pod}, arrived: []*corev1.Pod{gpuPod("past-2", 2), gpuPod("past-8", 8)}})
	// The snapshot's NodeInfos, which the scheduler changes in place.
	nodes := infos(t, s, node("a", 0), node("b", 6))
	b := nodes[1]
	if got := best(t, pl, pod, nodes); got != "b=100" {
		t.Fatalf("1-GPU pod went to %s, want b=100 (the broken node)", got)
	}
	filler := gpuPod("filler", 2)
	filler.Spec.NodeName = "b"
	b.(*schedframework.NodeInfo).AddPod(filler)
	// b has no GPU left: Score says it does not fit, and a wins.
	if got := best(t, pl, pod, nodes); got != "a=100" {
		t.Errorf("after b filled up, the 1-GPU pod went to %s, want a=100", got)
	}
	if err := b.(*schedframework.NodeInfo).RemovePod(klog.Background(), filler); err != nil {
		t.Fatal(err)
	}
	full := testutil.MakeNode("b").Capacity("cpu", "64", string(gpu), "6").Obj()
	b.(*schedframework.NodeInfo).SetNode(full) // 6 GPUs, 6 used
	if got := best(t, pl, pod, nodes); got != "a=100" {
		t.Errorf("after b's Node shrank to 6 GPUs, the 1-GPU pod went to %s, want a=100", got)
	}
}
