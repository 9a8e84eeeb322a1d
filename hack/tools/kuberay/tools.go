//go:build tools

// Package kuberay pins KubeRay's operator in a module of its own: KubeRay v1.5.0 is
// built with the Kubernetes libraries it was released with, not the v0.37 the rest
// of hack/tools pins. It only talks to the API server. The e2e runs it as a local
// process beside KubeNexus (its webhooks are off by default and stay off).
package kuberay

import (
	_ "github.com/ray-project/kuberay/ray-operator"
)
