package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/placement"
)

func keyOf(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// Placement is where one workload landed.
type Placement struct {
	Workload
	Pods, Bound, Succeeded int
	Nodes, Zones, Racks    []string
	GPUModels              []string
	Tier                   string
	// Formation is from submission to all its pods bound (100 ms resolution).
	Formation time.Duration
	// GangPhase is the PodGroup's phase ("" without a gang), GangReason and
	// GangMessage its Scheduled condition's reason and message.
	GangPhase, GangReason, GangMessage string
	// JobComplete reports a batch Job's Complete condition.
	JobComplete bool
	// JobState is a Kubeflow job's last true condition (Created, Running,
	// Succeeded, ...), as the training-operator wrote it.
	JobState string
	// SigsPhases are the phases the demo saw its scheduler-plugins PodGroup go
	// through (ForeignGang workloads), and SigsDeleted whether the training-operator
	// has deleted it (as it does once the job has finished).
	SigsPhases  []string
	SigsDeleted bool
	// Notes explain NUMA and GPU-memory placements: the cells of the nodes a
	// NUMA-pinned workload runs on, the GPU memory of a VRAM workload's cards.
	Notes []string
}

func (c *Cluster) pods(ctx context.Context, w Workload) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := c.Client.List(ctx, &list, client.InNamespace(w.Namespace), client.MatchingLabels(w.Selector))
	return list.Items, err
}

// Settle waits until every workload has all its pods bound (gangs at once), the
// Jobs completed and the gang larger than the fleet rejected with none of its pods
// bound, then finishes the gang pods (kwok completes only Job pods) and waits for
// their PodGroups to succeed.
func (c *Cluster) Settle(ctx context.Context, timeout time.Duration) error {
	c.logf("waiting for every workload to be placed and the Jobs to complete")
	if err := waitFor(ctx, timeout, func() error {
		for _, w := range Mix {
			pods, err := c.pods(ctx, w)
			if err != nil {
				return err
			}
			bound := 0
			for _, p := range pods {
				if p.Spec.NodeName != "" {
					bound++
				}
			}
			if w.TooBig {
				if bound > 0 {
					return fmt.Errorf("%s %s: %d of its %d pods bound, though the gang cannot fit", w.Kind, w.Name, bound, w.Size)
				}
				pg := &v1alpha1.PodGroup{}
				if err := c.Client.Get(ctx, keyOf(w.Namespace, w.Gang), pg); err != nil {
					return err
				}
				if r := scheduledCondition(pg).Reason; r != v1alpha1.ReasonInsufficientCapacity && r != v1alpha1.ReasonTimeout {
					return fmt.Errorf("PodGroup %s: Scheduled condition reason %q, waiting for the scheduler to reject it", w.Gang, r)
				}
				continue
			}
			if w.Kind == "Job" {
				job := &batchv1.Job{}
				if err := c.Client.Get(ctx, keyOf(w.Namespace, w.Name), job); err != nil {
					return err
				}
				if !jobComplete(job) {
					return fmt.Errorf("batch Job %s not complete (%d succeeded)", w.Name, job.Status.Succeeded)
				}
				continue
			}
			if bound < w.Size {
				return fmt.Errorf("%s %s: %d/%d pods bound", w.Kind, w.Name, bound, w.Size)
			}
			if w.ForeignGang != "" {
				// Seen Running before the pods finish: the training-operator
				// deletes the PodGroup once its job has.
				if phases := c.phases(w.Name); len(phases) == 0 || phases[len(phases)-1] != "Running" {
					return fmt.Errorf("%s PodGroup %s/%s: phases %v, waiting for Running", w.ForeignGang, w.Namespace, w.Gang, phases)
				}
			}
		}
		return nil
	}, c.observe); err != nil {
		return err
	}
	// What the placed mix leaves free, before the jobs finish.
	capacity, err := c.gpuCapacity(ctx)
	if err != nil {
		return err
	}
	c.capacity = capacity
	c.logf("finishing the Spark, PyTorch and MPI pods (the demo plays their containers exiting 0: workers first)")
	for _, w := range Mix {
		if !w.Finish {
			continue
		}
		pods, err := c.pods(ctx, w)
		if err != nil {
			return err
		}
		// Workers and executors end before the master, launcher or driver that
		// ends the job.
		sort.SliceStable(pods, func(i, j int) bool { return !leads(&pods[i]) && leads(&pods[j]) })
		for i := range pods {
			p := &pods[i]
			if err := waitFor(ctx, time.Minute, func() error {
				if err := c.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
					return err
				}
				if p.Status.Phase != corev1.PodRunning {
					return fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
				}
				p.Status.Phase = corev1.PodSucceeded
				for j := range p.Status.ContainerStatuses {
					cs := &p.Status.ContainerStatuses[j]
					cs.Ready, cs.Started = false, ptrFalse()
					cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
				}
				return c.Client.Status().Update(ctx, p)
			}); err != nil {
				return err
			}
		}
	}
	c.logf("waiting for the PodGroups and the training-operator's jobs to succeed")
	return waitFor(ctx, time.Minute, func() error {
		for _, w := range Mix {
			if w.TooBig {
				continue
			}
			if w.Kubeflow() {
				if state, err := c.kubeflowJobState(ctx, w); err != nil || state != "Succeeded" {
					return fmt.Errorf("%s %s/%s is %q (%v)", w.Kind, w.Namespace, w.Name, state, err)
				}
			}
			if w.Gang == "" || w.ForeignGang != "" {
				continue
			}
			pg := &v1alpha1.PodGroup{}
			if err := c.Client.Get(ctx, keyOf(w.Namespace, w.Gang), pg); err != nil {
				return err
			}
			if pg.Status.Phase != v1alpha1.PodGroupSucceeded {
				return fmt.Errorf("PodGroup %s is %s", w.Gang, pg.Status.Phase)
			}
		}
		return nil
	}, c.observe)
}

// leads reports whether the pod's exit ends its workload (a Kubeflow master or MPI
// launcher, a Spark driver).
func leads(p *corev1.Pod) bool {
	switch strings.ToLower(p.Labels["training.kubeflow.org/replica-type"]) {
	case "master", "launcher":
		return true
	}
	return p.Labels["spark-role"] == "driver"
}

// observe runs before every poll of Settle: it notes placements.
func (c *Cluster) observe(ctx context.Context) {
	c.notePlaced(ctx)
}

// notePhase records a phase of a ForeignGang workload's PodGroup, once per change.
func (c *Cluster) notePhase(workload, phase string) {
	if phase == "" {
		return
	}
	c.phasesMu.Lock()
	defer c.phasesMu.Unlock()
	if seen := c.sigsPhases[workload]; len(seen) == 0 || seen[len(seen)-1] != phase {
		c.sigsPhases[workload] = append(seen, phase)
	}
}

// phases returns the phases recorded for a workload.
func (c *Cluster) phases(workload string) []string {
	c.phasesMu.Lock()
	defer c.phasesMu.Unlock()
	return slices.Clone(c.sigsPhases[workload])
}

// watchForeignPhases records every phase the ForeignGang workloads' PodGroups go
// through, from watches: a phase shorter than Settle's poll (a Volcano PodGroup can
// be Inqueue for a few milliseconds) would otherwise be missed.
func (c *Cluster) watchForeignPhases(ctx context.Context) error {
	dc, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for _, w := range Mix {
		if w.ForeignGang == "" {
			continue
		}
		gvk := v1alpha1.SigsPodGroupGVK
		if w.ForeignGang == v1alpha1.VolcanoPodGroupGroup {
			gvk = v1alpha1.VolcanoPodGroupGVK
		}
		watch, err := dc.Resource(gvk.GroupVersion().WithResource("podgroups")).Namespace(w.Namespace).
			Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + w.Gang})
		if err != nil {
			return fmt.Errorf("watching %s PodGroup %s/%s: %w", w.ForeignGang, w.Namespace, w.Gang, err)
		}
		go func(name string) {
			for ev := range watch.ResultChan() {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
					c.notePhase(name, phase)
				}
			}
		}(w.Name)
	}
	return nil
}

// kubeflowJobState reads the training-operator job's state.
func (c *Cluster) kubeflowJobState(ctx context.Context, w Workload) (string, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kubeflow.org/v1")
	u.SetKind(w.Kind)
	if err := c.Client.Get(ctx, keyOf(w.Namespace, w.Name), u); err != nil {
		return "", err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	return kubeflowJobState(conds), nil
}

// notePlaced records when each workload first has all its pods bound.
func (c *Cluster) notePlaced(ctx context.Context) {
	for _, w := range Mix {
		if _, done := c.placed[w.Name]; done {
			continue
		}
		pods, err := c.pods(ctx, w)
		if err != nil {
			return
		}
		bound := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		if bound >= w.Size {
			c.placed[w.Name] = time.Now()
		}
	}
}

// scheduledCondition is the PodGroup's Scheduled condition (empty before it has one).
func scheduledCondition(pg *v1alpha1.PodGroup) metav1.Condition {
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupConditionScheduled); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func ptrFalse() *bool { f := false; return &f }

func jobComplete(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Report collects where every workload landed.
func (c *Cluster) Report(ctx context.Context) ([]Placement, error) {
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	var out []Placement
	for _, w := range Mix {
		pods, err := c.pods(ctx, w)
		if err != nil {
			return nil, err
		}
		pl := Placement{Workload: w, Pods: len(pods)}
		set := func(list *[]string, v string) {
			if v != "" && !slices.Contains(*list, v) {
				*list = append(*list, v)
			}
		}
		for _, p := range pods {
			if p.Status.Phase == corev1.PodSucceeded {
				pl.Succeeded++
			}
			pl.Tier = p.Labels[v1alpha1.LabelTenantTier]
			if p.Spec.NodeName == "" {
				continue
			}
			pl.Bound++
			n := byName[p.Spec.NodeName]
			if n == nil {
				continue
			}
			set(&pl.Nodes, n.Name)
			set(&pl.Zones, n.Labels[v1alpha1.LabelTopologyZone])
			set(&pl.Racks, n.Labels[v1alpha1.LabelRack])
			model := n.Labels[v1alpha1.LabelGPUProduct]
			if model == "" {
				model = "cpu-only"
			}
			set(&pl.GPUModels, model)
		}
		for _, l := range []*[]string{&pl.Nodes, &pl.Zones, &pl.Racks, &pl.GPUModels} {
			sort.Strings(*l)
		}
		if placed, ok := c.placed[w.Name]; ok {
			pl.Formation = placed.Sub(c.submitted[w.Name])
		}
		if w.Kubeflow() {
			pl.JobState, _ = c.kubeflowJobState(ctx, w)
		}
		if w.ForeignGang != "" {
			pl.SigsPhases = c.phases(w.Name)
			phase, found, err := c.foreignPodGroupPhase(ctx, w.ForeignGang, w.Namespace, w.Gang)
			if err != nil {
				return nil, err
			}
			pl.SigsDeleted = !found
			if found {
				pl.GangPhase = phase
			} else if n := len(pl.SigsPhases); n > 0 {
				pl.GangPhase = pl.SigsPhases[n-1]
			}
		} else if w.Gang != "" {
			pg := &v1alpha1.PodGroup{}
			if err := c.Client.Get(ctx, keyOf(w.Namespace, w.Gang), pg); err == nil {
				pl.GangPhase = string(pg.Status.Phase)
				c := scheduledCondition(pg)
				pl.GangReason, pl.GangMessage = c.Reason, c.Message
			}
		}
		if w.Kind == "Job" {
			job := &batchv1.Job{}
			if err := c.Client.Get(ctx, keyOf(w.Namespace, w.Name), job); err == nil {
				pl.JobComplete = jobComplete(job)
			}
		}
		notes, err := c.hardwareNotes(ctx, w, pl.Nodes, byName)
		if err != nil {
			return nil, err
		}
		pl.Notes = notes
		out = append(out, pl)
	}
	return out, nil
}

// hardwareNotes describes, for a NUMA-pinned workload, the NUMA cells of its nodes
// (from their NodeResourceTopology, else the fallback label) and, for a workload
// that asks for GPU memory, the memory of its nodes' GPUs.
func (c *Cluster) hardwareNotes(ctx context.Context, w Workload, nodes []string, byName map[string]*corev1.Node) ([]string, error) {
	var notes []string
	for _, name := range nodes {
		n := byName[name]
		if n == nil {
			continue
		}
		if w.NUMA != "" {
			nrt := &unstructured.Unstructured{}
			nrt.SetAPIVersion("topology.node.k8s.io/v1alpha2")
			nrt.SetKind("NodeResourceTopology")
			err := c.Client.Get(ctx, client.ObjectKey{Name: name}, nrt)
			switch {
			case err == nil:
				zones, _, _ := unstructured.NestedSlice(nrt.Object, "zones")
				var cell []string
				if len(zones) > 0 {
					res, _, _ := unstructured.NestedSlice(zones[0].(map[string]any), "resources")
					for _, r := range res {
						m := r.(map[string]any)
						cell = append(cell, fmt.Sprintf("%v %v", m["allocatable"], m["name"]))
					}
				}
				notes = append(notes, fmt.Sprintf("%s on %s: %d NUMA cells of %s (NodeResourceTopology)", w.NUMA, name, len(zones), strings.Join(cell, ", ")))
			case apierrors.IsNotFound(err):
				notes = append(notes, fmt.Sprintf("%s on %s: %s NUMA cell(s) (%s label)", w.NUMA, name, n.Labels[v1alpha1.LabelNUMANodeCount], v1alpha1.LabelNUMANodeCount))
			default:
				return nil, err
			}
		}
		if w.VRAM != "" {
			notes = append(notes, fmt.Sprintf("needs %s per GPU; %s has %s with %sMi each", w.VRAM, name, n.Labels[v1alpha1.LabelGPUProduct], n.Labels[v1alpha1.LabelGPUMemory]))
		}
	}
	return notes, nil
}

// GPUCapacity is what the placed mix left of one GPU model: its GPUs, the free ones,
// and the largest gang of 8-GPU members that fits anywhere and in one rack (by
// placement.LargestGang, the code behind the scheduler's gauges).
type GPUCapacity struct {
	Model                     string
	GPUs, Free                int64
	Largest8Any, Largest8Rack int64
	Rack                      string
}

// Capacity returns the GPU capacity Settle recorded once every workload was placed.
func (c *Cluster) Capacity() []GPUCapacity { return c.capacity }

func (c *Cluster) gpuCapacity(ctx context.Context) ([]GPUCapacity, error) {
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods); err != nil {
		return nil, err
	}
	used := map[string]int64{}
	for i := range pods.Items {
		if n := workload.HeldGPUs(&pods.Items[i]); n > 0 {
			used[pods.Items[i].Spec.NodeName] += n
		}
	}
	byModel := map[string][]placement.GPUNode{}
	total := map[string]int64{}
	for _, n := range nodes.Items {
		q, ok := n.Status.Allocatable[v1alpha1.ResourceNvidiaGPU]
		if !ok || q.Value() == 0 {
			continue
		}
		model := n.Labels[v1alpha1.LabelGPUProduct]
		total[model] += q.Value()
		byModel[model] = append(byModel[model], placement.GPUNode{Name: n.Name, Free: max(q.Value()-used[n.Name], 0), Domains: []string{n.Labels[v1alpha1.LabelRack]}})
	}
	var out []GPUCapacity
	for model, ns := range byModel {
		gc := GPUCapacity{Model: model, GPUs: total[model]}
		for _, n := range ns {
			gc.Free += n.Free
		}
		gc.Largest8Rack, gc.Rack = placement.LargestGang(ns, 8, 0)
		gc.Largest8Any, _ = placement.LargestGang(ns, 8, 1)
		out = append(out, gc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out, nil
}

// PrintCapacity writes, per GPU model, what the placed mix left free.
func PrintCapacity(w io.Writer, capacity []GPUCapacity) {
	fmt.Fprintln(w, "GPU capacity once the mix was placed")
	fmt.Fprintf(w, "%-24s %-6s %-6s %s\n", "GPU MODEL", "GPUS", "FREE", "LARGEST 8-GPU GANG (anywhere / one rack)")
	for _, gc := range capacity {
		fmt.Fprintf(w, "%-24s %-6d %-6d %d / %d (%s)\n", gc.Model, gc.GPUs, gc.Free, gc.Largest8Any, gc.Largest8Rack, gc.Rack)
	}
}

// Print writes the placement report.
func Print(w io.Writer, placements []Placement) {
	fmt.Fprintln(w, "KubeNexus placement report")
	fmt.Fprintf(w, "%-18s %-16s %-13s %-6s %-7s %-22s %-17s %-30s %-9s %s\n", "WORKLOAD", "KIND", "NAMESPACE", "TIER", "PODS", "ZONES", "RACKS", "GPU", "FORMED", "STATE")
	for _, p := range placements {
		state := fmt.Sprintf("%d/%d bound", p.Bound, p.Pods)
		switch {
		case p.ForeignGang != "":
			state += ", " + p.ForeignGang + " PodGroup " + p.Gang + " " + strings.Join(p.SigsPhases, "→")
			if p.SigsDeleted {
				state += " (deleted by the training-operator)"
			}
		case p.GangPhase != "" && p.GangReason != v1alpha1.ReasonGangScheduled:
			state += ", PodGroup " + p.Gang + " " + p.GangPhase + " (" + p.GangReason + ")"
		case p.GangPhase != "":
			state += ", PodGroup " + p.Gang + " " + p.GangPhase
		case p.Kind == "Job" && p.JobComplete:
			state = fmt.Sprintf("Complete (%d pods succeeded)", p.Succeeded)
		}
		if p.Kubeflow() {
			state += ", " + p.Kind + " " + p.JobState
		}
		formed := "-"
		if p.Formation > 0 {
			formed = p.Formation.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(w, "%-18s %-16s %-13s %-6s %-7d %-22s %-17s %-30s %-9s %s\n", p.Name, p.Kind, p.Namespace, p.Tier, p.Pods,
			strings.Join(p.Zones, ","), strings.Join(p.Racks, ","), strings.Join(p.GPUModels, ","), formed, state)
		if len(p.Nodes) > 0 {
			fmt.Fprintf(w, "%-18s nodes: %s\n", "", strings.Join(p.Nodes, ","))
		}
		if p.GangMessage != "" && p.GangReason != v1alpha1.ReasonGangScheduled {
			fmt.Fprintf(w, "%-18s why: %s\n", "", p.GangMessage)
		}
		for _, n := range p.Notes {
			fmt.Fprintf(w, "%-18s %s\n", "", n)
		}
	}
}
