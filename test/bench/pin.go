package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cpuSplit keeps the measured scheduler and the rest of the benchmark (kube-apiserver,
// etcd, this process) on separate CPUs. On a machine where they share every core, the
// API server's binding rate and the scheduler's CPU time move together with whatever
// each happens to take from the other in a run; apart, each has its own cores and a
// run's cost depends on the scheduler alone.
type cpuSplit struct {
	sched, rest unix.CPUSet
	on          bool
}

// newCPUSplit splits the CPUs this process may run on with splitCPUs. With one CPU, or
// when on is false, nothing is pinned.
func newCPUSplit(on bool) (cpuSplit, error) {
	if !on {
		return cpuSplit{}, nil
	}
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return cpuSplit{}, fmt.Errorf("reading this process's CPU affinity: %w", err)
	}
	var cpus []int
	for i := range len(all) * 64 {
		if all.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	rest, sched := splitCPUs(cpus)
	if len(sched) == 0 {
		return cpuSplit{}, nil
	}
	s := cpuSplit{on: true}
	for _, c := range rest {
		s.rest.Set(c)
	}
	for _, c := range sched {
		s.sched.Set(c)
	}
	return s, nil
}

// splitCPUs gives the scheduler the upper half of cpus (rounded down) and the rest the
// lower half; with fewer than two CPUs the scheduler gets none (nothing is pinned).
func splitCPUs(cpus []int) (rest, sched []int) {
	if len(cpus) < 2 {
		return cpus, nil
	}
	cut := len(cpus) - len(cpus)/2
	return cpus[:cut], cpus[cut:]
}

func (s cpuSplit) String() string {
	if !s.on {
		return "no CPU pinning"
	}
	return fmt.Sprintf("scheduler on CPU(s) %s; kube-apiserver, etcd and the bench on CPU(s) %s", cpuList(s.sched), cpuList(s.rest))
}

func cpuList(set unix.CPUSet) string {
	var cs []string
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			cs = append(cs, strconv.Itoa(i))
		}
	}
	return strings.Join(cs, ",")
}

// pinRest moves every thread of the given processes (and of this one) to the rest's
// CPUs; threads they start later inherit it.
func (s cpuSplit) pinRest(pids ...int) error {
	if !s.on {
		return nil
	}
	for _, pid := range append(pids, os.Getpid()) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return err
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &s.rest); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pinning thread %d of pid %d: %w", tid, pid, err)
			}
		}
	}
	return nil
}

// start starts cmd on the scheduler's CPUs. A child inherits the affinity of the thread
// that forks it, so the fork happens on a thread pinned there for the moment; the
// child's Go runtime then sizes GOMAXPROCS to those CPUs, as it would in a container
// given that many.
func (s cpuSplit) start(cmd *exec.Cmd) error {
	if !s.on {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.SchedSetaffinity(0, &s.sched); err != nil {
		return fmt.Errorf("pinning the forking thread: %w", err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &s.rest); rerr != nil && err == nil {
		err = fmt.Errorf("restoring the forking thread's CPUs: %w", rerr)
	}
	return err
}
