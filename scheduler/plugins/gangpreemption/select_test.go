package gangpreemption

import (
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/nodefree"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func pod(name, node, cpu string, prio int32, labels map[string]string) *corev1.Pod {
	w := testutil.MakePod(name, "ns").UID(name).Node(node).Priority(prio).Req("cpu", cpu)
	for k, v := range labels {
		w = w.Label(k, v)
	}
	return w.Obj()
}

func inGang(g string) map[string]string {
	if g == "" {
		return nil
	}
	return map[string]string{v1alpha1.LabelPodGroup: g}
}

// cluster builds a search over nodes of 4 CPUs holding pods, for members.
func cluster(nodes int, running []*corev1.Pod, members []*corev1.Pod) *search {
	s := &search{byName: map[string]int{}, budget: map[types.UID]int32{}}
	used := map[string]int64{}
	for _, p := range running {
		used[p.Spec.NodeName] += nodefree.Requests(p)[corev1.ResourceCPU]
	}
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.nodes = append(s.nodes, node{obj: n, free: map[corev1.ResourceName]int64{corev1.ResourceCPU: 4000 - used[name], corev1.ResourcePods: 100000}})
		s.byName[name] = i
	}
	for _, p := range members {
		m := member{pod: p, req: nodefree.Requests(p), eligible: map[int]bool{}}
		for i := range s.nodes {
			m.eligible[i] = true
		}
		s.members = append(s.members, m)
	}
	return s
}

func anyLower(than int32) candidate {
	return func(_ *corev1.Pod, _ workload.Profile, prio int32) bool { return prio < than }
}

func ownPriority(p *corev1.Pod, _ *gang.Key) int32 { return corev1helpers.PodPriority(p) }

func victims(c *choice) []string {
	var out []string
	for _, u := range c.victims {
		out = append(out, u.key)
	}
	sort.Strings(out)
	return out
}

func TestGangIsEvictedWholeAndOnlyWhatIsNeeded(t *testing.T) {
	// Two gangs of four 2-CPU members fill four nodes; a gang of four 2-CPU members
	// of higher priority needs the room of exactly one.
	var running []*corev1.Pod
	for g, name := range []string{"a", "b"} {
		for i := range 4 {
			running = append(running, pod(fmt.Sprintf("%s-%d", name, i), fmt.Sprintf("n%d", (g*4+i)/2), "2", 10, inGang(name)))
		}
	}
	var members []*corev1.Pod
	for i := range 4 {
		members = append(members, pod(fmt.Sprintf("high-%d", i), "", "2", 1000, inGang("high")))
	}
	s := cluster(4, running, members)
	c := s.choose(units(running, 1000, nil, anyLower(1000), ownPriority, describeWith(), time.Now()))
	if c == nil {
		t.Fatal("no victims found")
	}
	if got := victims(c); len(got) != 1 || got[0] != "gang ns/a" {
		t.Errorf("victims %v, want [gang ns/a] (one whole gang; a sorts first)", got)
	}
	if _, _, pods := c.cost(); pods != 4 {
		t.Errorf("%d pods evicted for 4 members, want 4", pods)
	}
}

func TestAGangWithAMemberOfEqualPriorityIsNoVictim(t *testing.T) {
	running := []*corev1.Pod{
		pod("a-0", "n0", "2", 10, inGang("a")), pod("a-1", "n0", "2", 1000, inGang("a")),
		pod("b-0", "n1", "2", 10, inGang("b")), pod("b-1", "n1", "2", 10, inGang("b")),
	}
	s := cluster(2, running, []*corev1.Pod{pod("high", "", "4", 1000, nil)})
	c := s.choose(units(running, 1000, nil, anyLower(1000), ownPriority, describeWith(), time.Now()))
	if c == nil || len(victims(c)) != 1 || victims(c)[0] != "gang ns/b" {
		t.Fatalf("victims %v, want [gang ns/b]: gang a has a member the preemptor may not evict", c)
	}
	if c.nodes[0] != 1 {
		t.Errorf("nominated node n%d, want n1", c.nodes[0])
	}
}

// A gang whose policy requires one rack, with no member placed yet: the free nodes
// n1 (rack a) and n2 (rack b) would hold both members only across racks, so room
// is made inside one rack — rack b, whose victim has the lower priority — and
// never by evicting in both.
func TestAGangRequiredInOneDomainGetsRoomInsideOne(t *testing.T) {
	running := []*corev1.Pod{pod("in-a", "n0", "4", 5, nil), pod("in-b", "n3", "4", 1, nil)}
	members := []*corev1.Pod{pod("m-0", "", "4", 100, inGang("m")), pod("m-1", "", "4", 100, inGang("m"))}
	s := cluster(4, running, members)
	if s.place(nil, nil) == nil {
		t.Fatal("without scopes the members fit n1 and n2 as they are; the test's premise is wrong")
	}
	s.scopes = []map[int]bool{{0: true, 1: true}, {2: true, 3: true}}
	if at := s.place(nil, nil); at != nil {
		t.Fatalf("placed on %v with no eviction, across racks", at)
	}
	c := s.choose(units(running, 100, nil, anyLower(100), ownPriority, describeWith(), time.Now()))
	if c == nil {
		t.Fatal("no victims found")
	}
	if got := victims(c); len(got) != 1 || got[0] != "pod ns/in-b" {
		t.Errorf("victims %v, want [pod ns/in-b]", got)
	}
	var on []string
	for _, ni := range c.nodes {
		on = append(on, s.nodes[ni].obj.Name)
	}
	sort.Strings(on)
	if fmt.Sprint(on) != "[n2 n3]" {
		t.Errorf("members placed on %v, want [n2 n3] (rack b)", on)
	}
	// The rack the gang is anchored to is its only scope, even where another
	// rack's victim costs less.
	s.scopes = s.scopes[:1]
	if c := s.choose(units(running, 100, nil, anyLower(100), ownPriority, describeWith(), time.Now())); c == nil || victims(c)[0] != "pod ns/in-a" {
		t.Errorf("anchored to rack a: victims %v, want [pod ns/in-a]", c)
	}
}

func TestOnePodEvictsOnOneNodeTheCheapest(t *testing.T) {
	// n0 holds a priority-5 pod and a priority-1 pod of 2 CPUs each; n1 holds a
	// priority-1 gang of two 2-CPU members. Evicting the priority-1 pod on n0 costs
	// one pod, the gang two: n0 it is.
	running := []*corev1.Pod{
		pod("p5", "n0", "2", 5, nil), pod("p1", "n0", "2", 1, nil),
		pod("g-0", "n1", "2", 1, inGang("g")), pod("g-1", "n1", "2", 1, inGang("g")),
	}
	s := cluster(2, running, []*corev1.Pod{pod("high", "", "2", 100, nil)})
	c := s.choose(units(running, 100, nil, anyLower(100), ownPriority, describeWith(), time.Now()))
	if c == nil {
		t.Fatal("no victims found")
	}
	if got := victims(c); len(got) != 1 || got[0] != "pod ns/p1" {
		t.Errorf("victims %v, want [pod ns/p1] (one pod, not a gang of two)", got)
	}
	if s.nodes[c.nodes[0]].obj.Name != "n0" {
		t.Errorf("nominated %s, want n0", s.nodes[c.nodes[0]].obj.Name)
	}
}

func TestGPUTimeLostOutweighsSize(t *testing.T) {
	now := time.Now()
	gpu := func(p *corev1.Pod, started time.Duration) *corev1.Pod {
		p.Spec.Containers[0].Resources.Requests[v1alpha1.ResourceNvidiaGPU] = resource.MustParse("1")
		p.Status.StartTime = &metav1.Time{Time: now.Add(-started)}
		return p
	}
	// Both nodes hold one 4-CPU pod of priority 1 with a GPU: the one that started
	// an hour ago loses more GPU time than the one that started a minute ago.
	running := []*corev1.Pod{gpu(pod("old", "n0", "4", 1, nil), time.Hour), gpu(pod("new", "n1", "4", 1, nil), time.Minute)}
	s := cluster(2, running, []*corev1.Pod{pod("high", "", "4", 100, nil)})
	c := s.choose(units(running, 100, nil, anyLower(100), ownPriority, describeWith(v1alpha1.ResourceNvidiaGPU), now))
	if c == nil || victims(c)[0] != "pod ns/new" {
		t.Fatalf("victims %v, want [pod ns/new]", c)
	}
}

func TestDisruptionBudgetsAreKeptAcrossVictims(t *testing.T) {
	// Four 1-CPU pods of one app fill n0; their budget allows one disruption. A
	// 2-CPU pod cannot get room on n0, so nothing is evicted.
	var running []*corev1.Pod
	for i := range 4 {
		running = append(running, pod(fmt.Sprintf("app-%d", i), "n0", "1", 1, map[string]string{"app": "x"}))
	}
	s := cluster(1, running, []*corev1.Pod{pod("high", "", "2", 100, nil)})
	s.pdbs = []*policyv1.PodDisruptionBudget{{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "pdb"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}},
	}}
	s.budget["pdb"] = 1
	if c := s.choose(units(running, 100, nil, anyLower(100), ownPriority, describeWith(), time.Now())); c != nil {
		t.Fatalf("victims %v, want none: two evictions would break the budget", victims(c))
	}
	s.budget["pdb"] = 2
	if c := s.choose(units(running, 100, nil, anyLower(100), ownPriority, describeWith(), time.Now())); c == nil || len(c.victims) != 2 {
		t.Fatalf("victims %v, want two pods within a budget of 2", c)
	}
}

// Victims are ordered as the comment on less says: lower priority first, then less
// GPU time lost, then fewer pods, then by key.
func TestLessOrdersByPriorityThenGPUTimeThenSize(t *testing.T) {
	one := []*corev1.Pod{{}}
	two := []*corev1.Pod{{}, {}}
	for name, tc := range map[string]struct {
		a, b *unit
	}{
		"lower priority first, though it lost more GPU time": {&unit{key: "b", priority: 1, gpuSeconds: 1000, pods: two}, &unit{key: "a", priority: 2, pods: one}},
		"same priority: less GPU time first":                 {&unit{key: "b", priority: 1, gpuSeconds: 10, pods: two}, &unit{key: "a", priority: 1, gpuSeconds: 20, pods: one}},
		"same priority and GPU time: fewer pods first":       {&unit{key: "b", priority: 1, pods: one}, &unit{key: "a", priority: 1, pods: two}},
		"all alike: by key":                                  {&unit{key: "a", priority: 1, pods: one}, &unit{key: "b", priority: 1, pods: one}},
	} {
		if !less(tc.a, tc.b) || less(tc.b, tc.a) {
			t.Errorf("%s: less(a, b) %v, less(b, a) %v; want a before b", name, less(tc.a, tc.b), less(tc.b, tc.a))
		}
	}
}

// describeWith describes running pods for units, counting the GPUs of gpuNames.
func describeWith(gpuNames ...corev1.ResourceName) func(*corev1.Pod) *victim {
	return func(p *corev1.Pod) *victim {
		return newVictim(p, workload.Classify(p, workload.Namespace{}, ""), gpuNames)
	}
}

// The profile cache answers for the same pod object, classifies an updated pod
// (a new object) again, and drops pods it has not seen for a while.
func TestProfilesCache(t *testing.T) {
	var c profiles
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "a", Labels: map[string]string{v1alpha1.LabelWorkloadType: string(v1alpha1.WorkloadClassService)}}}
	describe, done := c.scan(nil)
	if got := describe(a).prof.Class; got != v1alpha1.WorkloadClassService {
		t.Fatalf("class: %q", got)
	}
	done()
	// The same object: cached (a label changed in place is not seen, as the
	// snapshot never changes an object in place).
	a.Labels[v1alpha1.LabelWorkloadType] = string(v1alpha1.WorkloadClassBatch)
	describe, done = c.scan(nil)
	if got := describe(a).prof.Class; got != v1alpha1.WorkloadClassService {
		t.Errorf("same object: want the cached class, got %q", got)
	}
	// An update is a new object.
	b := a.DeepCopy()
	if got := describe(b).prof.Class; got != v1alpha1.WorkloadClassBatch {
		t.Errorf("updated pod: want it classified again, got %q", got)
	}
	done()
	for range 2 * sweepEvery {
		_, done = c.scan(nil)
		done()
	}
	if len(c.byUID) != 0 {
		t.Errorf("pods not seen for %d scans are kept: %d entries", 2*sweepEvery, len(c.byUID))
	}
}
