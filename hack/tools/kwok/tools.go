//go:build tools

// Package kwok pins kwok in a module of its own: kwok v0.7.0 needs the Kubernetes
// libraries it was released with (v0.33), not the v0.35 the rest of hack/tools pins.
// It only talks to the API server, so the version skew is harmless.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
