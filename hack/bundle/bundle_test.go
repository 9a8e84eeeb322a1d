// The bundle is validated offline with operator-framework/api's
// validators, as `operator-sdk bundle validate` does, and checks that it carries
// config/'s CRDs and the manager as config/ defines it.
package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

)

// repoRoot is the repository root, from this module's directory (hack/bundle).
var repoRoot = filepath.Join("..", "..")

var bundleDir = filepath.Join(repoRoot, "bundle")

func TestBundleValidates(t *testing.T) {
	b, err := manifests.GetBundleFromDir(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.ObjectValidator,
		validation.GoodPracticesValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": "1.35"})
	for _, res := range validators.Validate(objs...) {
		for _, e := range res.Errors {
			t.Errorf("%s: %v", res.Name, e)
		}
		for _, w := range res.Warnings {
			// The deprecated-API check matches the resource name "events" in the core
			// group, which is core/v1 Event (GA); controller-runtime's leader election
			// records those. events.k8s.io/v1beta1, the API it means, is not used.
			if w.Level == errors.LevelWarn && !strings.Contains(w.Error(), "Migrate the API(s) for events") {
				t.Errorf("%s: warning: %v", res.Name, w)
			}
		}
	}
	if b.CSV == nil || len(b.V1CRDs) != 4 {
		t.Fatalf("bundle has CSV %v and %d CRDs, want a CSV and 4", b.CSV != nil, len(b.V1CRDs))
	}
	dep := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0]
	args := dep.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--cert-rotation=false") {
		t.Errorf("under OLM the manager must leave certificates to OLM; args %v", args)
	}
	if got := len(b.CSV.Spec.WebhookDefinitions); got != 4 {
		t.Errorf("%d webhook definitions, want 4 (3 validating, 1 pod)", got)
	}
}

// The bundle's CRDs are config/'s.
func TestBundleCRDsMatchConfig(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	for _, f := range files {
		var want apiextensionsv1.CustomResourceDefinition
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(bundleDir, "manifests", want.Spec.Group+"_"+want.Spec.Names.Plural+".yaml"))
		if err != nil {
			t.Fatalf("%s missing from the bundle (run make bundle): %v", want.Name, err)
		}
		if string(got) != string(data) {
			t.Errorf("%s differs from config/ (run make bundle)", want.Name)
		}
	}
}
