//go:build tools

// Package kueue pins Kueue's controller-manager in a module of its own: Kueue
// v0.14.8 is built with the Kubernetes libraries it was released with (v0.34), not
// the v0.35 the rest of hack/tools pins. It only talks to the API server. The e2e
// runs it as a local process beside KubeNexus.
package kueue

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
