package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	testutil "github.com/kube-nexus/kubenexus/test/util"
)

func TestShortfall(t *testing.T) {
	nodes := []Node{
		{Allocatable: testutil.ResourceList("cpu", "8", "nvidia.com/gpu", "8", "pods", "110"), Requested: testutil.ResourceList("cpu", "6", "nvidia.com/gpu", "8"), Pods: 3},
		{Allocatable: testutil.ResourceList("cpu", "4", "pods", "110"), Requested: testutil.ResourceList("cpu", "5")}, // overcommitted: counts as 0, not -1
	}
	free := FreeOf(nodes)
	tests := map[string]struct {
		min, placed corev1.ResourceList
		want        []string
	}{
		"fits":                         {testutil.ResourceList("cpu", "2"), nil, nil},
		"short of CPU and GPUs":        {testutil.ResourceList("cpu", "3", "nvidia.com/gpu", "2"), nil, []string{"1 cpu", "2 nvidia.com/gpu"}},
		"what the gang placed counts":  {testutil.ResourceList("nvidia.com/gpu", "8"), testutil.ResourceList("nvidia.com/gpu", "8"), nil},
		"pods are counted, not summed": {testutil.ResourceList("pods", "218"), nil, []string{"1 pods"}},
		"a resource no node has":       {testutil.ResourceList("example.com/fpga", "1"), nil, []string{"1 example.com/fpga"}},
		"milli-CPU precision":          {testutil.ResourceList("cpu", "2001m"), nil, []string{"1m cpu"}},
	}
	for name, tc := range tests {
		if diff := cmp.Diff(tc.want, Shortfall(tc.min, tc.placed, free)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
