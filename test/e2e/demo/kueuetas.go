package demo

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
)

// Kueue's topology-aware scheduling (TAS) beside KubeNexus: a Topology of racks,
// NVLink domains and hosts, a flavor over it, and an indexed Job that asks through
// Kueue's pod-set annotations for one rack, in slices of 8 members per NVLink domain.
// Kueue chooses the domains and pins each pod to a host before lifting its topology
// gate; KubeNexus's placement check and scheduler must agree and place the gang whole.
const (
	kueueTASNamespace = "kueue-tas"
	kueueTASPool      = "kueue-tas"
	kueueTASTaintKey  = "kubenexus.io/kueue-tas"
	kueueTASTopology  = "kubenexus-racks"
	kueueTASQueue     = "gpu-tas"
	// kueueTASMembers pods of 2 GPUs, in slices of kueueTASSlice per NVLink domain.
	kueueTASMembers = 16
	kueueTASSlice   = 8
)

// KueueTASReport is what the Kueue TAS scenario saw.
type KueueTASReport struct {
	// Admitted: Kueue admitted the Workload with a topology assignment at the levels
	// TopologyLevels (its Topology's, lowest first as Kueue lists them: highest).
	Admitted       bool
	TopologyLevels []string
	CheckState     string
	CheckMessage   string
	// Bound is how many of the Job's pods were bound, within BoundAfter of the Job's
	// creation; Racks and Cliques count them per rack and NVLink domain.
	Bound      int
	BoundAfter time.Duration
	Racks      map[string]int
	Cliques    map[string]int
	// Pinned counts the bound pods whose node Kueue's node selectors named.
	Pinned   int
	Complete bool
}

// Violations counts the racks beyond one and the NVLink domains holding a count of
// members that is not a whole number of slices.
func (r *KueueTASReport) Violations() int {
	v := max(len(r.Racks)-1, 0)
	for _, n := range r.Cliques {
		if n%kueueTASSlice != 0 {
			v++
		}
	}
	return v
}

// RunKueueTASScenario runs the TAS scenario: eight tainted 8-GPU nodes in two racks of
// two NVLink domains, rack-0's nodes each with 2 GPUs held by a pod outside Kueue (no
// NVLink domain there holds a slice of 8 two-GPU members), a ClusterQueue of 64 GPUs
// with the placement check, and a Job of 16 members.
func (c *Cluster) RunKueueTASScenario(ctx context.Context) (*KueueTASReport, error) {
	c.logf("Kueue TAS: a Topology of racks, NVLink domains and hosts; a Job of %d × 2 GPUs asking Kueue for one rack, in slices of %d per NVLink domain", kueueTASMembers, kueueTASSlice)
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueTASNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	var labels []map[string]string
	for r := range 2 {
		for d := range 2 {
			for range 2 {
				labels = append(labels, map[string]string{
					kueuePoolKey: kueueTASPool, v1alpha1.LabelRack: fmt.Sprintf("rack-kt%d", r), v1alpha1.LabelGPUClique: fmt.Sprintf("kt-r%d-d%d", r, d),
				})
			}
		}
	}
	if err := c.taintedPool(ctx, "kt", labels, kueueTASTaintKey); err != nil {
		return nil, err
	}
	for i := range 4 { // rack-0's nodes
		if err := c.holdGPUs(ctx, kueueTASNamespace, fmt.Sprintf("holder-%d", i), fmt.Sprintf("kt-%d", i), kueueTASTaintKey, "2"); err != nil {
			return nil, err
		}
	}
	if err := c.kueueTASQueue(ctx); err != nil {
		return nil, err
	}
	created := time.Now()
	if err := c.Client.Create(ctx, kueueTASJob()); err != nil {
		return nil, err
	}
	r := &KueueTASReport{}
	err := waitFor(ctx, 3*time.Minute, func() error {
		wl, err := c.workloadOf(ctx, kueueTASNamespace)
		if err != nil {
			return err
		}
		r.Admitted = apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)
		if a := wl.Status.Admission; a != nil && len(a.PodSetAssignments) == 1 && a.PodSetAssignments[0].TopologyAssignment != nil {
			r.TopologyLevels = a.PodSetAssignments[0].TopologyAssignment.Levels
		}
		for _, st := range wl.Status.AdmissionChecks {
			if string(st.Name) == KueueAdmissionCheck {
				r.CheckState, r.CheckMessage = string(st.State), st.Message
			}
		}
		pods, err := c.kueuePods(ctx, kueueTASNamespace)
		if err != nil {
			return err
		}
		if bound := countBound(pods); bound > r.Bound {
			r.Bound = bound
			if bound == kueueTASMembers {
				r.BoundAfter = time.Since(created)
				if err := c.kueueTASPlaces(ctx, r, pods); err != nil {
					return err
				}
			}
		}
		job := &batchv1.Job{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: kueueTASNamespace, Name: "pretrain"}, job); err != nil {
			return err
		}
		r.Complete = jobComplete(job)
		if !r.Complete {
			return fmt.Errorf("the Kueue TAS Job: admitted %v (topology levels %v), check %s %q, %d/%d pods bound, not complete", r.Admitted, r.TopologyLevels, r.CheckState, r.CheckMessage, r.Bound, kueueTASMembers)
		}
		return nil
	})
	return r, err
}

// kueueTASPlaces fills the report's racks, NVLink domains and pinned count from the
// bound pods.
func (c *Cluster) kueueTASPlaces(ctx context.Context, r *KueueTASReport, pods []corev1.Pod) error {
	r.Racks, r.Cliques, r.Pinned = map[string]int{}, map[string]int{}, 0
	for _, p := range pods {
		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
			return err
		}
		r.Racks[node.Labels[v1alpha1.LabelRack]]++
		r.Cliques[node.Labels[v1alpha1.LabelGPUClique]]++
		if host := p.Spec.NodeSelector[corev1.LabelHostname]; host == node.Name {
			r.Pinned++
		}
	}
	return nil
}

// kueueTASQueue creates the Topology, the flavor over the scenario's nodes that
// names it, and a ClusterQueue of 64 GPUs with the placement check and its
// LocalQueue, and waits until the ClusterQueue is active.
func (c *Cluster) kueueTASQueue(ctx context.Context) error {
	topo := &kueue.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: kueueTASTopology},
		Spec: kueue.TopologySpec{Levels: []kueue.TopologyLevel{
			{NodeLabel: v1alpha1.LabelRack}, {NodeLabel: v1alpha1.LabelGPUClique}, {NodeLabel: corev1.LabelHostname},
		}},
	}
	if err := c.Client.Create(ctx, topo); err != nil {
		return err
	}
	flavor := &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: kueueTASPool},
		Spec: kueue.ResourceFlavorSpec{
			NodeLabels:   map[string]string{kueuePoolKey: kueueTASPool},
			Tolerations:  []corev1.Toleration{{Key: kueueTASTaintKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			TopologyName: ptr.To(kueue.TopologyReference(kueueTASTopology)),
		},
	}
	if err := c.Client.Create(ctx, flavor); err != nil {
		return err
	}
	if err := c.gpuQueue(ctx, kueueTASQueue, kueueTASNamespace, kueueTASPool, []kueue.AdmissionCheckReference{KueueAdmissionCheck}); err != nil {
		return err
	}
	return c.queuesActive(ctx, kueueTASQueue)
}

// kueueTASJob is an indexed Job of 16 two-GPU pods for KubeNexus whose pod template
// asks Kueue's TAS for one rack, in slices of 8 per NVLink domain.
func kueueTASJob() *batchv1.Job {
	j := kueueJob(kueueTASNamespace)
	j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](kueueTASMembers), ptr.To[int32](kueueTASMembers)
	gpus := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("32Gi"), v1alpha1.ResourceNvidiaGPU: resource.MustParse("2")}
	j.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: gpus, Limits: gpus}
	// The pool's taint tolerated by the pods themselves, not only by the flavor:
	// Kueue 0.17's TAS node health check (TASReplaceNodeOnNodeTaints) reads the
	// Workload's pod template alone and would call the nodes failed, and evict the
	// Workload, as soon as its pods there have finished.
	j.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: kueueTASTaintKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	j.Spec.Template.Annotations = map[string]string{
		v1alpha1.AnnotationKueueRequiredTopology:      v1alpha1.LabelRack,
		v1alpha1.AnnotationKueueSliceRequiredTopology: v1alpha1.LabelGPUClique,
		v1alpha1.AnnotationKueueSliceSize:             fmt.Sprint(kueueTASSlice),
	}
	return j
}

// PrintKueueTAS writes what the Kueue TAS scenario saw.
func PrintKueueTAS(w io.Writer, r *KueueTASReport) {
	if r == nil {
		return
	}
	count := func(m map[string]int) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, m[k])
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "Kueue TAS: a Job of %d × 2 GPUs in one rack, slices of %d per NVLink domain; rack-kt0's domains hold 6 each\n", kueueTASMembers, kueueTASSlice)
	fmt.Fprintf(w, "  Kueue admitted it %v with a topology assignment over %v; %s: %s\n", r.Admitted, r.TopologyLevels, KueueAdmissionCheck, r.CheckState)
	fmt.Fprintf(w, "  %d/%d bound %s after the Job was created, %d on the host Kueue pinned; racks: %s; NVLink domains: %s; violations %d; Job complete %v\n",
		r.Bound, kueueTASMembers, r.BoundAfter.Round(100*time.Millisecond), r.Pinned, count(r.Racks), count(r.Cliques), r.Violations(), r.Complete)
}
