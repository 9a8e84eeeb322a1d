// Package snapshot builds what the scheduler's snapshot holds, for unit tests of
// Filter and Score (apart from test/util, whose builders need no scheduler packages).
package snapshot

import (
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
)

// NodeInfo is node with pods on it as the scheduler's snapshot holds them.
func NodeInfo(node *corev1.Node, pods ...*corev1.Pod) fwk.NodeInfo {
	ni := schedframework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}
