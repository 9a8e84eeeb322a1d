//go:build startupprofile

package main

import (
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

// Built only with -tags startupprofile (not in the shipped binary): with
// KUBENEXUS_STARTUP_CPUPROFILE=PREFIX the process writes a CPU profile of its first
// five seconds to PREFIX.PID, the start-up that the secure port's /debug/pprof opens
// too late to see.
func init() {
	path := os.Getenv("KUBENEXUS_STARTUP_CPUPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path + "." + strconv.Itoa(os.Getpid()))
	if err != nil {
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return
	}
	time.AfterFunc(5*time.Second, func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	})
}
