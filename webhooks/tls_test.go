package webhooks

import (
	"crypto/tls"
	"slices"
	"testing"
)

func TestTLSConfigs(t *testing.T) {
	tests := map[string]struct {
		opts      TLSOptions
		min       uint16
		protos    []string
		wantError string
	}{
		"defaults: TLS 1.2, HTTP/1.1 only": {opts: TLSOptions{}, min: tls.VersionTLS12, protos: []string{"http/1.1"}},
		"TLS 1.3":                          {opts: TLSOptions{MinVersion: "1.3"}, min: tls.VersionTLS13, protos: []string{"http/1.1"}},
		"HTTP/2 allowed":                   {opts: TLSOptions{MinVersion: "1.2", HTTP2: true}, min: tls.VersionTLS12, protos: []string{"h2", "http/1.1"}},
		"TLS 1.1 refused":                  {opts: TLSOptions{MinVersion: "1.1"}, wantError: `--tls-min-version "1.1": must be 1.2 or 1.3`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fns, err := tc.opts.TLSConfigs()
			if tc.wantError != "" {
				if err == nil || err.Error() != tc.wantError {
					t.Fatalf("error %v, want %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// What the servers start from: HTTP/2 offered.
			c := &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
			for _, f := range fns {
				f(c)
			}
			if c.MinVersion != tc.min || !slices.Equal(c.NextProtos, tc.protos) {
				t.Errorf("MinVersion %x NextProtos %v, want %x %v", c.MinVersion, c.NextProtos, tc.min, tc.protos)
			}
		})
	}
}
