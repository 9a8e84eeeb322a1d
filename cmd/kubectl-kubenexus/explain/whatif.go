package explain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
	q, err := e.whatIfQueue(ctx, namespace, obj, w)
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
	return s, nil
}

// whatIfQueue says whether the ClusterQueue the object's LocalQueue names has the
// quota for all its pods now, without borrowing (quotaFit), and gives the pod sets
// the flavors Kueue would assign, whose node labels the placement lines then honour.
func (e *Explainer) whatIfQueue(ctx context.Context, namespace string, obj *unstructured.Unstructured, w *feasibility.Workload) (Line, error) {
	lq := obj.GetLabels()[v1alpha1.LabelKueueQueueName]
	if lq == "" {
		return Line{Layer: LayerQueue, Verdict: None, Text: "not queued by Kueue (no " + v1alpha1.LabelKueueQueueName + " label)"}, nil
	}
	q := &kueue.LocalQueue{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: lq}, q); err != nil {
		if notFound(err) || feasibility.NotServed(err) {
			return Line{Layer: LayerQueue, Verdict: Blocked, Text: fmt.Sprintf("LocalQueue %s/%s does not exist: Kueue would hold the job", namespace, lq),
				Action: "create the LocalQueue, or name one that exists"}, nil
		}
		return Line{}, err
	}
	w.ClusterQueue = string(q.Spec.ClusterQueue)
	cq := &kueue.ClusterQueue{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: w.ClusterQueue}, cq); err != nil {
		if notFound(err) {
			return Line{Layer: LayerQueue, Verdict: Blocked, Text: fmt.Sprintf("LocalQueue %s names ClusterQueue %s, which does not exist: Kueue would hold the job", lq, w.ClusterQueue),
				Action: "create the ClusterQueue, or point the LocalQueue at one that exists"}, nil
		}
		return Line{}, err
	}
	flavors, short := quotaFit(cq, feasibility.QuotaNeed(w.PodSets))
	if short != "" {
		return Line{Layer: LayerQueue, Verdict: Blocked,
			Text:   fmt.Sprintf("LocalQueue %s → ClusterQueue %s has not the quota now (%s); borrowing from its cohort is not computed", lq, w.ClusterQueue, short),
			Action: "wait for the queue's admitted workloads to finish, or raise its nominal quota"}, nil
	}
	for i := range w.PodSets {
		w.PodSets[i].Flavors = flavors
	}
	where := "no quota it covers is asked for"
	if len(flavors) > 0 {
		where = "flavor " + strings.Join(flavors, ", ")
	}
	return Line{Layer: LayerQueue, Verdict: OK, Text: fmt.Sprintf("LocalQueue %s → ClusterQueue %s has the quota now, without borrowing: %s", lq, w.ClusterQueue, where)}, nil
}

// DecodeBytes is Decode over a byte slice.
func DecodeBytes(b []byte) ([]*unstructured.Unstructured, error) { return Decode(bytes.NewReader(b)) }
