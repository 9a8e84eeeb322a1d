package webhooks

import (
	"crypto/tls"
	"fmt"
)

// TLSOptions are the TLS settings of the manager's HTTPS servers (webhooks and
// metrics).
type TLSOptions struct {
	// MinVersion is "1.2" or "1.3".
	MinVersion string
	// HTTP2 lets clients negotiate HTTP/2. Off by default: HTTP/2's stream handling
	// has had denial-of-service flaws (CVE-2023-44487, CVE-2023-39325) that a webhook
	// or metrics server need not be exposed to; the API server speaks HTTP/1.1 to
	// webhooks as well.
	HTTP2 bool
}

// TLSConfigs returns the functions that apply o to a server's tls.Config, as
// controller-runtime's webhook and metrics servers take them (TLSOpts).
func (o TLSOptions) TLSConfigs() ([]func(*tls.Config), error) {
	var min uint16
	switch o.MinVersion {
	case "1.2", "":
		min = tls.VersionTLS12
	case "1.3":
		min = tls.VersionTLS13
	default:
		return nil, fmt.Errorf("--tls-min-version %q: must be 1.2 or 1.3", o.MinVersion)
	}
	opts := []func(*tls.Config){func(c *tls.Config) { c.MinVersion = min }}
	if !o.HTTP2 {
		opts = append(opts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return opts, nil
}
