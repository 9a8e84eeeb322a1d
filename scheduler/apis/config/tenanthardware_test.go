package config

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestDecodeTenantHardwareArgs(t *testing.T) {
	tests := map[string]struct {
		raw                    string
		wantUntiered, wantBorr int32
		wantErr                string
	}{
		"defaults":        {raw: ``, wantUntiered: 50, wantBorr: 0},
		"set":             {raw: `{"untieredNodeScore": 20, "borrowedNodeScore": 10}`, wantUntiered: 20, wantBorr: 10},
		"above the scale": {raw: `{"untieredNodeScore": 101}`, wantErr: "TenantHardwareArgs.untieredNodeScore: Invalid value: 101: must be between 0 and 100"},
		"negative":        {raw: `{"borrowedNodeScore": -1}`, wantErr: "TenantHardwareArgs.borrowedNodeScore: Invalid value: -1: must be between 0 and 100"},
		"misspelt field":  {raw: `{"untieredScore": 30}`, wantErr: `unknown field "untieredScore"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var obj runtime.Object
			if tc.raw != "" {
				obj = &runtime.Unknown{Raw: []byte(tc.raw)}
			}
			got, err := DecodeTenantHardwareArgs(obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *got.UntieredNodeScore != tc.wantUntiered || *got.BorrowedNodeScore != tc.wantBorr {
				t.Errorf("got untiered %d borrowed %d, want %d %d", *got.UntieredNodeScore, *got.BorrowedNodeScore, tc.wantUntiered, tc.wantBorr)
			}
		})
	}
}
