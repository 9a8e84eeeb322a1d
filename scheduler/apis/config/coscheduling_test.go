package config

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestDecodeCoschedulingArgs(t *testing.T) {
	tests := map[string]struct {
		raw         string
		wantTimeout int32
		wantBackoff int32
		wantErr     string
	}{
		"defaults":         {raw: ``, wantTimeout: 60, wantBackoff: 10},
		"set":              {raw: `{"defaultScheduleTimeoutSeconds": 300, "backoffSeconds": 2}`, wantTimeout: 300, wantBackoff: 2},
		"timeout 0":        {raw: `{"defaultScheduleTimeoutSeconds": 0}`, wantErr: "CoschedulingArgs.defaultScheduleTimeoutSeconds: Invalid value: 0: must be between 1 and 86400"},
		"backoff too long": {raw: `{"backoffSeconds": 7200}`, wantErr: "CoschedulingArgs.backoffSeconds: Invalid value: 7200: must be between 1 and 3600"},
		"misspelt field":   {raw: `{"defaultScheduleTimeout": 30}`, wantErr: `unknown field "defaultScheduleTimeout"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var obj runtime.Object
			if tc.raw != "" {
				obj = &runtime.Unknown{Raw: []byte(tc.raw)}
			}
			got, err := DecodeCoschedulingArgs(obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *got.DefaultScheduleTimeoutSeconds != tc.wantTimeout || *got.BackoffSeconds != tc.wantBackoff {
				t.Errorf("got timeout %d backoff %d, want %d %d", *got.DefaultScheduleTimeoutSeconds, *got.BackoffSeconds, tc.wantTimeout, tc.wantBackoff)
			}
		})
	}
}
