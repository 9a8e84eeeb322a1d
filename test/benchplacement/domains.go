package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// The NVLink-domain scenario (-scenario nvl72): 12 rack-scale NVLink domains
// (nvidia.com/gpu.clique) of 18 nodes with 4 GPUs, 144 CPUs and 864 GiB each; a
// shuffled stream of single-node jobs — a CPU-only job of 64 large pods, small
// CPU-only pods, 1-, 2- and 4-GPU pods — placed one at a time; then gangs of 18
// members of 4 GPUs each (a whole domain) that must run in one domain, submitted
// one after another until three in a row do not fit. It reports, per arm, the
// domains the stream left whole and the gangs placed in one domain.
//
// kubenexus's gangs are PodGroups with spec.networkTopology required at the nvlink
// level; stock's are what a user of stock kube-scheduler writes: each member
// requires pod affinity to its gang's members on nvidia.com/gpu.clique. A gang
// not wholly placed within a minute is deleted before the next (as Kueue's
// waitForPodsReady would evict it), so that a half-placed gang holds nothing.
const (
	domainCount    = 12
	domainNodes    = 18
	domainGPUs     = 4
	domainCPU      = 144
	domainMemGi    = 864
	gangMemberCPU  = 96
	gangMemberMem  = "512Gi"
	gangPatience   = 3
	gangSettleTime = time.Minute
)

// domainJob is one pod of the stream.
type domainJob struct {
	name   string
	cpu    int64 // cores
	memGi  int64
	gpus   int64
	series string
}

// domainStream is the stream of single-node jobs, shuffled with seed.
func domainStream(seed int64) []domainJob {
	var jobs []domainJob
	add := func(series string, n int, cpu, memGi, gpus int64) {
		for i := range n {
			jobs = append(jobs, domainJob{name: fmt.Sprintf("%s-%03d", series, i), cpu: cpu, memGi: memGi, gpus: gpus, series: series})
		}
	}
	add("cpu-large", 64, 64, 128, 0) // the CPU-only job of the public report: 64 workers
	add("cpu-small", 96, 4, 16, 0)
	add("gpu-1", 60, 16, 64, 1)
	add("gpu-2", 30, 32, 128, 2)
	add("gpu-4", 10, 64, 256, 4)
	rand.New(rand.NewSource(seed)).Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	return jobs
}

// domainResult is one arm's outcome.
type domainResult struct {
	arm             string
	streamFailed    int
	brokenDomains   int
	wholeAfter      int
	gangsPlaced     int
	gangsTried      int
	nodesTouched    int
	podsPerSec      float64
	gangFailureNote string
}

func runDomains(binDir, out string, armNames []string, seed int64) error {
	ctx := context.Background()
	env, err := startBench(binDir, out, "nvl72", armNames)
	if err != nil {
		return err
	}
	defer env.plane.Stop()
	c, cs, plane := env.c, env.cs, env.plane
	fmt.Printf("nvl72: %d NVLink domains of %d nodes with %d GPUs\n", domainCount, domainNodes, domainGPUs)
	if err := createNodes(ctx, c, domainCount*domainNodes, func(i int) *corev1.Node {
		d, k := i/domainNodes, i%domainNodes
		return testutil.MakeNode(fmt.Sprintf("nvl%02d-n%02d", d, k)).
			Capacity("cpu", fmt.Sprint(domainCPU), "memory", fmt.Sprintf("%dGi", domainMemGi), "pods", "110", string(gpu), fmt.Sprint(domainGPUs)).
			Label(v1alpha1.LabelGPUClique, fmt.Sprintf("nvl%02d", d)).Label(v1alpha1.LabelGPUProduct, "NVIDIA-GB200").Obj()
	}); err != nil {
		return err
	}
	stream := domainStream(seed)
	var results []domainResult
	for _, a := range env.arms {
		r, err := replayDomains(ctx, c, cs, plane.Dir, plane.Kubeconfig, a, stream)
		if err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		results = append(results, r)
	}
	return writeDomains(env.out, seed, stream, results)
}

func replayDomains(ctx context.Context, c client.Client, cs kubernetes.Interface, dir, kcPath string, a arm, stream []domainJob) (domainResult, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nvl72-" + a.name + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return domainResult{}, err
	}
	defer func() {
		_ = c.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns.Name), client.GracePeriodSeconds(0))
		_ = c.DeleteAllOf(context.Background(), &v1alpha1.PodGroup{}, client.InNamespace(ns.Name))
		// The next arm starts from empty nodes.
		_ = waitNoPods(context.Background(), c, ns.Name)
	}()
	outs, stop, err := watchOutcomes(cs, ns.Name)
	if err != nil {
		return domainResult{}, err
	}
	defer close(stop)
	logPath, _, kill, err := startArm(dir, kcPath, a)
	if err != nil {
		return domainResult{}, err
	}
	defer kill()

	r := domainResult{arm: a.name}
	touched := map[string]bool{}
	start := time.Now()
	for _, j := range stream {
		ch := outs.expect(j.name)
		req := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(j.cpu, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", j.memGi))}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: ns.Name, Labels: map[string]string{"series": j.series}},
			Spec: corev1.PodSpec{SchedulerName: a.schedulerName, Containers: []corev1.Container{{Name: "job", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: req}}}}}
		if j.gpus > 0 {
			q := *resource.NewQuantity(j.gpus, resource.DecimalSI)
			pod.Spec.Containers[0].Resources.Requests[gpu] = q
			pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{gpu: q}
		}
		if err := c.Create(ctx, pod); err != nil {
			return r, err
		}
		select {
		case o := <-ch:
			if o.failed {
				r.streamFailed++
			} else {
				touched[o.node] = true
			}
		case <-time.After(2 * time.Minute):
			return r, fmt.Errorf("%s: neither bound nor refused in 2 minutes (log %s)", j.name, logPath)
		}
	}
	r.podsPerSec = float64(len(stream)) / time.Since(start).Seconds()
	r.nodesTouched = len(touched)
	broken := map[string]bool{}
	for n := range touched {
		broken[strings.SplitN(n, "-", 2)[0]] = true
	}
	r.brokenDomains = len(broken)
	r.wholeAfter = domainCount - len(broken)
	fmt.Printf("%s: stream of %d pods (%d refused) on %d nodes in %d of %d domains; %d domains whole\n",
		a.name, len(stream), r.streamFailed, r.nodesTouched, r.brokenDomains, domainCount, r.wholeAfter)

	// Domain-sized gangs until gangPatience in a row do not fit.
	misses := 0
	for g := 0; misses < gangPatience && r.gangsTried < domainCount+gangPatience; g++ {
		r.gangsTried++
		ok, note, err := placeDomainGang(ctx, c, outs, ns.Name, a, fmt.Sprintf("gang-%02d", g))
		if err != nil {
			return r, err
		}
		if ok {
			r.gangsPlaced++
			misses = 0
			continue
		}
		misses++
		if r.gangFailureNote == "" {
			r.gangFailureNote = note
		}
	}
	fmt.Printf("%s: %d gangs of %d × %d GPUs placed in one domain (%d tried)\n", a.name, r.gangsPlaced, domainNodes, domainGPUs, r.gangsTried)
	return r, nil
}

// placeDomainGang submits one domain-sized gang and reports whether all its
// members were bound in one domain; a gang that is not is deleted.
func placeDomainGang(ctx context.Context, c client.Client, outs *outcomes, ns string, a arm, name string) (bool, string, error) {
	kubenexus := a.schedulerName != "default-scheduler"
	if kubenexus {
		pg := testutil.MakePodGroup(name, ns).MinMember(domainNodes).NetworkTopology(v1alpha1.NetworkTopologyRequired, v1alpha1.NetworkLevelNVLink).Obj()
		if err := c.Create(ctx, pg); err != nil {
			return false, "", err
		}
	}
	chans := make([]chan outcome, domainNodes)
	for i := range domainNodes {
		pname := fmt.Sprintf("%s-%02d", name, i)
		chans[i] = outs.expect(pname)
		q := *resource.NewQuantity(domainGPUs, resource.DecimalSI)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pname, Namespace: ns, Labels: map[string]string{"gang": name}},
			Spec: corev1.PodSpec{SchedulerName: a.schedulerName, Containers: []corev1.Container{{Name: "worker", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(gangMemberCPU, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse(gangMemberMem), gpu: q},
					Limits:   corev1.ResourceList{gpu: q}}}}}}
		if kubenexus {
			pod.Labels[v1alpha1.LabelPodGroup] = name
		} else {
			pod.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gang": name}}, TopologyKey: v1alpha1.LabelGPUClique}}}}
		}
		if err := c.Create(ctx, pod); err != nil {
			return false, "", err
		}
	}
	deadline := time.After(gangSettleTime)
	domains := map[string]bool{}
	bound, note := 0, ""
collect:
	for i := range chans {
		select {
		case o := <-chans[i]:
			if o.failed {
				if note == "" {
					note = o.message
				}
				continue
			}
			bound++
			domains[strings.SplitN(o.node, "-", 2)[0]] = true
		case <-deadline:
			break collect
		}
	}
	if bound == domainNodes && len(domains) == 1 {
		return true, "", nil
	}
	// Refused members may still be placed later (a gang retried after backoff): a
	// gang counts only when placed whole at once; the rest is removed.
	if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{"gang": name}, client.GracePeriodSeconds(0)); err != nil {
		return false, "", err
	}
	if kubenexus {
		if err := client.IgnoreNotFound(c.Delete(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})); err != nil {
			return false, "", err
		}
	}
	if note == "" {
		note = fmt.Sprintf("%d of %d members bound, in %d domains", bound, domainNodes, len(domains))
	}
	return false, note, nil
}

// waitNoPods waits until the namespace has no pods left (deleted pods free their
// nodes for the next arm).
func waitNoPods(ctx context.Context, c client.Client, ns string) error {
	for range 120 {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("pods of %s still there after a minute", ns)
}

func writeDomains(out string, seed int64, stream []domainJob, results []domainResult) error {
	series := map[string]int{}
	for _, j := range stream {
		series[j.series]++
	}
	var kinds []string
	for k, n := range series {
		kinds = append(kinds, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(kinds)
	var b strings.Builder
	fmt.Fprintf(&b, "# NVLink-domain scenario (nvl72)\n\n%d domains (nvidia.com/gpu.clique) of %d nodes × %d GPUs, %d CPUs, %d GiB; "+
		"a stream of %d single-node pods shuffled with seed %d (%s; cpu-large 64 CPUs, cpu-small 4, gpu-1/2/4 16/32/64 CPUs), "+
		"then gangs of %d members × %d GPUs, %d CPUs, %s, each required in one domain.\n\n",
		domainCount, domainNodes, domainGPUs, domainCPU, domainMemGi, len(stream), seed, strings.Join(kinds, ", "),
		domainNodes, domainGPUs, gangMemberCPU, gangMemberMem)
	fmt.Fprintf(&b, "| arm | stream pods refused | nodes the stream took | domains broken | domains whole | gangs placed in one domain | pods/s (stream) |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d of %d tried | %.1f |\n", r.arm, r.streamFailed, r.nodesTouched, r.brokenDomains, r.wholeAfter, r.gangsPlaced, r.gangsTried, r.podsPerSec)
	}
	b.WriteString("\nWhy the first gang that did not fit was refused, per arm:\n\n")
	for _, r := range results {
		if r.gangFailureNote != "" {
			fmt.Fprintf(&b, "- %s: %s\n", r.arm, r.gangFailureNote)
		}
	}
	fmt.Print(b.String())
	return os.WriteFile(filepath.Join(out, "summary.md"), []byte(b.String()), 0o644)
}

// createNodes creates n nodes (node(i) each), in parallel, without taints.
func createNodes(ctx context.Context, c client.Client, n int, node func(i int) *corev1.Node) error {
	return testutil.Parallel(n, func(i int) error {
		obj := node(i)
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
		obj.Spec.Taints = nil
		return c.Update(ctx, obj)
	})
}
