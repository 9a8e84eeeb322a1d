// Command kwok-stages prints the Stages kwok v0.7 applied when given none (node
// initialisation and heartbeat; pods made ready, completed and deleted), taken from
// kwok's own embedded stage packages, and one the kubelet has that kwok lacks: a
// running pod with spec.activeDeadlineSeconds fails with DeadlineExceeded when the
// deadline passes. kwok v0.8 no longer has defaults and exits with "no stages found"
// without a --config; the local control plane passes it this output.
package main

import (
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// podDeadline fails a running pod activeDeadlineSeconds after it started running,
// as the kubelet does.
const podDeadline = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-deadline-exceeded
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.spec.activeDeadlineSeconds'
      operator: 'Exists'
  delay:
    durationFrom:
      cel:
        expression: 'duration(string(self.spec.activeDeadlineSeconds) + "s")'
  next:
    statusTemplate: |
      phase: Failed
      reason: DeadlineExceeded
      message: Pod was active on the node longer than the specified deadline`

func main() {
	docs := []string{nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeat,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete, podDeadline}
	for _, d := range docs {
		fmt.Printf("---\n%s\n", strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(d), "---")))
	}
}
