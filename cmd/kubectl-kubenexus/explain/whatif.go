package explain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kube-nexus/kubenexus/api/topology"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/controllers/feasibility"
)

// Decode reads the objects of a YAML or JSON stream (documents separated by ---).
func Decode(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(raw) == 0 {
			continue
		}
		// Through JSON again, so that numbers are int64 as the API machinery has them.
		obj := &unstructured.Unstructured{}
		js, err := (&unstructured.Unstructured{Object: raw}).MarshalJSON()
		if err != nil {
			return nil, err
		}
		if err := obj.UnmarshalJSON(js); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
}

// WhatIf answers, for each object, whether all its pods would be admitted and placed
// now, all together, and where; if not, why, and the earliest time they could start
// if running pods end at their runtime bounds. Nothing is created. namespace applies
// to objects that name none.
func (e *Explainer) WhatIf(ctx context.Context, namespace string, objs []*unstructured.Unstructured) (*Report, error) {
	if len(objs) == 0 {
		return nil, fmt.Errorf("no objects to try")
	}
	st, err := e.read(ctx, "")
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("whatif places the pods among every node's running pods, which needs cluster-wide read (ClusterRole kubenexus-explain): %w", err)
	}
	if err != nil {
		return nil, err
	}
	r := &Report{Subject: "what if"}
	for _, obj := range objs {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		reps, err := workload.ReplicasOf(obj)
		if err != nil {
			return nil, err
		}
		s, err := e.whatIf(ctx, st, ns, obj, reps)
		if err != nil {
			return nil, err
		}
		s.Title = fmt.Sprintf("%s %s/%s", obj.GetKind(), ns, obj.GetName())
		r.Sections = append(r.Sections, s)
	}
	if len(r.Sections) == 1 {
		r.Subject, r.Sections[0].Title = "what if "+r.Sections[0].Title+" were created now", ""
	}
	return r, nil
}

func (e *Explainer) whatIf(ctx context.Context, st *state, namespace string, obj *unstructured.Unstructured, reps []workload.Replicas) (Section, error) {
	g := &group{ns: &corev1.Namespace{}}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: namespace}, g.ns); err != nil {
		if !notFound(err) {
			return Section{}, err
		}
		g.ns = nil
	}
	w := &feasibility.Workload{Tenant: workload.TierOf(workload.Namespace{Labels: g.tierLabels(st)}, "")}
	total := 0
	var policy *topology.Policy
	for _, rep := range reps {
		w.PodSets = append(w.PodSets, feasibility.PodSet{Name: rep.Role, Count: rep.Count, Template: rep.Template})
		total += rep.Count
		pod := &corev1.Pod{ObjectMeta: rep.Template.ObjectMeta, Spec: rep.Template.Spec}
		pod.Namespace = namespace
		p, ok, err := topology.PolicyOf(pod, nil, st.cluster.Levels)
		if err != nil {
			return Section{}, err
		}
		if ok && p.Required && (policy == nil || p.Level < policy.Level) {
			policy = &p
		}
		if ok {
			w.PodSets[len(w.PodSets)-1].Slices = feasibility.SliceLayers(p, st.cluster.Levels)
		}
	}
	if policy != nil {
		for i := range w.PodSets {
			w.PodSets[i].RequiredTopology = policy.LevelsWith(st.cluster.Levels)[policy.Level].NodeLabel
		}
	}
	var s Section
	adm := Line{Layer: LayerAdmission, Verdict: OK, Text: fmt.Sprintf("%s, all or nothing, tenant tier %s", plural(total, "pod", "pods"), w.Tenant)}
	if total == 1 {
		adm.Text = fmt.Sprintf("1 pod, tenant tier %s", w.Tenant)
	}
	s.Lines = append(s.Lines, adm)
	q, quotaStart, err := e.whatIfQueue(ctx, st, namespace, obj, w, reps)
	if err != nil {
		return Section{}, err
	}
	s.Lines = append(s.Lines, q)
	d := feasibility.Decide(st.cluster, w)
	if !d.Fits && d.Eligible > 0 && len(reps) > 0 {
		// Created now, it would queue behind the gangs KubeNexus's queue orders
		// before it: those of higher priority, and those of its own first seen earlier.
		pod := &corev1.Pod{ObjectMeta: *reps[0].Template.ObjectMeta.DeepCopy(), Spec: reps[0].Template.Spec}
		pod.Namespace, pod.Name, pod.CreationTimestamp = namespace, obj.GetName(), metav1.NewTime(st.now)
		if pod.Spec.SchedulerName == "" {
			pod.Spec.SchedulerName = v1alpha1.DefaultSchedulerName
		}
		g.forecast = e.forecast(ctx, st, &group{ns: g.ns, pending: []*corev1.Pod{pod}, members: []corev1.Pod{*pod}}, w)
	}
	s.Lines = append(s.Lines, placementLines(g, st, w, &d)...)
	if quotaStart != nil && d.Eligible > 0 {
		// Queued by Kueue: when its queues admit it comes first.
		s.Lines = slices.DeleteFunc(s.Lines, func(l Line) bool { return l.Layer == LayerStart })
		s.Lines = append(s.Lines, *quotaStart)
	}
	return s, nil
}

// whatIfQueue says when the ClusterQueue the object's LocalQueue names would admit
// all its pods: the object is played as one more Workload queued now in the
// forecast of Kueue's queues (feasibility.Quotas: the queue's order, cohort
// borrowing and lending limits, fair sharing, preemption), and the pod sets get
// the flavors it is admitted with, whose node labels the placement lines then
// honour. The start line it returns replaces the placement's. A reader that may
// not list Kueue's queues gets what the ClusterQueue's nominal quota holds now
// (quotaFit) and no start line.
func (e *Explainer) whatIfQueue(ctx context.Context, st *state, namespace string, obj *unstructured.Unstructured, w *feasibility.Workload, reps []workload.Replicas) (Line, *Line, error) {
	lq := obj.GetLabels()[v1alpha1.LabelKueueQueueName]
	if lq == "" {
		return Line{Layer: LayerQueue, Verdict: None, Text: "not queued by Kueue (no " + v1alpha1.LabelKueueQueueName + " label)"}, nil, nil
	}
	q := &kueue.LocalQueue{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: lq}, q); err != nil {
		if notFound(err) || feasibility.NotServed(err) {
			return Line{Layer: LayerQueue, Verdict: Blocked, Text: fmt.Sprintf("LocalQueue %s/%s does not exist: Kueue would hold the job", namespace, lq),
				Action: "create the LocalQueue, or name one that exists"}, nil, nil
		}
		return Line{}, nil, err
	}
	w.ClusterQueue = string(q.Spec.ClusterQueue)
	cq := &kueue.ClusterQueue{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: w.ClusterQueue}, cq); err != nil {
		if notFound(err) {
			return Line{Layer: LayerQueue, Verdict: Blocked, Text: fmt.Sprintf("LocalQueue %s names ClusterQueue %s, which does not exist: Kueue would hold the job", lq, w.ClusterQueue),
				Action: "create the ClusterQueue, or point the LocalQueue at one that exists"}, nil, nil
		}
		return Line{}, nil, err
	}
	flavors, short := quotaFit(cq, feasibility.QuotaNeed(w.PodSets))
	route := fmt.Sprintf("LocalQueue %s → ClusterQueue %s", lq, w.ClusterQueue)
	if l, start, ok := e.whatIfAdmission(ctx, st, namespace, obj, w, reps, route, short); ok {
		return l, start, nil
	}
	if short != "" {
		return Line{Layer: LayerQueue, Verdict: Blocked,
			Text:   fmt.Sprintf("%s has not the quota now (%s); borrowing from its cohort is not computed (Kueue's queues cannot be listed)", route, short),
			Action: "wait for the queue's admitted workloads to finish, or raise its nominal quota"}, nil, nil
	}
	for i := range w.PodSets {
		w.PodSets[i].Flavors = flavors
	}
	return Line{Layer: LayerQueue, Verdict: OK, Text: fmt.Sprintf("%s has the quota now, without borrowing: %s", route, flavorText(flavors))}, nil, nil
}

// whatIfAdmission plays the object in the forecast of Kueue's queues (false when
// they cannot be read): the queue line says when its ClusterQueue admits it, with
// which flavors, borrowing or preempting; the start line when its pods start.
// short is why the queue's nominal quota does not hold it now ("" when it does).
func (e *Explainer) whatIfAdmission(ctx context.Context, st *state, namespace string, obj *unstructured.Unstructured, w *feasibility.Workload, reps []workload.Replicas, route, short string) (Line, *Line, bool) {
	waiters, err := feasibility.ReadWaiters(ctx, e.Client, st.cluster, st.pods)
	if err != nil || waiters.Quotas == nil {
		return Line{}, nil, false
	}
	kueuePriority, podPriority := e.whatIfPriorities(ctx, obj, reps)
	qw := &feasibility.QuotaWorkload{Name: types.NamespacedName{Namespace: namespace, Name: obj.GetName()}, ClusterQueue: w.ClusterQueue,
		Priority: kueuePriority, Queued: st.now, Request: map[corev1.ResourceName]int64{}, Runtime: whatIfRuntime(obj, reps), Gangs: []int{len(waiters.Ahead)}}
	for name, v := range feasibility.QuotaNeed(w.PodSets) {
		qw.Request[name] = v.MilliValue()
	}
	waiters.Quotas.Wait(qw)
	ahead := append(waiters.Ahead, feasibility.Ahead{Name: qw.Name.String(), Workload: w, Runtime: qw.Runtime, Priority: podPriority, Quota: qw})
	s := st.cluster.ForecastQueue(ahead, waiters.Quotas, st.now)[len(ahead)-1]
	if s.Admitted.IsZero() {
		why := "the quota it needs is held by workloads with no runtime bound, is more than the queue and its cohort can lend, or the queue is stopped"
		if short != "" {
			why += "; now: " + short
		}
		return Line{Layer: LayerQueue, Verdict: Blocked, Text: fmt.Sprintf("%s is not forecast to admit it (%s)", route, why),
			Action: "raise the queue's nominal quota, or ask for less"}, nil, true
	}
	for i := range w.PodSets {
		w.PodSets[i].Flavors = qw.Flavors
	}
	how := flavorText(qw.Flavors)
	if qw.Borrows {
		how += ", borrowing from its cohort"
	}
	if len(qw.Preempted) > 0 {
		names := make([]string, len(qw.Preempted))
		for i, n := range qw.Preempted {
			names[i] = n.String()
		}
		how += fmt.Sprintf(", preempting %s (Kueue's preemption)", join(names))
	}
	l := Line{Layer: LayerQueue, Verdict: OK, Text: fmt.Sprintf("%s admits it now: %s", route, how)}
	if s.Admitted.After(st.now) {
		l.Verdict = Waiting
		l.Text = fmt.Sprintf("%s admits it %s, when the quota it needs frees: %s", route, when(s.Admitted, st.now), how)
	}
	start := quotaStart(s, w.ClusterQueue, st.now)
	return l, &start, true
}

// flavorText names the flavors a Workload is admitted with.
func flavorText(flavors []string) string {
	if len(flavors) == 0 {
		return "no quota it covers is asked for"
	}
	return "flavor " + strings.Join(flavors, ", ")
}

// whatIfPriorities are the object's priority in Kueue's queue (its
// WorkloadPriorityClass, else its pods' PriorityClass) and its pods' in
// KubeNexus's (the lowest PriorityClass value of its pod templates). A class that
// cannot be read counts as 0.
func (e *Explainer) whatIfPriorities(ctx context.Context, obj *unstructured.Unstructured, reps []workload.Replicas) (kueuePriority, podPriority int32) {
	for i, rep := range reps {
		var v int32
		switch {
		case rep.Template.Spec.Priority != nil:
			v = *rep.Template.Spec.Priority
		case rep.Template.Spec.PriorityClassName != "":
			pc := &schedulingv1.PriorityClass{}
			if err := e.Client.Get(ctx, client.ObjectKey{Name: rep.Template.Spec.PriorityClassName}, pc); err == nil {
				v = pc.Value
			}
		}
		if i == 0 || v < podPriority {
			podPriority = v
		}
	}
	kueuePriority = podPriority
	if name := obj.GetLabels()[v1alpha1.LabelKueuePriorityClass]; name != "" {
		wpc := &kueue.WorkloadPriorityClass{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, wpc); err == nil {
			kueuePriority = wpc.Value
		}
	}
	return kueuePriority, podPriority
}

// whatIfRuntime is how long the object's pods run once started, as Kueue's
// Workload would say (feasibility.RuntimeOf): its maximum execution time label,
// else every pod template's bound; 0 when unknown.
func whatIfRuntime(obj *unstructured.Unstructured, reps []workload.Replicas) time.Duration {
	wl := &kueue.Workload{}
	if v, err := strconv.ParseInt(obj.GetLabels()[v1alpha1.LabelKueueMaxExecTime], 10, 32); err == nil {
		wl.Spec.MaximumExecutionTimeSeconds = ptr.To(int32(v))
	}
	for _, rep := range reps {
		wl.Spec.PodSets = append(wl.Spec.PodSets, kueue.PodSet{Template: rep.Template})
	}
	return feasibility.RuntimeOf(wl)
}

// DecodeBytes is Decode over a byte slice.
func DecodeBytes(b []byte) ([]*unstructured.Unstructured, error) { return Decode(bytes.NewReader(b)) }
