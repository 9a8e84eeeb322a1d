package config

import (
	"testing"

	"k8s.io/apimachinery/pkg/version"
)

type fakeVersion struct{ info version.Info }

func (f fakeVersion) ServerVersion() (*version.Info, error) { return &f.info, nil }

func TestFeatureGatesForAPIServer(t *testing.T) {
	for minor, want := range map[int]string{35: "DRADeviceTaintRules=false", 36: "DRADeviceTaintRules=false", 37: "", 38: ""} {
		if got := FeatureGatesFlag(FeatureGatesForAPIServer(minor)); got != want {
			t.Errorf("kube-apiserver 1.%d: --feature-gates=%q, want %q", minor, got, want)
		}
	}
}

func TestAPIServerMinor(t *testing.T) {
	for _, tc := range []struct {
		major, minor string
		want         int
		wantErr      bool
	}{
		{"1", "37", 37, false},
		{"1", "36+", 36, false}, // as managed offerings report it
		{"2", "0", 0, true},
		{"1", "x", 0, true},
	} {
		got, err := APIServerMinor(fakeVersion{version.Info{Major: tc.major, Minor: tc.minor}})
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("version %s.%s: %d, %v; want %d (error %v)", tc.major, tc.minor, got, err, tc.want, tc.wantErr)
		}
	}
}
