//go:build tools

// Package kueue pins Kueue's controller-manager in a module of its own: Kueue
// v0.17.0 is built with the Kubernetes libraries it was released with (v0.35), not
// the v0.37 the rest of hack/tools pins. It only talks to the API server. The e2e
// and make demo run it as a local process beside KubeNexus, with its webhooks
// (the conversion webhook of its v1beta1 API among them).
package kueue

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
