package chartconfig

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const valid = `apiVersion: scheduling.kubenexus.io/v1alpha1
kind: KubeNexusConfig
metadata:
  name: default
spec:
  scheduler:
    replicas: 2
`

func configMap(data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubenexus-system", Name: ConfigMapName}, Data: map[string]string{DataKey: data}}
}

// What the chart renders is applied as written (only the fields it sets); anything
// else is refused with a message naming what is wrong.
func TestDecode(t *testing.T) {
	u, err := Decode(configMap("---\n" + valid + "status:\n  configHash: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u.GetName() != "default" || u.GetKind() != "KubeNexusConfig" {
		t.Errorf("decoded %s %s, want KubeNexusConfig default", u.GetKind(), u.GetName())
	}
	if _, found := u.Object["status"]; found {
		t.Error("status is applied; it is the operator's")
	}
	scheduler := u.Object["spec"].(map[string]any)["scheduler"].(map[string]any)
	if len(scheduler) != 1 || scheduler["replicas"] != int64(2) {
		t.Errorf("spec.scheduler %v, want only replicas: 2 (the fields the chart set)", scheduler)
	}

	for name, tc := range map[string]struct {
		cm   *corev1.ConfigMap
		want string
	}{
		"no key":          {&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName}}, "has no key kubenexusconfig.yaml"},
		"unknown field":   {configMap(strings.Replace(valid, "replicas", "replica", 1)), `unknown field "spec.scheduler.replica"`},
		"another name":    {configMap(strings.Replace(valid, "name: default", "name: mine", 1)), `metadata.name "mine"; the operator acts only on "default"`},
		"another kind":    {configMap(strings.Replace(valid, "kind: KubeNexusConfig", "kind: PodGroup", 1)), `kind "PodGroup"`},
		"two documents":   {configMap(valid + "---\n" + valid), "more than one YAML document"},
		"not YAML at all": {configMap("{"), "not YAML"},
	} {
		_, err := Decode(tc.cm)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
}
