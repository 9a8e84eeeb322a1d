package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
)

// ExplainWaiting prints what `kubectl kubenexus explain podgroup/NAME` says of each gang
// of the mix that waits (the one larger than the fleet).
func (c *Cluster) ExplainWaiting(ctx context.Context, w io.Writer, placements []Placement) error {
	e := &explain.Explainer{Client: c.Client}
	for _, p := range placements {
		if !p.TooBig || p.Gang == "" {
			continue
		}
		fmt.Fprintf(w, "\n$ kubectl kubenexus explain podgroup/%s -n %s\n", p.Gang, p.Namespace)
		r, err := e.Explain(ctx, p.Namespace, "podgroup", p.Gang)
		if err != nil {
			return fmt.Errorf("explaining PodGroup %s/%s: %w", p.Namespace, p.Gang, err)
		}
		if err := r.Write(w); err != nil {
			return err
		}
	}
	return nil
}

// taintedNode creates a kwok node of room labelled and tainted with taint, so that
// only a scenario's own pods (which select and tolerate it) land there, and waits
// until it is Ready.
func (c *Cluster) taintedNode(ctx context.Context, name, taint string, room corev1.ResourceList) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok", taint: "true"}}}
	node.Status.Capacity, node.Status.Allocatable = room, room.DeepCopy()
	if err := c.Client.Create(ctx, node); err != nil {
		return err
	}
	return waitFor(ctx, time.Minute, func() error {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		if !ready(n) {
			return fmt.Errorf("node %s is not Ready yet", name)
		}
		n.Spec.Taints = []corev1.Taint{{Key: taint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		return c.Client.Update(ctx, n)
	})
}

// ETAResult is what the what-if scenario saw: the earliest start the what-if gave
// (zero: none), and when the Job, submitted right after, really bound.
type ETAResult struct {
	Start, Bound time.Time
	// Report is the what-if's output.
	Report string
}

// ETA scenario: one node of its own (tainted, so that nothing else lands there),
// a pod holding most of it that may run etaDeadline (its activeDeadlineSeconds:
// kwok fails it then, as the kubelet would), and a Job that needs the room.
const (
	etaNode     = "demo-eta-0"
	etaTaint    = "demo.kubenexus.io/eta"
	etaDeadline = 30 * time.Second
)

// RunETAScenario asks `kubectl kubenexus whatif` about a Job that fits only once a
// running pod reaches its runtime bound, prints the answer, then submits the Job and
// waits until it binds.
func (c *Cluster) RunETAScenario(ctx context.Context, w io.Writer) (*ETAResult, error) {
	c.logf("what-if scenario: a Job that fits once a running pod reaches its deadline (about %s)", etaDeadline)
	room := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
	if err := c.taintedNode(ctx, etaNode, etaTaint, room); err != nil {
		return nil, err
	}
	spec := func(cpu string) corev1.PodSpec {
		return corev1.PodSpec{
			NodeSelector: map[string]string{etaTaint: "true"},
			Tolerations:  []corev1.Toleration{{Key: etaTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers:   container(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("4Gi")}),
		}
	}
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: NSData, Name: "eta-running"}, Spec: spec("6")}
	running.Spec.ActiveDeadlineSeconds = ptr.To(int64(etaDeadline / time.Second))
	if err := c.Client.Create(ctx, running); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, time.Minute, func() error {
		p := &corev1.Pod{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(running), p); err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning || p.Status.StartTime == nil {
			return fmt.Errorf("pod %s is %s", running.Name, p.Status.Phase)
		}
		return nil
	}); err != nil {
		return nil, err
	}

	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Namespace: NSData, Name: "eta-next"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec("4")}}}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		return nil, err
	}
	r, err := (&explain.Explainer{Client: c.Client}).WhatIf(ctx, NSData, []*unstructured.Unstructured{{Object: raw}})
	if err != nil {
		return nil, err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "$ kubectl kubenexus whatif -f eta-next.yaml -n %s   # a Job of one 4-CPU pod; node %s's 8 CPUs hold a 6-CPU pod that may run %s\n", NSData, etaNode, etaDeadline)
	if err := r.Write(&out); err != nil {
		return nil, err
	}
	res := &ETAResult{Report: out.String()}
	if l := r.Sections[0].Line(explain.LayerStart); l != nil && l.Verdict == explain.Waiting {
		at := strings.Fields(strings.TrimPrefix(l.Text, "earliest "))
		if len(at) > 0 {
			if t, err := time.Parse(time.RFC3339, at[0]); err == nil {
				res.Start = t
			}
		}
	}
	fmt.Fprint(w, res.Report)

	if err := c.Client.Create(ctx, job); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, 3*etaDeadline, func() error {
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace(NSData), client.MatchingLabels{"job-name": job.Name}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue && p.Spec.NodeName != "" {
					res.Bound = cond.LastTransitionTime.Time
					return nil
				}
			}
		}
		return fmt.Errorf("job %s has no bound pod yet", job.Name)
	}); err != nil {
		return res, err
	}
	after := ""
	if !res.Start.IsZero() {
		after = fmt.Sprintf(" (%s after the estimate)", res.Bound.Sub(res.Start).Round(time.Second))
	}
	fmt.Fprintf(w, "Job %s submitted: its pod bound at %s%s\n", job.Name, res.Bound.UTC().Format(time.RFC3339), after)
	return res, nil
}
