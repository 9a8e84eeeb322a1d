//go:build tools

// Package tools pins kube-apiserver v1.36.3 for make test-skew.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
