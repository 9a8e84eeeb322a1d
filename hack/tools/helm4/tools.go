//go:build tools

// Package tools pins Helm v4, built by hack/build-tools.sh as bin/k8s/helm4.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
