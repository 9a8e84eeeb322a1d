//go:build tools

// Package tools pins kube-apiserver v1.35.4 for make test-skew.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
