//go:build tools

// Package frameworks pins the framework controllers the e2e runs beside KubeNexus
// that were released with the same Kubernetes libraries (v0.34, controller-runtime
// v0.22): Kubeflow Trainer v2.1.0 and the JobSet v0.10.1 controller it drives,
// LeaderWorkerSet v0.7.0 and KubeRay v1.5.0. One module builds them in one `go build`,
// so that the libraries they share are compiled once (all four cold: ~2 minutes on 2
// cores, against ~4 for LWS and KubeRay alone in modules of their own). Kueue v0.17
// (controller-runtime v0.23) and training-operator v1.8.1 (v0.29) keep their own.
package frameworks

import (
	_ "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"
	_ "github.com/ray-project/kuberay/ray-operator"
	_ "sigs.k8s.io/jobset"
	_ "sigs.k8s.io/lws/cmd"
)
