package plugins

import (
	"context"
	"slices"
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
)

// The operator renders names.Implemented into the scheduler configuration; a name
// missing from the registry would crash the scheduler, a registered plugin missing
// from the list could never be turned on.
func TestRegistryMatchesImplementedNames(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	registry := runtime.Registry{}
	for _, opt := range RegistryOptions(ctx) {
		if err := opt(registry); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for name := range registry {
		got = append(got, name)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(names.Implemented))
	if !slices.Equal(got, want) {
		t.Fatalf("registered plugins %v, names.Implemented %v", got, want)
	}
}
