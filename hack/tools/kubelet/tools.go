//go:build tools

// Package tools pins the real node's kubelet and kube-proxy.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
