// Command pause is the sandbox image of the real node's pods (test/e2e/node): it
// holds the pod's namespaces until it is told to stop, and reaps the children it
// inherits as the pod's first process. It stands in for registry.k8s.io/pause so
// that nothing is pulled from outside.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
