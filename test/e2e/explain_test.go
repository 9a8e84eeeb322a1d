package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// checkExplainAndETA: kubectl kubenexus explains the gang larger than the fleet —
// capacity blocks it and no time can be given — and a what-if's earliest start for a
// Job that fits once a running pod reaches its deadline is when the Job, submitted
// then, really binds.
func checkExplainAndETA(ctx context.Context, t *testing.T, c *demo.Cluster, placements []demo.Placement) {
	t.Helper()
	if err := c.ExplainWaiting(ctx, testenv.LogWriter{T: t}, placements); err != nil {
		t.Error(err)
	}
	// What users run it as: an identity bound to the chart's kubenexus-explain only.
	reader, done := explainer(ctx, t, c)
	defer done()
	for _, p := range placements {
		if !p.TooBig {
			continue
		}
		var r *explain.Report
		if err := poll(time.Minute, func() (err error) { // the RBAC authorizer's cache takes a moment
			r, err = (&explain.Explainer{Client: reader}).Explain(ctx, p.Namespace, "podgroup", p.Gang)
			return err
		}); err != nil {
			t.Errorf("explain podgroup/%s as a kubenexus-explain user: %v", p.Gang, err)
			continue
		}
		s := r.Sections[0]
		if l := s.Line(explain.LayerGang); l == nil || l.Verdict != explain.Waiting {
			t.Errorf("explain podgroup/%s: gang line %+v, want waiting", p.Gang, l)
		}
		if l := s.Line(explain.LayerCapacity); l == nil || l.Verdict != explain.Blocked {
			t.Errorf("explain podgroup/%s: capacity line %+v, want blocked", p.Gang, l)
		}
		if l := s.Line(explain.LayerStart); l == nil || l.Verdict != explain.Unknown {
			t.Errorf("explain podgroup/%s: start line %+v, want unknown (nothing in its way is bounded)", p.Gang, l)
		}
	}

	checkExplainAgreesWithScheduler(ctx, t, reader, placements)
	for _, p := range placements {
		if p.TooBig {
			other := demo.NSData
			if p.Namespace == other {
				other = demo.Namespace
			}
			checkNamespaceExplain(ctx, t, c, p, other)
			break
		}
	}

	// whatif as that user too (a Job naming a LocalQueue that does not exist).
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "probe", "labels": map[string]any{v1alpha1.LabelKueueQueueName: "absent"}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": "x", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}}}}}}}
	if r, err := (&explain.Explainer{Client: reader}).WhatIf(ctx, demo.NSData, []*unstructured.Unstructured{job}); err != nil {
		t.Errorf("whatif as a kubenexus-explain user: %v", err)
	} else if l := r.Sections[0].Line(explain.LayerQueue); l == nil || l.Verdict != explain.Blocked || !strings.Contains(l.Text, "LocalQueue "+demo.NSData+"/absent does not exist") {
		t.Errorf("whatif of a Job naming a missing LocalQueue: queue line %+v", l)
	}

	res, err := c.RunETAScenario(ctx, testenv.LogWriter{T: t})
	if err != nil {
		t.Fatalf("what-if scenario: %v", err)
	}
	if res.Start.IsZero() {
		t.Fatalf("the what-if gave no start time:\n%s", res.Report)
	}
	// The estimate is to the second; the Job cannot bind before the running pod
	// ends, and binds once the scheduler hears of it (a requeue and at most one
	// backoff later).
	if res.Bound.Before(res.Start.Add(-time.Second)) || res.Bound.After(res.Start.Add(time.Minute)) {
		t.Errorf("the Job bound at %s, the what-if said %s", res.Bound.UTC().Format(time.RFC3339), res.Start.UTC().Format(time.RFC3339))
	}
}

// checkSharedGPUs: on GPUs NVIDIA's DRA driver publishes as shareable devices, the
// second 20Gi inference pod shares the GPU the first broke, and a gang of three
// whole GPUs then finds three.
func checkSharedGPUs(ctx context.Context, t *testing.T, c *demo.Cluster) {
	t.Helper()
	res, err := c.RunSharedGPUScenario(ctx, testenv.LogWriter{T: t})
	if err != nil {
		t.Fatalf("shared-GPU scenario: %v", err)
	}
	if res.Inference[0] != res.Inference[1] {
		t.Errorf("inference pods on %s and %s, want one shared GPU", res.Inference[0], res.Inference[1])
	}
	if res.GangBound != 3 {
		t.Errorf("gang: %d of 3 members bound (%v)", res.GangBound, res.GangOn)
	}
	for _, d := range res.GangOn {
		if d == res.Inference[0] {
			t.Errorf("a gang member took %s, the GPU the inference pods share", d)
		}
	}
}

// explainer is a reader with the permissions of the chart's ClusterRole
// kubenexus-explain only: a ServiceAccount's token, bound to it; done removes the
// binding and the ServiceAccount.
func explainer(ctx context.Context, t *testing.T, c *demo.Cluster) (reader client.Reader, done func()) {
	t.Helper()
	return boundReader(ctx, t, c, demo.Namespace, "explainer", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "explainer-kubenexus-explain"}})
}

// namespaceExplainer is a tenant's reader of namespace only: a ServiceAccount of
// namespace bound there to the chart's ClusterRole kubenexus-explain-namespace by a
// RoleBinding.
func namespaceExplainer(ctx context.Context, t *testing.T, c *demo.Cluster, namespace string) (reader client.Reader, done func()) {
	t.Helper()
	return boundReader(ctx, t, c, namespace, "tenant-explainer", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "tenant-explainer"}})
}

// boundReader creates the ServiceAccount namespace/name, the binding (a
// ClusterRoleBinding or a RoleBinding, to the ClusterRole of its name's suffix) of it,
// and a client with its token; done removes both.
func boundReader(ctx context.Context, t *testing.T, c *demo.Cluster, namespace, name string, binding client.Object) (reader client.Reader, done func()) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: sa.Name}}
	switch b := binding.(type) {
	case *rbacv1.ClusterRoleBinding:
		b.RoleRef, b.Subjects = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubenexus-explain"}, subjects
	case *rbacv1.RoleBinding:
		b.RoleRef, b.Subjects = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubenexus-explain-namespace"}, subjects
	}
	if err := c.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = tr.Status.Token
	reader, err = client.New(cfg, client.Options{Scheme: c.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return reader, func() {
		if err := c.Client.Delete(ctx, binding); err != nil {
			t.Error(err)
		}
		if err := c.Client.Delete(ctx, sa); err != nil {
			t.Error(err)
		}
	}
}

// checkNamespaceExplain: a tenant bound to kubenexus-explain-namespace in its own
// namespace explains its waiting gang — the gang line as a cluster reader sees it,
// the scheduler's own refusal in place of the placement layers — and can read
// nothing of another namespace: explain there and whatif are refused.
func checkNamespaceExplain(ctx context.Context, t *testing.T, c *demo.Cluster, p demo.Placement, other string) {
	t.Helper()
	reader, done := namespaceExplainer(ctx, t, c, p.Namespace)
	defer done()
	var r *explain.Report
	if err := poll(time.Minute, func() (err error) { // the RBAC authorizer's cache takes a moment
		r, err = (&explain.Explainer{Client: reader}).Explain(ctx, p.Namespace, "podgroup", p.Gang)
		return err
	}); err != nil {
		t.Errorf("explain podgroup/%s as a kubenexus-explain-namespace user of %s: %v", p.Gang, p.Namespace, err)
		return
	}
	var b strings.Builder
	_ = r.Write(&b)
	s := r.Sections[0]
	if r.View != explain.NamespaceView {
		t.Errorf("explain podgroup/%s in the namespace view: view %q, want %q\n%s", p.Gang, r.View, explain.NamespaceView, b.String())
	}
	if l := s.Line(explain.LayerGang); l == nil || l.Verdict != explain.Waiting {
		t.Errorf("explain podgroup/%s in the namespace view: gang line %+v, want waiting\n%s", p.Gang, l, b.String())
	}
	if l := s.Line(explain.LayerScheduler); l == nil || l.Verdict != explain.Blocked || l.Action == "" {
		t.Errorf("explain podgroup/%s in the namespace view: scheduler line %+v, want blocked (the scheduler refused it) with the role that shows more\n%s", p.Gang, l, b.String())
	}
	if l := s.Line(explain.LayerCapacity); l != nil {
		t.Errorf("explain podgroup/%s in the namespace view: a capacity line %+v from a reader that may not list every node's pods", p.Gang, l)
	}
	if _, err := (&explain.Explainer{Client: reader}).Explain(ctx, other, "podgroup", p.Gang); !apierrors.IsForbidden(err) {
		t.Errorf("explain in namespace %s by a reader of %s only: %v, want forbidden", other, p.Namespace, err)
	}
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "probe"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}}}}}}
	if _, err := (&explain.Explainer{Client: reader}).WhatIf(ctx, p.Namespace, []*unstructured.Unstructured{job}); err == nil || !strings.Contains(err.Error(), "kubenexus-explain") {
		t.Errorf("whatif by a reader of one namespace: %v, want an error naming the ClusterRole it needs", err)
	}
}

// checkExplainAgreesWithScheduler: for every gang still waiting, explain may say
// "they fit now" only if the scheduler agrees — within half a minute a member binds
// or explain stops saying so. Explain computes with the scheduler's rules (placed
// members anchor a required gang); a "fits now" the scheduler keeps refusing is a
// promise that never comes (issue 69).
func checkExplainAgreesWithScheduler(ctx context.Context, t *testing.T, reader client.Reader, placements []demo.Placement) {
	t.Helper()
	// bound counts the gang's bound pods, and trying those the scheduler is trying to
	// place (no node, no scheduling gate: not held by Kueue or the webhook).
	count := func(p demo.Placement) (bound, trying int) {
		pods := &corev1.PodList{}
		if err := reader.List(ctx, pods, client.InNamespace(p.Namespace), client.MatchingLabels(p.Selector)); err != nil {
			t.Errorf("listing the pods of %s: %v", p.Name, err)
			return 0, 0
		}
		for i := range pods.Items {
			switch pod := &pods.Items[i]; {
			case pod.Spec.NodeName != "":
				bound++
			case len(pod.Spec.SchedulingGates) == 0 && pod.DeletionTimestamp == nil:
				trying++
			}
		}
		return bound, trying
	}
	bound := func(p demo.Placement) int { b, _ := count(p); return b }
	fitsNow := func(p demo.Placement) (bool, string, error) {
		r, err := (&explain.Explainer{Client: reader}).Explain(ctx, p.Namespace, "podgroup", p.Gang)
		if err != nil || len(r.Sections) == 0 {
			return false, "", err
		}
		l := r.Sections[0].Line(explain.LayerStart)
		return l != nil && l.Verdict == explain.OK, func() string {
			var b strings.Builder
			_ = r.Write(&b)
			return b.String()
		}(), nil
	}
	for _, p := range placements {
		if p.Gang == "" || p.ForeignGang != "" || p.Bound >= p.Pods {
			continue
		}
		before, trying := count(p)
		if trying == 0 {
			continue
		}
		fits, report, err := fitsNow(p)
		if err != nil {
			t.Errorf("explain podgroup/%s: %v", p.Gang, err)
			continue
		}
		if !fits {
			continue
		}
		if err := poll(30*time.Second, func() error {
			if bound(p) > before {
				return nil
			}
			if still, _, err := fitsNow(p); err != nil || still {
				return fmt.Errorf("still said to fit, no member bound")
			}
			return nil
		}); err != nil {
			t.Errorf("explain says gang %s/%s fits now, but the scheduler binds none of its waiting members within 30 s (its PodGroup: %s %s):\n%s",
				p.Namespace, p.Gang, p.GangReason, p.GangMessage, report)
		}
	}
}
