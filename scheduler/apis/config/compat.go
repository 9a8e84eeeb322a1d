package config

import (
	"fmt"
	"strings"

	"k8s.io/client-go/discovery"
)

// MinAPIServerMinor and MaxAPIServerMinor are the kube-apiserver minors (1.x)
// kubenexus-scheduler and the manager are tested with (make test-skew): the range the
// README states and Chart.yaml's kubeVersion allows.
const (
	MinAPIServerMinor = 35
	MaxAPIServerMinor = 37
)

// KubeVersionRange is the range as a Helm chart's kubeVersion constraint (the -0
// admits the pre-release suffixes of managed offerings' versions).
func KubeVersionRange() string {
	return fmt.Sprintf(">=1.%d.0-0 <1.%d.0-0", MinAPIServerMinor, MaxAPIServerMinor+1)
}

// featureGatesBefore are the kube-scheduler features of the Kubernetes release the
// scheduler is built from (1.37) that need an API an older API server does not
// serve, by the first minor that serves it. With one of them on, an informer lists a
// resource the server does not have, never syncs, and DRA's scheduling stalls.
var featureGatesBefore = []struct {
	gate  string
	minor int
}{
	// resource.k8s.io/v1 DeviceTaintRules: GA and on in 1.37; beta (v1beta2, off)
	// in 1.36, alpha in 1.35.
	{gate: "DRADeviceTaintRules", minor: 37},
}

// FeatureGatesForAPIServer returns the feature gates kubenexus-scheduler must run
// with against kube-apiserver 1.minor, as --feature-gates pairs; none for 1.37 and
// later. The operator passes them to the scheduler it deploys.
func FeatureGatesForAPIServer(minor int) map[string]bool {
	out := map[string]bool{}
	for _, f := range featureGatesBefore {
		if minor < f.minor {
			out[f.gate] = false
		}
	}
	return out
}

// FeatureGatesFlag renders gates as the value of --feature-gates ("A=false,B=true",
// sorted); "" for none.
func FeatureGatesFlag(gates map[string]bool) string {
	var s string
	for _, f := range featureGatesBefore {
		if v, ok := gates[f.gate]; ok {
			if s != "" {
				s += ","
			}
			s += fmt.Sprintf("%s=%t", f.gate, v)
		}
	}
	return s
}

// APIServerMinor is the minor version the API server reports (1.x; "37+" reads 37).
func APIServerMinor(dc discovery.ServerVersionInterface) (int, error) {
	v, err := dc.ServerVersion()
	if err != nil {
		return 0, fmt.Errorf("reading the API server's version: %w", err)
	}
	var minor int
	if _, err := fmt.Sscanf(strings.TrimSuffix(v.Minor, "+"), "%d", &minor); err != nil || v.Major != "1" {
		return 0, fmt.Errorf("the API server reports version %s.%s, not 1.<minor>", v.Major, v.Minor)
	}
	return minor, nil
}
