package main

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestManifest(t *testing.T) {
	ps := []Platform{{"linux", "amd64"}, {"windows", "amd64"}}
	sums := map[Platform]string{ps[0]: strings.Repeat("a", 64), ps[1]: strings.Repeat("b", 64)}
	raw, err := Manifest("v0.1.0", "https://example.com/rel/", ps, sums)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion, Kind string
		Metadata         struct{ Name string }
		Spec             struct {
			Version   string
			Platforms []struct {
				Selector         struct{ MatchLabels map[string]string }
				URI, SHA256, Bin string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "kubenexus" || m.Spec.Version != "v0.1.0" || len(m.Spec.Platforms) != 2 {
		t.Fatalf("manifest:\n%s", raw)
	}
	win := m.Spec.Platforms[1]
	if win.URI != "https://example.com/rel/kubectl-kubenexus-windows-amd64.tar.gz" || win.SHA256 != sums[ps[1]] || win.Bin != "kubectl-kubenexus.exe" || win.Selector.MatchLabels["os"] != "windows" {
		t.Errorf("windows platform: %+v", win)
	}
	delete(sums, ps[1])
	if _, err := Manifest("v0.1.0", "https://example.com", ps, sums); err == nil || !strings.Contains(err.Error(), "windows/amd64: no SHA-256") {
		t.Errorf("an archive without a checksum: %v", err)
	}
}
