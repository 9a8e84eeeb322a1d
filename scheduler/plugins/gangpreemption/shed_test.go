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

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
)

// elastic is a gang "e" of low priority with one 4-CPU member per node on n0..n3,
// the members' roles as given ("" for none).
func elastic(roles ...v1alpha1.WorkloadRole) []*corev1.Pod {
	var out []*corev1.Pod
	for i, r := range roles {
		labels := inGang("e")
		if r != "" {
			labels[v1alpha1.LabelWorkloadRole] = string(r)
		}
		out = append(out, pod(fmt.Sprintf("e-%d", i), fmt.Sprintf("n%d", i), "4", 1, labels))
	}
	return out
}

func floorOf(minMember int32, perRole map[string]int32) floorFunc {
	return func(gang.Key, int32) (int32, map[string]int32, bool) { return minMember, perRole, true }
}

func roleLabel(p *corev1.Pod) v1alpha1.WorkloadRole {
	return v1alpha1.WorkloadRole(p.Labels[v1alpha1.LabelWorkloadRole])
}

// chooseFor is the victims (keys, sorted) and the pods evicted for a gang of two
// 4-CPU members of priority 100 on four full nodes.
func chooseFor(t *testing.T, running []*corev1.Pod, floor floorFunc) ([]string, int) {
	t.Helper()
	members := []*corev1.Pod{pod("m-0", "", "4", 100, inGang("m")), pod("m-1", "", "4", 100, inGang("m"))}
	s := cluster(4, running, members)
	us := withShedding(units(running, 100, nil, anyLower(100), ownPriority, describeWith(), time.Now()), floor, roleLabel)
	c := s.choose(us)
	if c == nil {
		t.Fatal("no victims found")
	}
	_, _, pods := c.cost()
	return victims(c), pods
}

// A gang running above its minimum loses its surplus members first and keeps
// running; one at its minimum, or whose surplus is too small, goes whole.
func TestShrinkBeforeKill(t *testing.T) {
	for name, tc := range map[string]struct {
		roles   []v1alpha1.WorkloadRole
		min     int32
		perRole map[string]int32
		want    []string
		pods    int
	}{
		"4 members, minimum 2: two shed, the gang keeps 2": {
			roles: []v1alpha1.WorkloadRole{"", "", "", ""}, min: 2, want: []string{"pod ns/e-0", "pod ns/e-1"}, pods: 2},
		"4 members, minimum 3: one may go, two are needed: the gang whole": {
			roles: []v1alpha1.WorkloadRole{"", "", "", ""}, min: 3, want: []string{"gang ns/e"}, pods: 4},
		"at its minimum: the gang whole": {
			roles: []v1alpha1.WorkloadRole{"", "", "", ""}, min: 4, want: []string{"gang ns/e"}, pods: 4},
		"a driver is never shed: two executors are": {
			roles: []v1alpha1.WorkloadRole{v1alpha1.RoleDriver, v1alpha1.RoleExecutor, v1alpha1.RoleExecutor, v1alpha1.RoleExecutor},
			min:   2, want: []string{"pod ns/e-1", "pod ns/e-2"}, pods: 2},
		"workers at their role's minimum are not shed: the gang whole": {
			roles: []v1alpha1.WorkloadRole{v1alpha1.RoleWorker, v1alpha1.RoleWorker, v1alpha1.RoleWorker, v1alpha1.RoleWorker},
			min:   1, perRole: map[string]int32{"worker": 3}, want: []string{"gang ns/e"}, pods: 4},
	} {
		t.Run(name, func(t *testing.T) {
			got, pods := chooseFor(t, elastic(tc.roles...), floorOf(tc.min, tc.perRole))
			sort.Strings(tc.want)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || pods != tc.pods {
				t.Errorf("victims %v (%d pods), want %v (%d pods)", got, pods, tc.want, tc.pods)
			}
		})
	}
}

// The members shed from a gang and the gang whole are never both victims: once
// the gang goes whole, the members shed before are dropped and the disruptions
// they spent are given back.
func TestAGangWholeReplacesItsShedMembers(t *testing.T) {
	running := elastic("", "", "", "")
	members := []*corev1.Pod{pod("m-0", "", "4", 100, inGang("m")), pod("m-1", "", "4", 100, inGang("m")), pod("m-2", "", "4", 100, inGang("m"))}
	s := cluster(4, running, members)
	// A budget over the gang's pods that allows all four to go.
	s.pdbs = []*policyv1.PodDisruptionBudget{{
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "pdb-e"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: inGang("e")}},
	}}
	s.budget["pdb-e"] = 4
	c := s.choose(withShedding(units(running, 100, nil, anyLower(100), ownPriority, describeWith(), time.Now()), floorOf(2, nil), roleLabel))
	if c == nil {
		t.Fatal("no victims found: the gang whole frees room for three")
	}
	if got := victims(c); fmt.Sprint(got) != "[gang ns/e]" {
		t.Errorf("victims %v, want [gang ns/e] alone", got)
	}
	if _, _, pods := c.cost(); pods != 4 {
		t.Errorf("%d pods evicted, want the gang's 4 once", pods)
	}
}

// Victims are weighed by the GPU time lost since their last checkpoint: a pod that
// started an hour ago but checkpointed a minute ago costs less than one that
// started ten minutes ago and declares none.
func TestWorkSinceTheLastCheckpointIsWhatIsLost(t *testing.T) {
	now := time.Now()
	gpuPod := func(p *corev1.Pod, started time.Duration, annotations map[string]string) *corev1.Pod {
		p.Spec.Containers[0].Resources.Requests[v1alpha1.ResourceNvidiaGPU] = resource.MustParse("1")
		p.Status.StartTime = &metav1.Time{Time: now.Add(-started)}
		p.Annotations = annotations
		return p
	}
	running := []*corev1.Pod{
		gpuPod(pod("checkpointed", "n0", "4", 1, nil), time.Hour, map[string]string{v1alpha1.AnnotationLastCheckpoint: now.Add(-time.Minute).UTC().Format(time.RFC3339)}),
		gpuPod(pod("fresh", "n1", "4", 1, nil), 10*time.Minute, nil),
	}
	s := cluster(2, running, []*corev1.Pod{pod("high", "", "4", 100, nil)})
	c := s.choose(units(running, 100, nil, anyLower(100), ownPriority, describeWith(v1alpha1.ResourceNvidiaGPU), now))
	if c == nil || victims(c)[0] != "pod ns/checkpointed" {
		t.Fatalf("victims %v, want [pod ns/checkpointed]: it loses a minute, the other ten", c)
	}
}

// A pod within the minimum runtime it declares is no victim for a preemptor of
// its tenant tier or a lower one; a higher tier's preemptor may take it.
func TestMinimumRuntimeHoldsBackEqualTiers(t *testing.T) {
	now := time.Now()
	v := pod("young", "n0", "4", 1, nil)
	v.Status.StartTime = &metav1.Time{Time: now.Add(-10 * time.Minute)}
	v.Annotations = map[string]string{v1alpha1.AnnotationMinRuntime: "30m"}
	silver := workload.Profile{Tier: v1alpha1.TenantTierSilver}
	inSilver := func(*corev1.Pod) v1alpha1.TenantTier { return v1alpha1.TenantTierSilver }
	if !inMinRuntime(v, inSilver, silver, now) {
		t.Error("10 minutes into 30: a silver preemptor should not take a silver pod")
	}
	if inMinRuntime(v, inSilver, workload.Profile{Tier: v1alpha1.TenantTierGold}, now) {
		t.Error("a gold preemptor should take it")
	}
	if inMinRuntime(v, inSilver, silver, now.Add(time.Hour)) {
		t.Error("past its minimum runtime it should be a victim again")
	}
}
