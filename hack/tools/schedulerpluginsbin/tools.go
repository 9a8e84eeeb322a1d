//go:build tools

// Package tools pins scheduler-plugins' kube-scheduler (with Coscheduling), which
// hack/build-tools.sh builds as bin/k8s/scheduler-plugins for `make bench`.
package tools

import _ "sigs.k8s.io/scheduler-plugins/cmd/scheduler"
