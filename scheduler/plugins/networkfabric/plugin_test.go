package networkfabric

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	testutil "github.com/kube-nexus/kubenexus/test/util"
)

// Planned gang members are not signable (each is limited to what its gang's plan
// has left); a pod of no gang adds nothing; a member that asks for no co-location
// is signed by its gang.
func TestSignPod(t *testing.T) {
	pl, _ := newPlugin(t, nil)
	for name, tc := range map[string]struct {
		pod      *corev1.Pod
		signable bool
		gang     string
	}{
		"a plain pod":                   {testutil.MakePod("p", "ns").Obj(), true, ""},
		"a gang member":                 {testutil.MakePod("m", "ns").PodGroup("g").Obj(), false, ""},
		"a strictly co-located member":  {testutil.MakePod("m", "ns").PodGroup("g").Annotation(v1alpha1.AnnotationCoLocate, "strict").Obj(), false, ""},
		"a member asking for no plan":   {testutil.MakePod("m", "ns").PodGroup("g").Annotation(v1alpha1.AnnotationCoLocate, "none").Obj(), true, "ns/g"},
		"a malformed co-locate request": {testutil.MakePod("m", "ns").PodGroup("g").Annotation(v1alpha1.AnnotationCoLocate, "somewhere").Obj(), false, ""},
	} {
		frags, st := pl.SignPod(context.Background(), tc.pod)
		if got := st.IsSuccess(); got != tc.signable {
			t.Errorf("%s: signable %v (%v), want %v", name, got, st, tc.signable)
		}
		got := ""
		for _, f := range frags {
			got, _ = f.Value.(string)
		}
		if got != tc.gang {
			t.Errorf("%s: gang fragment %q, want %q", name, got, tc.gang)
		}
	}
}
