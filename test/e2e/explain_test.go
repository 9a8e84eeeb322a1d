package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
)

// checkExplainAndETA: kubectl kubenexus explains the gang larger than the fleet —
// capacity blocks it and no time can be given — and a what-if's earliest start for a
// Job that fits once a running pod reaches its deadline is when the Job, submitted
// then, really binds.
func checkExplainAndETA(ctx context.Context, t *testing.T, c *demo.Cluster, placements []demo.Placement) {
	t.Helper()
	if err := c.ExplainWaiting(ctx, testWriter{t}, placements); err != nil {
		t.Error(err)
	}
	for _, p := range placements {
		if !p.TooBig {
			continue
		}
		r, err := (&explain.Explainer{Client: c.Client}).Explain(ctx, p.Namespace, "podgroup", p.Gang)
		if err != nil {
			t.Errorf("explain podgroup/%s: %v", p.Gang, err)
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

	res, err := c.RunETAScenario(ctx, testWriter{t})
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
