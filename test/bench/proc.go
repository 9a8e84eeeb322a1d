package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ), read once
// from `getconf CLK_TCK`; 100 when getconf is missing (the value on every Linux
// architecture Kubernetes runs on).
var clockTicks = func() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	fmt.Fprintln(os.Stderr, "bench: getconf CLK_TCK failed; assuming 100 ticks/s")
	return 100
}()

// procStat is the part of /proc/PID/stat the benchmark uses.
type procStat struct {
	ppid int
	cpu  time.Duration // utime + stime
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: split after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ppid, _ := strconv.Atoi(f[1])               // field 4
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return procStat{ppid: ppid, cpu: time.Duration(utime+stime) * time.Second / time.Duration(clockTicks)}, nil
}

// cpuOf is the summed CPU time of pids; -1 if one of them cannot be read.
func cpuOf(pids ...int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		st, err := readStat(pid)
		if err != nil {
			return -1
		}
		sum += st.cpu
	}
	return sum
}

// envtestPIDs finds the etcd and kube-apiserver that envtest started: children of
// this process whose executable is named etcd or kube-apiserver.
func envtestPIDs() (apiserver, etcd int, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != self {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		switch filepath.Base(strings.SplitN(string(cmdline), "\x00", 2)[0]) {
		case "kube-apiserver":
			apiserver = pid
		case "etcd":
			etcd = pid
		}
	}
	if apiserver == 0 || etcd == 0 {
		return 0, 0, fmt.Errorf("kube-apiserver (pid %d) or etcd (pid %d) not found among the children of pid %d", apiserver, etcd, self)
	}
	return apiserver, etcd, nil
}

// peakRSS is the process's peak resident set (VmHWM) in MiB, -1 if unknown.
func peakRSS(pid int) int { return statusMiB(pid, "VmHWM:") }

// statusMiB reads one kB figure of /proc/PID/status (key with its colon) in MiB, -1 if
// unknown.
func statusMiB(pid int, key string) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == key {
			kb, _ := strconv.Atoi(fields[1])
			return kb / 1024
		}
	}
	return -1
}

// uncache drops every arm's binary from the page cache, so that each starts from
// the same state: read from disk as it executes. A binary the linker has just
// written is cached in large folios, and the kernel's fault-around maps whole
// folios into the process: a freshly built kubenexus-scheduler showed 61–66 MiB of
// file-backed RSS in W4, the same file read back from disk 57 (stock's, built
// long before, 53). `make bench` rebuilds kubenexus-scheduler right before the
// runs; without this its peak RSS counted the build.
func uncache(arms []arm) {
	syscall.Sync() // only clean pages can be dropped
	for _, a := range arms {
		f, err := os.Open(a.binary)
		if err != nil {
			continue
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			fmt.Fprintf(os.Stderr, "bench: dropping %s from the page cache: %v\n", a.binary, err)
		}
		_ = f.Close()
	}
}
