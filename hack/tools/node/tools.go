//go:build tools

// Tools module of the real node (make test-e2e-node): containerd 2 with its runc
// shim and ctr, and the CNI plugins that give the node's pods their network. It
// pins its own libraries (containerd's Kubernetes CRI API and gRPC), apart from
// hack/tools.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
)
