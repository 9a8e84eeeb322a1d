// Command kwok-stages prints the Stages kwok v0.7 applied when given none (node
// initialisation and heartbeat; pods made ready, completed and deleted), taken from
// kwok's own embedded stage packages. kwok v0.8 no longer has defaults and exits
// with "no stages found" without a --config; the local control plane passes it this
// output.
package main

import (
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	docs := []string{nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeat,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete}
	for _, d := range docs {
		fmt.Printf("---\n%s\n", strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(d), "---")))
	}
}
