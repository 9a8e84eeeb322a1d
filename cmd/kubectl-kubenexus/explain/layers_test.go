package explain

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/gang"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

const gpu = corev1.ResourceName("nvidia.com/gpu")

func check(t *testing.T, name string, got Line, verdict, text, action string) {
	t.Helper()
	if got.Verdict != verdict || got.Text != text || got.Action != action {
		t.Errorf("%s:\n got  %s | %s | %s\n want %s | %s | %s", name, got.Verdict, got.Text, got.Action, verdict, text, action)
	}
}

func TestPlacementLayers(t *testing.T) {
	now := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	st := &state{now: now}
	w := &feasibility.Workload{Tenant: v1alpha1.TenantTierGold}
	g := &group{key: &gang.Key{Namespace: "ml", Name: "llama"}}
	base := feasibility.Decision{Shapes: "4 × 8 nvidia.com/gpu", Level: "rack", Nodes: 10, Eligible: 6, Resource: gpu, Free: 48000, Need: 32000}

	for _, tc := range []struct {
		name                  string
		d                     func(d *feasibility.Decision)
		layer                 func(d *feasibility.Decision) Line
		verdict, text, action string
	}{
		{"tier: every node open", func(*feasibility.Decision) {}, func(d *feasibility.Decision) Line { return tierLine(g, w, d) },
			OK, "tenant tier gold: 6 nodes of 10 open to the pods", ""},
		{"tier: some nodes are a tier's that refuses the tenant", func(d *feasibility.Decision) { d.TierRefused, d.RefusingTiers = 4, []string{"h100"} },
			func(d *feasibility.Decision) Line { return tierLine(g, w, d) },
			OK, "tenant tier gold: 6 nodes open to the pods; 4 nodes more belong to HardwareTier h100, which does not admit it", ""},
		{"tier: refused everywhere", func(d *feasibility.Decision) {
			d.Eligible, d.TierRefused, d.RefusingTiers = 0, 6, []string{"a100", "h100"}
		},
			func(d *feasibility.Decision) Line { return tierLine(g, w, d) },
			Blocked, "tenant tier gold: HardwareTiers a100 and h100 refuse it on all 6 nodes the pods could otherwise use",
			"run it from a namespace of a tenant tier that they allow (label tenant.kubenexus.io/tier), or allow gold there"},
		{"tier: no node takes the pods at all", func(d *feasibility.Decision) { d.Eligible = 0 },
			func(d *feasibility.Decision) Line { return tierLine(g, w, d) },
			Blocked, "none of the 10 nodes takes the pods: their node selector, affinity, tolerations or Kueue flavor rule every one out",
			"relax the pods' node selector or affinity, or add the tolerations their nodes' taints need"},
		{"topology: fits now", func(d *feasibility.Decision) { d.Fits, d.Domains = true, []string{"rack-2"} },
			func(d *feasibility.Decision) Line { return topologyLine(g, st, d) }, OK, "fits in rack rack-2 now", ""},
		{"topology: no rack holds it", func(d *feasibility.Decision) {
			d.Short = &placement.Shortage{Need: 4, BestFits: 3, BestDomain: "rack-1"}
		},
			func(d *feasibility.Decision) Line { return topologyLine(g, st, d) }, Blocked, "one rack must hold all 4: the largest holds 3 (rack-1)",
			"wait for room in one rack, lower the gang's size, or make co-location preferred (scheduling.kubenexus.io/co-locate=preferred, or spec.networkTopology.mode on the PodGroup)"},
		{"topology: held to the rack of its placed members", func(d *feasibility.Decision) { d.Short = &placement.Shortage{Need: 2, BestFits: 1, Anchored: "rack-0"} },
			func(d *feasibility.Decision) Line { return topologyLine(g, st, d) }, Blocked, "its bound members run in rack rack-0, which holds 1 of the 2 still needed", ""},
		{"topology: none required", func(d *feasibility.Decision) { d.Level = feasibility.Anywhere },
			func(d *feasibility.Decision) Line { return topologyLine(g, st, d) }, None, "no topology domain required: the members may spread", ""},
		{"capacity: too little", func(d *feasibility.Decision) { d.Free = 16000 },
			func(d *feasibility.Decision) Line { return capacityLine(d, g, st) }, Blocked, "16 nvidia.com/gpu free on the nodes open to them, 32 needed (4 × 8 nvidia.com/gpu)", ""},
		{"capacity: too little, with no domain required", func(d *feasibility.Decision) {
			d.Level, d.Free, d.Short = feasibility.Anywhere, 16000, &placement.Shortage{Need: 4, BestFits: 2}
		},
			func(d *feasibility.Decision) Line { return capacityLine(d, g, st) }, Blocked,
			"16 nvidia.com/gpu free on the nodes open to them, 32 needed (4 × 8 nvidia.com/gpu); they hold 2 of the 4 members", ""},
		{"capacity: enough, in pieces, with no domain required", func(d *feasibility.Decision) {
			d.Level, d.Short = feasibility.Anywhere, &placement.Shortage{Need: 4, BestFits: 1}
		},
			func(d *feasibility.Decision) Line { return capacityLine(d, g, st) }, Blocked,
			"48 nvidia.com/gpu free on the nodes open to them, 32 needed (4 × 8 nvidia.com/gpu): enough in total, but in pieces that hold 1 of the 4 members", ""},
		{"capacity: CPU in millicores", func(d *feasibility.Decision) {
			d.Resource, d.Free, d.Need, d.Shapes = corev1.ResourceCPU, 1500, 4000, "4 × 1000m cpu"
		},
			func(d *feasibility.Decision) Line { return capacityLine(d, g, st) }, Blocked, "1500m cpu free on the nodes open to them, 4000m needed (4 × 1000m cpu)", ""},
		{"start: known", func(d *feasibility.Decision) {
			d.Start, d.Domains, d.StartWhen = now.Add(90*time.Minute), []string{"rack-1"}, "when running pods reach their runtime bounds"
		},
			func(d *feasibility.Decision) Line { return startLine(d, st) }, Waiting,
			"earliest 2026-11-27T02:30:00Z (in 1h30m0s), in rack rack-1, when running pods reach their runtime bounds", ""},
		{"start: known, anywhere, a reservation expiring", func(d *feasibility.Decision) {
			d.Level, d.Start, d.StartWhen = feasibility.Anywhere, now.Add(time.Minute), "when ResourceReservations of others expire"
		},
			func(d *feasibility.Decision) Line { return startLine(d, st) }, Waiting,
			"earliest 2026-11-27T01:01:00Z (in 1m0s), when ResourceReservations of others expire", ""},
		{"start: unknown", func(*feasibility.Decision) {}, func(d *feasibility.Decision) Line { return startLine(d, st) }, Unknown,
			"no time can be given: pods in its way have no runtime bound (spec.activeDeadlineSeconds or kueue.x-k8s.io/max-exec-time-seconds)", ""},
		{"start: behind the queue", func(*feasibility.Decision) {}, func(d *feasibility.Decision) Line {
			return queuedStartLine(d, st, &queueForecast{Forecast: placement.Forecast{OK: true, Start: now.Add(2 * time.Hour), Started: []string{"ml/a", "ml/b"}}, queued: 3})
		}, Waiting, "earliest 2026-11-27T03:00:00Z (in 2h0m0s), behind 3 gangs queued ahead (2 of them start first); assumes running pods end at their runtime bounds, gangs ahead run to theirs", ""},
		{"start: gangs ahead hold the room for good", func(*feasibility.Decision) {}, func(d *feasibility.Decision) Line {
			return queuedStartLine(d, st, &queueForecast{Forecast: placement.Forecast{Started: []string{"ml/a"}, Unbounded: []string{"ml/a"}}, queued: 1})
		}, Unknown, "no time can be given: of the 1 gang queued ahead, ml/a would start first and has no runtime bound (spec.activeDeadlineSeconds or kueue.x-k8s.io/max-exec-time-seconds)", ""},
		{"start: never, with gangs ahead", func(*feasibility.Decision) {}, func(d *feasibility.Decision) Line {
			return queuedStartLine(d, st, &queueForecast{queued: 2})
		}, Unknown, "no time can be given: pods in its way have no runtime bound (spec.activeDeadlineSeconds or kueue.x-k8s.io/max-exec-time-seconds) (2 gangs queued ahead)", ""},
	} {
		d := base
		tc.d(&d)
		check(t, tc.name, tc.layer(&d), tc.verdict, tc.text, tc.action)
	}
}

func TestTopologyOfAGangKueuePlaced(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train-0", Namespace: "ml", Annotations: map[string]string{
		v1alpha1.AnnotationKueueWorkload: "job-train-5f2c1", v1alpha1.AnnotationKueueRequiredTopology: v1alpha1.LabelRack}}}
	g := &group{pending: []*corev1.Pod{pod}}
	d := feasibility.Decision{Level: feasibility.Anywhere, Fits: true}
	check(t, "fits", topologyLine(g, &state{}, &d), OK,
		"Kueue's topology-aware scheduling chose the domains (Workload job-train-5f2c1): the pods' node selectors hold them", "")
	d.Fits = false
	check(t, "does not fit", topologyLine(g, &state{}, &d), Blocked,
		"Kueue's topology-aware scheduling chose the domains (Workload job-train-5f2c1): the pods' node selectors hold them; the nodes they name do not hold the pods now", "")
}

func TestCapacityCountsOnePod(t *testing.T) {
	d := feasibility.Decision{Shapes: "1 × 4000m cpu", Level: feasibility.Anywhere, Eligible: 1, Resource: corev1.ResourceCPU, Free: 2000, Need: 4000,
		Short: &placement.Shortage{Need: 1}}
	check(t, "one pod that does not fit", capacityLine(&d, &group{}, &state{}), Blocked,
		"2000m cpu free on the nodes open to them, 4000m needed (1 × 4000m cpu); they hold 0 of the 1 pod", "")
}

func TestGangAndQueueLayers(t *testing.T) {
	now := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	st := &state{now: now}
	key := &gang.Key{Namespace: "ml", Name: "llama"}
	pending := func(n int) []*corev1.Pod {
		out := make([]*corev1.Pod, n)
		for i := range out {
			out[i] = &corev1.Pod{}
		}
		return out
	}
	pg := &v1alpha1.PodGroup{Status: v1alpha1.PodGroupStatus{Conditions: []metav1.Condition{{
		Type: v1alpha1.PodGroupConditionScheduled, Status: metav1.ConditionFalse, Reason: "InsufficientCapacity", LastTransitionTime: metav1.NewTime(now.Add(-3 * time.Minute))}}}}
	check(t, "gang: waiting, with the PodGroup's reason", gangLine(&group{key: key, pg: pg, min: 4, members: make([]corev1.Pod, 4), pending: pending(4)}, st),
		Waiting, "0 of its quorum of 4 bound, 4 waiting for a node; InsufficientCapacity for 3m0s", "")
	repairing := &v1alpha1.PodGroup{Status: v1alpha1.PodGroupStatus{Conditions: []metav1.Condition{{
		Type: v1alpha1.PodGroupConditionRepairing, Status: metav1.ConditionTrue, Reason: v1alpha1.RepairCauseNodeLost, LastTransitionTime: metav1.NewTime(now.Add(-20 * time.Second)),
		Message: "Lost 1 member(s) of the 4 it needs (NodeLost on n3): their room is held in rack=r1 for the replacements (ResourceReservation llama-repair) for 5m0s; then the gang is restarted whole."}}}}
	check(t, "gang: repairing", gangLine(&group{key: key, pg: repairing, min: 4, members: make([]corev1.Pod, 3), bound: 3}, st),
		Waiting, "3 of 4 members exist (3 of its quorum of 4 bound, 0 waiting for a node): the gang waits for the rest to be created; repairing (NodeLost) for 20s: Lost 1 member(s) of the 4 it needs (NodeLost on n3): their room is held in rack=r1 for the replacements (ResourceReservation llama-repair) for 5m0s; then the gang is restarted whole.",
		"the workload's controller creates the replacements; spec.recovery of the PodGroup bounds how long before the gang is restarted whole")
	check(t, "gang: members missing", gangLine(&group{key: key, min: 4, members: make([]corev1.Pod, 2), pending: pending(2)}, st),
		Waiting, "2 of 4 members exist (0 of its quorum of 4 bound, 2 waiting for a node): the gang waits for the rest to be created",
		"check that the job's controller creates all its pods, or lower the gang's minMember")
	rolePod := func(role, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelWorkloadRole: role}}, Spec: corev1.PodSpec{NodeName: node}}
	}
	roles := &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{MinMember: 3, MinMemberPerRole: map[string]int32{"driver": 1, "executor": 2}}}
	execs := []corev1.Pod{rolePod("executor", ""), rolePod("executor", ""), rolePod("executor", "")}
	check(t, "gang: a role without members", gangLine(&group{key: key, pg: roles, min: 3, members: execs, pending: pending(3)}, st),
		Waiting, "0 of its quorum of 3 bound, 3 waiting for a node: the gang waits for members of every role its PodGroup requires (roles short: driver 0/1)",
		"check that the job's controller creates the pods of each role (label workload.kubenexus.io/role names a pod's role), or lower spec.minMemberPerRole")
	boundExecs := []corev1.Pod{rolePod("executor", "n1"), rolePod("executor", "n1"), rolePod("executor", "n2"), rolePod("driver", "")}
	check(t, "gang: minMember bound, a role not", gangLine(&group{key: key, pg: roles, min: 3, members: boundExecs, bound: 3, pending: pending(1)}, st),
		Waiting, "3 of its quorum of 3 bound, 1 waiting for a node; roles short: driver 0/1 bound", "")
	boundExecs[3].Spec.NodeName = "n2"
	check(t, "gang: every role bound", gangLine(&group{key: key, pg: roles, min: 3, members: boundExecs, bound: 4}, st),
		OK, "quorum bound: 4 of its quorum of 3 bound, 0 waiting for a node", "")
	check(t, "gang: no PodGroup", gangLine(&group{key: key}, st), Blocked, "its pods name PodGroup llama, which does not exist", "create PodGroup llama in ml with spec.minMember")
	check(t, "gang: none", gangLine(&group{}, st), None, "in no gang", "")

	cond := func(typ string, status metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Message: msg}
	}
	wl := func(conds []metav1.Condition, checks ...kueue.AdmissionCheckState) *kueue.Workload {
		return &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-llama"}, Spec: kueue.WorkloadSpec{QueueName: "team"},
			Status: kueue.WorkloadStatus{Conditions: conds, AdmissionChecks: checks, Admission: &kueue.Admission{ClusterQueue: "gpus"}}}
	}
	check(t, "queue: no Kueue", queue(&group{}, nil), None, "not queued by Kueue", "")
	placement := map[string]bool{"placement": true}
	check(t, "queue: waiting for quota", queue(&group{wl: wl([]metav1.Condition{cond(kueue.WorkloadQuotaReserved, metav1.ConditionFalse, "insufficient quota for nvidia.com/gpu")})}, placement),
		Blocked, "Workload job-llama waits for quota in LocalQueue team: insufficient quota for nvidia.com/gpu", "more quota (nominal or borrowable) in its ClusterQueue, or fewer workloads ahead of it")
	check(t, "queue: the placement check said Retry (its reasons are other lines')", queue(&group{wl: wl([]metav1.Condition{cond(kueue.WorkloadQuotaReserved, metav1.ConditionTrue, "")},
		kueue.AdmissionCheckState{Name: "placement", State: kueue.CheckStateRetry, Message: "4 × 8 nvidia.com/gpu: …; 8 nvidia.com/gpu free on those nodes, 32 needed"})}, placement),
		Blocked, "Workload job-llama has quota in ClusterQueue gpus; admission check placement: Retry (the topology and capacity lines say why)", "")
	check(t, "queue: another check's message is quoted", queue(&group{wl: wl([]metav1.Condition{cond(kueue.WorkloadQuotaReserved, metav1.ConditionTrue, "")},
		kueue.AdmissionCheckState{Name: "prov", State: kueue.CheckStatePending, Message: "waiting for nodes"})}, placement),
		Waiting, "Workload job-llama has quota in ClusterQueue gpus; admission check prov: Pending (waiting for nodes)", "")
	check(t, "queue: admitted", queue(&group{wl: wl([]metav1.Condition{cond(kueue.WorkloadQuotaReserved, metav1.ConditionTrue, ""), cond(kueue.WorkloadAdmitted, metav1.ConditionTrue, "")})}, placement),
		OK, "Workload job-llama admitted by ClusterQueue gpus", "")
}

func TestAdmissionLayer(t *testing.T) {
	pod := func(labels, annotations map[string]string, scheduler string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "p", Labels: labels, Annotations: annotations}, Spec: corev1.PodSpec{SchedulerName: scheduler}}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelTenantTier: "silver"}}}
	skipped := pod(map[string]string{"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/job-name": "llama", "training.kubeflow.org/operator-name": "pytorchjob-controller"},
		map[string]string{v1alpha1.AnnotationAutoGangSkipped: "PyTorchJob llama not found"}, v1alpha1.DefaultSchedulerName)
	st := &state{cluster: &feasibility.Cluster{}}
	check(t, "admission: auto-gang skipped", admission(&group{members: []corev1.Pod{skipped}, ns: ns}, st),
		OK, "training (pytorch worker), tenant tier silver; not ganged: PyTorchJob llama not found", "set scheduling.kubenexus.io/min-member on the pod template to gang its pods")
	other := pod(nil, nil, "default-scheduler")
	fits := &feasibility.Decision{Fits: true, Eligible: 1, Nodes: 1, Level: feasibility.Anywhere}
	if ls := placementLines(&group{pending: []*corev1.Pod{&other}}, st, &feasibility.Workload{}, fits); ls[len(ls)-1].Text != "they fit now: default-scheduler (not KubeNexus) decides when and where" {
		t.Errorf("start line for another scheduler's pod: %+v", ls[len(ls)-1])
	}
	check(t, "admission: another scheduler", admission(&group{members: []corev1.Pod{other}, ns: ns}, st),
		None, "service, tenant tier silver; in no gang: each pod is placed on its own; scheduled by default-scheduler, not KubeNexus",
		"label namespace ml kubenexus.io/enabled=true so that the webhook sends its pods to kubenexus-scheduler")
	bad := pod(map[string]string{v1alpha1.LabelKubeNexusGangName: "g", v1alpha1.LabelKubeNexusGangMinAvailable: "lots"}, nil, v1alpha1.DefaultSchedulerName)
	if l := admission(&group{members: []corev1.Pod{bad}}, st); l.Verdict != Blocked || l.Action != "fix the pod template's gang labels" {
		t.Errorf("admission: invalid gang labels: %+v", l)
	}

	// Tiers from ClusterQueues (spec.kueue.tenantTierFrom): the admitting queue's tier
	// label, else the namespace's, as the scheduler reads them.
	admitted := func(cq string) *kueue.Workload {
		return &kueue.Workload{Status: kueue.WorkloadStatus{Admission: &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(cq)}}}
	}
	fromQueue := &state{cluster: &feasibility.Cluster{TierFromClusterQueue: true},
		queueLabels: map[string]map[string]string{"gold-cq": {v1alpha1.LabelTenantTier: "gold"}, "plain-cq": {}}}
	for _, tc := range []struct {
		name string
		wl   *kueue.Workload
		st   *state
		want string
	}{
		{"the gold queue's tier", admitted("gold-cq"), fromQueue, "tenant tier gold"},
		{"a queue without a tier: the namespace's", admitted("plain-cq"), fromQueue, "tenant tier silver"},
		{"not admitted: the namespace's", nil, fromQueue, "tenant tier silver"},
		{"tiers from namespaces", admitted("gold-cq"), st, "tenant tier silver"},
	} {
		if l := admission(&group{members: []corev1.Pod{other}, ns: ns, wl: tc.wl}, tc.st); !strings.Contains(l.Text, tc.want) {
			t.Errorf("admission, %s: %q, want %q", tc.name, l.Text, tc.want)
		}
	}
}

// Pods alike in what placement looks at are one pod set, whatever else differs.
func TestWorkloadGroupsPodsByShape(t *testing.T) {
	pod := func(name, cpu string, selector map[string]string) *corev1.Pod {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"index": name}},
			Spec: corev1.PodSpec{NodeSelector: selector, Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}},
				Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl}}}}}
	}
	g := &group{pending: []*corev1.Pod{pod("a", "1", nil), pod("b", "1000m", nil), pod("c", "2", nil), pod("d", "1", map[string]string{"pool": "x"})}}
	w := g.workload(&state{cluster: &feasibility.Cluster{}}, 4)
	var counts []int
	for _, ps := range w.PodSets {
		counts = append(counts, ps.Count)
	}
	if fmt.Sprint(counts) != "[2 1 1]" {
		t.Errorf("pod sets %v, want [2 1 1]: a and b alike (1 CPU = 1000m), c and d each apart", counts)
	}
}

func TestPreemptionLine(t *testing.T) {
	prio := func(n int32) *int32 { return &n }
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		gpu: resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourcePods: resource.MustParse("110")}}}
	running := func(name string, p int32, labels map[string]string) corev1.Pod {
		rl := corev1.ResourceList{gpu: resource.MustParse("8")}
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, Labels: labels},
			Spec:   corev1.PodSpec{NodeName: "n0", Priority: prio(p), Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: now}}} // just started: no work to lose
	}
	waiting := func(p int32, never bool) *corev1.Pod {
		rl := corev1.ResourceList{gpu: resource.MustParse("8")}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "w", Labels: map[string]string{v1alpha1.LabelWorkloadType: "training"}},
			Spec: corev1.PodSpec{Priority: prio(p), Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: no running pod or gang of lower priority may be evicted for it."}}}}
		if never {
			policy := corev1.PreemptNever
			pod.Spec.PreemptionPolicy = &policy
		}
		return pod
	}
	said := "; the scheduler's last attempt: no running pod or gang of lower priority may be evicted for it"
	started := func(p corev1.Pod, ago time.Duration, annotations map[string]string) corev1.Pod {
		p.Status.StartTime = &metav1.Time{Time: now.Add(-ago)}
		p.Annotations = annotations
		return p
	}
	inGang := func(p corev1.Pod, name string) corev1.Pod {
		p.Labels = maps.Clone(p.Labels)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[v1alpha1.LabelPodGroup] = name
		return p
	}
	bigGang := waiting(0, false)
	bigGang.Labels[v1alpha1.LabelPodGroup] = "big"
	cheapGang := waiting(100, false)
	cheapGang.Labels[v1alpha1.LabelPodGroup] = "cheap"
	batch := map[string]string{v1alpha1.LabelWorkloadType: "batch"}
	for _, tc := range []struct {
		name          string
		pods          []corev1.Pod
		pending       *corev1.Pod
		services      bool
		verdict, text string
	}{
		// The PodGroup "big" names a class of 2000001000, "cheap" one of 5
		// (gangValues below): GangPreemption weighs pods at their gang's class, never
		// above their own.
		{"a PodGroup's class lifts no preemptor", []corev1.Pod{running("low", 10, batch)}, bigGang, false,
			None, "no running pod it may evict has a priority below 0" + said},
		{"a preemptor's PodGroup class lowers it", []corev1.Pod{running("low", 10, batch)}, cheapGang, false,
			None, "no running pod it may evict has a priority below 5" + said},
		{"a victim's PodGroup class lowers it", []corev1.Pod{inGang(running("cheap-0", 500, batch), "cheap")}, waiting(100, false), false,
			None, "evicting pods of priority below 100 (1 run now) would make room on the cluster" + said},
		{"a gang is evicted whole or not at all", []corev1.Pod{inGang(running("mixed-0", 10, batch), "mixed"), inGang(running("mixed-1", 200, batch), "mixed")}, waiting(100, false), false,
			None, "no running pod it may evict has a priority below 100" + said},
		{"a batch pod of lower priority holds the room", []corev1.Pod{running("low", 10, map[string]string{v1alpha1.LabelWorkloadType: "batch"})}, waiting(100, false), false,
			None, "evicting pods of priority below 100 (1 run now) would make room on the cluster" + said},
		{"a service of lower priority is spared for training", []corev1.Pod{running("web", 10, map[string]string{v1alpha1.LabelWorkloadType: "service"})}, waiting(100, false), false,
			None, "no running pod it may evict has a priority below 100 (1 service pod of lower priority is spared: batch does not evict services unless spec.plugins.gangPreemption.preemptServicesForBatch)" + said},
		{"unless the KubeNexusConfig allows it", []corev1.Pod{running("web", 10, map[string]string{v1alpha1.LabelWorkloadType: "service"})}, waiting(100, false), true,
			None, "evicting pods of priority below 100 (1 run now) would make room on the cluster" + said},
		{"equal priority is no victim", []corev1.Pod{running("peer", 100, map[string]string{v1alpha1.LabelWorkloadType: "batch"})}, waiting(100, false), false,
			None, "no running pod it may evict has a priority below 100" + said},
		{"never preempts", []corev1.Pod{running("low", 10, nil)}, waiting(100, true), false, None, "the pods never preempt (preemptionPolicy: Never)"},
		{"the work lost since the victims' checkpoints", []corev1.Pod{started(running("low", 10, batch), 3*time.Hour, map[string]string{
			v1alpha1.AnnotationLastCheckpoint: now.Add(-30 * time.Minute).Format(time.RFC3339)})}, waiting(100, false), false,
			None, "evicting pods of priority below 100 (1 run now) would make room on the cluster; at most 4.0 GPU-hours since their last checkpoints would be lost" + said},
		{"a pod within its minimum runtime is spared for its own tier", []corev1.Pod{started(running("young", 10, batch), 10*time.Minute, map[string]string{
			v1alpha1.AnnotationMinRuntime: "1h"})}, waiting(100, false), false,
			None, "no running pod it may evict has a priority below 100 (1 pod of lower priority is within the minimum runtime it declares, workload.kubenexus.io/min-runtime, against a tier not above its own)" + said},
	} {
		c := &feasibility.Cluster{Nodes: []corev1.Node{node}, Requested: map[string]corev1.ResourceList{}, PreemptServicesForBatch: tc.services}
		// The one running pod holds the node's 8 GPUs.
		c.Requested["n0"] = corev1.ResourceList{gpu: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("1")}
		gangValues := map[gang.Key]int32{{Namespace: "ml", Name: "big"}: 2000001000, {Namespace: "ml", Name: "cheap"}: 5}
		st := &state{cluster: c, pods: tc.pods, now: now, gangValue: func(k gang.Key) *int32 {
			if v, ok := gangValues[k]; ok {
				return &v
			}
			return nil
		}}
		g := &group{pending: []*corev1.Pod{tc.pending}}
		w := g.workload(st, 1)
		check(t, tc.name, preemptionLine(g, st, w), tc.verdict, tc.text, "")
	}
}

func TestNUMALine(t *testing.T) {
	d := feasibility.Decision{Eligible: 2, NUMARefused: 6, NUMAWhy: "node a: single-numa: no NUMA cell with 48 CPUs free; best cell has 32 CPUs"}
	check(t, "some nodes' cells too small", numaLine(&d), OK,
		"NUMA: 2 nodes open can hold the pods under their NUMA policy; the cells of 6 nodes more cannot (node a: single-numa: no NUMA cell with 48 CPUs free; best cell has 32 CPUs)", "")
	d.Eligible = 0
	check(t, "all too small", numaLine(&d), Blocked,
		"NUMA: the cells of all 6 nodes otherwise open to the pods cannot hold one under its NUMA policy, even with nothing else on them (node a: single-numa: no NUMA cell with 48 CPUs free; best cell has 32 CPUs)",
		"ask for less per pod, loosen numa.scheduling.kubenexus.io/policy (restricted or best-effort), or select nodes with larger NUMA cells")
}

func TestNodeLine(t *testing.T) {
	d := feasibility.Decision{GPUMemory: 70 << 30, Eligible: 2, MemoryRefused: 6}
	check(t, "some nodes too small", nodeLine(&d), OK, "70Gi of GPU memory per GPU: 2 nodes open have it; the GPUs of 6 nodes more have less", "")
	d.Eligible = 0
	check(t, "all too small", nodeLine(&d), Blocked,
		"70Gi of GPU memory per GPU (scheduling.kubenexus.io/vram-request): the GPUs of all 6 nodes otherwise open to the pods have less (their nvidia.com/gpu.memory or gpu.kubenexus.io/vram labels, else their DRA devices' memory)",
		"lower scheduling.kubenexus.io/vram-request, or select nodes with larger GPUs")
	w := &feasibility.Workload{Tenant: v1alpha1.TenantTierGold}
	// The tier line counts those nodes as open: the node line says why they are not.
	if l := tierLine(&group{}, w, &feasibility.Decision{Nodes: 8, MemoryRefused: 6}); l.Verdict != OK || l.Text != "tenant tier gold: 6 nodes of 8 open to the pods" {
		t.Errorf("tier line beside a memory refusal: %+v", l)
	}
}

func TestSchedulerLine(t *testing.T) {
	now := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	st := &state{now: now, namespaceView: true}
	refused := func(name, msg string, ago time.Duration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg,
			LastTransitionTime: metav1.NewTime(now.Add(-ago))}}}}
	}
	more := "the placement layers (tier, topology, capacity, preemption, start) need cluster-wide read: ask for the ClusterRole kubenexus-explain"
	pg := &v1alpha1.PodGroup{Status: v1alpha1.PodGroupStatus{Conditions: []metav1.Condition{{Type: v1alpha1.PodGroupConditionScheduled,
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInsufficientCapacity, Message: "17 members need 136 GPUs; 120 are free"}}}}

	g := &group{members: make([]corev1.Pod, 3), pending: []*corev1.Pod{
		refused("a", "0/10 nodes are available: 10 Insufficient cpu.", 30*time.Second),
		refused("b", "0/10 nodes are available: 10 Insufficient cpu.", 10*time.Second),
		refused("c", "0/10 nodes are available: 4 node(s) had untolerated taint.", 40*time.Second),
	}}
	check(t, "the newest refusal, and how many share it", schedulerLine(g, st), Blocked,
		"Unschedulable, 10s ago, of 3 pods waiting: 0/10 nodes are available: 10 Insufficient cpu. (2 of them with this message)", more)

	g.pending, g.pg = g.pending[:1], pg
	check(t, "the PodGroup's own condition beside it", schedulerLine(g, st), Blocked,
		"Unschedulable, 30s ago, of 1 pod waiting: 0/10 nodes are available: 10 Insufficient cpu.; PodGroup InsufficientCapacity: 17 members need 136 GPUs; 120 are free", more)

	g = &group{members: make([]corev1.Pod, 2), pending: []*corev1.Pod{{}, {}}}
	check(t, "not tried yet", schedulerLine(g, st), Waiting, "2 pods waiting, not refused yet: the scheduler has not reported on them", more)

	g = &group{members: make([]corev1.Pod, 2), gated: 2}
	check(t, "gated", schedulerLine(g, st), Waiting, "2 pods behind scheduling gates: the scheduler tries them once the gates are lifted", "")

	g = &group{members: make([]corev1.Pod, 2), bound: 2}
	check(t, "all bound", schedulerLine(g, st), OK, "no pod waits for a node (2 bound)", "")
}
