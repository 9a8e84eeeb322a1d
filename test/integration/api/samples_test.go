package api_test

import (
	"os"
	"path/filepath"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

var _ = Describe("The samples in config/samples", func() {
	dir := filepath.Join(testenv.RepoRoot(), "config", "samples")

	// listed returns the files kustomization.yaml names.
	listed := func() []string {
		raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var k struct {
			Resources []string `json:"resources"`
		}
		Expect(yaml.Unmarshal(raw, &k)).To(Succeed())
		return k.Resources
	}

	It("are all listed in kustomization.yaml", func() {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, f := range files {
			if b := filepath.Base(f); b != "kustomization.yaml" {
				names = append(names, b)
			}
		}
		got := listed()
		sort.Strings(got)
		Expect(got).To(Equal(names))
		Expect(len(names)).To(BeNumerically(">=", 8))
	})

	It("are each accepted by the API server with strict field validation", func() {
		kinds := map[string]int{}
		for _, f := range listed() {
			raw, err := os.ReadFile(filepath.Join(dir, f))
			Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(raw, &u.Object)).To(Succeed(), f)
			if ns := u.GetNamespace(); ns != "" {
				err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
				if !apierrors.IsAlreadyExists(err) {
					Expect(err).NotTo(HaveOccurred())
				}
			}
			Expect(k8sClient.Create(ctx, u)).To(Succeed(), "sample %s", f)
			kinds[u.GetKind()]++
		}
		Expect(kinds).To(HaveKey("KubeNexusConfig"))
		Expect(kinds).To(HaveKey("PodGroup"))
		Expect(kinds).To(HaveKey("ResourceReservation"))
		Expect(kinds).To(HaveKey("HardwareTier"))
	})
})
