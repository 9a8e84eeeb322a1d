package topology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestPolicyOf(t *testing.T) {
	pg := func(mode v1alpha1.NetworkTopologyMode, level string) *v1alpha1.PodGroup {
		return testutil.MakePodGroup("g", "ns").MinMember(2).NetworkTopology(mode, v1alpha1.NetworkTopologyLevel(level)).Obj()
	}
	pod := func(kv ...string) *corev1.Pod {
		w := testutil.MakePod("p", "ns")
		for i := 0; i+1 < len(kv); i += 2 {
			w = w.Annotation(kv[i], kv[i+1])
		}
		return w.Obj()
	}
	tests := map[string]policyCase{
		"PodGroup required rack":           {pod(), pg("required", "rack"), Policy{Required: true, Level: 2, Source: "PodGroup g spec.networkTopology"}, true, ""},
		"PodGroup wins over an annotation": {pod(v1alpha1.AnnotationCoLocate, "none"), pg("preferred", "tor"), Policy{Level: 1, Source: "PodGroup g spec.networkTopology"}, true, ""},
		"PodGroup names no level":          {pod(), pg("required", "spine"), Policy{}, false, `spec.networkTopology.level "spine" is not a topology level; the levels are nvlink, tor, rack, zone`},
		"co-locate strict":                 {pod(v1alpha1.AnnotationCoLocate, "strict"), nil, Policy{Required: true, Level: 3, Source: v1alpha1.AnnotationCoLocate}, true, ""},
		"co-locate none":                   {pod(v1alpha1.AnnotationCoLocate, "none"), nil, Policy{}, false, ""},
		"co-locate typo":                   {pod(v1alpha1.AnnotationCoLocate, "always"), nil, Policy{}, false, `scheduling.kubenexus.io/co-locate="always": must be strict, preferred or none`},
		"Kueue required rack label":        {pod(v1alpha1.AnnotationKueueRequiredTopology, v1alpha1.LabelRack), nil, Policy{Required: true, Level: 2, Source: v1alpha1.AnnotationKueueRequiredTopology}, true, ""},
		"KAI preferred zone label":         {pod(v1alpha1.AnnotationKAIPreferredPlacement, v1alpha1.LabelTopologyZone), nil, Policy{Level: 3, Source: v1alpha1.AnnotationKAIPreferredPlacement}, true, ""},
		"Kueue label no level reads":       {pod(v1alpha1.AnnotationKueueRequiredTopology, "cloud.example.com/block"), nil, Policy{}, false, "not the node label of a topology level"},
		"LWS exclusive rack":               {pod(v1alpha1.AnnotationLWSExclusiveTopology, v1alpha1.LabelRack), nil, Policy{Required: true, Level: 2, Source: v1alpha1.AnnotationLWSExclusiveTopology}, true, ""},
		"LWS exclusive per node pool":      {pod(v1alpha1.AnnotationLWSExclusiveTopology, "cloud.google.com/gke-nodepool"), nil, Policy{Level: 3, Source: "default"}, true, ""},
		"no policy: preferred, any level":  {pod(), nil, Policy{Level: 3, Source: "default"}, true, ""},
		// Started by Kueue for a Workload its TAS placed: Kueue's node selectors hold
		// the domains, even over node labels that are no level here.
		"placed by Kueue TAS": {pod(v1alpha1.AnnotationKueueWorkload, "job-train-1a2b3", v1alpha1.AnnotationKueueRequiredTopology, v1alpha1.LabelRack,
			v1alpha1.AnnotationKueueSliceRequiredTopology, v1alpha1.LabelGPUClique, v1alpha1.AnnotationKueueSliceSize, "8"), nil, Policy{}, false, ""},
		"placed by Kueue TAS, its own labels": {pod(v1alpha1.AnnotationKueueWorkload, "job-train-1a2b3", v1alpha1.AnnotationKueueRequiredTopology, "cloud.example.com/block"), nil, Policy{}, false, ""},
		"placed by Kueue TAS, unconstrained":  {pod(v1alpha1.AnnotationKueueWorkload, "job-train-1a2b3", v1alpha1.AnnotationKueueUnconstrainedTopology, "true"), nil, Policy{}, false, ""},
		// A Kueue Workload's pods without TAS annotations are placed as any gang.
		"Kueue's pods without TAS": {pod(v1alpha1.AnnotationKueueWorkload, "job-train-1a2b3"), nil, Policy{Level: 3, Source: "default"}, true, ""},
		// A PodGroup's own policy is KubeNexus's to plan, wherever the pods came from.
		"PodGroup over Kueue TAS": {pod(v1alpha1.AnnotationKueueWorkload, "w", v1alpha1.AnnotationKueueRequiredTopology, v1alpha1.LabelRack), pg("required", "tor"), Policy{Required: true, Level: 1, Source: "PodGroup g spec.networkTopology"}, true, ""},
	}
	runPolicyCases(t, tests)
}

// policyCase is one pod and PodGroup, and the policy PolicyOf should read (or the
// error it should give).
type policyCase struct {
	pod     *corev1.Pod
	pg      *v1alpha1.PodGroup
	want    Policy
	wantOK  bool
	wantErr string
}

func runPolicyCases(t *testing.T, tests map[string]policyCase) {
	t.Helper()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok, err := PolicyOf(tc.pod, tc.pg, DefaultLevels)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
