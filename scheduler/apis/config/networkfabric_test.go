package config

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// The level kept whole: nvidia.com/gpu.clique's by default, the level that sets
// keepWhole otherwise, none when the clique's sets it false; two levels set true
// are refused, naming the field.
func TestNetworkFabricKeepWhole(t *testing.T) {
	tests := map[string]struct {
		raw     string
		want    string // the level kept whole, "" none
		wantErr string
	}{
		"defaults":                   {raw: ``, want: "nvlink"},
		"the clique level, unset":    {raw: `{"levels": [{"name": "nvl", "nodeLabel": "nvidia.com/gpu.clique"}, {"name": "rack", "nodeLabel": "r"}]}`, want: "nvl"},
		"another level set":          {raw: `{"levels": [{"name": "nvl", "nodeLabel": "nvidia.com/gpu.clique"}, {"name": "rack", "nodeLabel": "r", "keepWhole": true}]}`, want: "rack"},
		"the clique level set false": {raw: `{"levels": [{"name": "nvl", "nodeLabel": "nvidia.com/gpu.clique", "keepWhole": false}, {"name": "rack", "nodeLabel": "r"}]}`, want: ""},
		"two set true": {raw: `{"levels": [{"name": "tor", "nodeLabel": "t", "keepWhole": true}, {"name": "rack", "nodeLabel": "r", "keepWhole": true}]}`,
			wantErr: "levels[1].keepWhole: Invalid value: true: at most one level may be kept whole; levels[0] (tor) is already"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var obj runtime.Object
			if tc.raw != "" {
				obj = &runtime.Unknown{Raw: []byte(tc.raw)}
			}
			got, err := DecodeNetworkFabricArgs(obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			kept := ""
			for _, l := range Levels(got.Levels) {
				if l.KeepWhole {
					kept = l.Name
				}
			}
			if kept != tc.want {
				t.Errorf("level kept whole %q, want %q", kept, tc.want)
			}
		})
	}
}
