//go:build tools

// Package lws pins LeaderWorkerSet's controller-manager in a module of its own:
// LWS v0.7.0 is built with the Kubernetes libraries it was released with (v0.33),
// not the v0.37 the rest of hack/tools pins. It only talks to the API server. The
// e2e runs it as a local process beside KubeNexus, with its webhooks.
package lws

import (
	_ "sigs.k8s.io/lws/cmd"
)
