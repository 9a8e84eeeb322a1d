package demo

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the machine mounts its cgroup hierarchies.
const cgroupRoot = "/sys/fs/cgroup"

// forEachHierarchy calls f with the root of every cgroup hierarchy mounted under
// cgroupRoot (each v1 controller's and the unified one on a hybrid machine; the one
// root on a v2 machine).
func forEachHierarchy(f func(root string) error) error {
	mounts, err := mountPoints(func(fsType string) bool { return fsType == "cgroup" || fsType == "cgroup2" })
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, m := range mounts {
		if !strings.HasPrefix(m, cgroupRoot) || seen[m] {
			continue
		}
		seen[m] = true
		if err := f(m); err != nil {
			return err
		}
	}
	return nil
}

// mountPoints are the mount points (from /proc/self/mountinfo) whose filesystem
// type keep accepts.
func mountPoints(keep func(fsType string) bool) ([]string, error) {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		if keep(fields[sep+1]) {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// clean removes what a node left behind, whether it stopped cleanly or was killed:
// the node's processes (any run's), its pods' processes, the mounts under its
// directory (container root filesystems, volumes, network namespaces), its cgroups,
// kube-proxy's rules, the bridge, and the directory itself. Each step is best
// effort; what fails is logged.
func (n *Node) clean(logf func(string, ...any)) {
	killNodeProcesses(filepath.Dir(n.ctr))
	n.killPods()
	mounts, err := mountPoints(func(string) bool { return true })
	if err != nil {
		logf("node clean-up: %v", err)
	}
	// Under this node's directory, and under any other run's (a killed test leaves its
	// temporary directory and its mounts behind).
	var under []string
	for _, m := range mounts {
		if strings.HasPrefix(m, n.dir+string(filepath.Separator)) || inNodeDir(m) {
			under = append(under, m)
		}
	}
	// Deepest first.
	sort.Slice(under, func(i, j int) bool { return len(under[i]) > len(under[j]) })
	for _, m := range under {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			logf("node clean-up: unmounting %s: %v", m, err)
		}
	}
	_ = forEachHierarchy(func(root string) error {
		removeCgroupTree(filepath.Join(root, nodeCgroup))
		return nil
	})
	if proxy := filepath.Join(filepath.Dir(n.ctr), "kube-proxy"); fileExists(proxy) {
		_ = exec.Command(proxy, "--cleanup").Run()
	}
	// The kubelet's own chains (kube-proxy --cleanup leaves them).
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			for _, hook := range []string{"INPUT", "OUTPUT"} {
				_ = exec.Command(ipt, "-w", "-t", table, "-D", hook, "-j", "KUBE-FIREWALL").Run()
			}
			for _, chain := range []string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY"} {
				_ = exec.Command(ipt, "-w", "-t", table, "-F", chain).Run()
				_ = exec.Command(ipt, "-w", "-t", table, "-X", chain).Run()
			}
		}
	}
	_ = exec.Command("ip", "link", "delete", nodeBridge).Run()
	if err := os.RemoveAll(n.dir); err != nil {
		logf("node clean-up: %v", err)
	}
}

// inNodeDir says whether mount point m lies in a real node's directory: one that
// holds the containerd and kubelet configurations StartNode writes.
func inNodeDir(m string) bool {
	for i := 0; ; {
		j := strings.Index(m[i:], "/node/")
		if j < 0 {
			return false
		}
		dir := m[:i+j+len("/node")]
		if fileExists(filepath.Join(dir, "containerd.toml")) && fileExists(filepath.Join(dir, "kubelet.yaml")) {
			return true
		}
		i += j + 1
	}
}

// killPods kills every process in the pods' cgroups (each hierarchy's view), until
// none is left or a few seconds have passed.
func (n *Node) killPods() {
	for range 20 {
		found := false
		_ = forEachHierarchy(func(root string) error {
			_ = filepath.WalkDir(filepath.Join(root, nodeCgroup), func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return err // the hierarchy has no pods' cgroup (any more)
				}
				if d.IsDir() || d.Name() != "cgroup.procs" {
					return nil
				}
				raw, _ := os.ReadFile(p)
				for _, f := range strings.Fields(string(raw)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
						found = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return nil
			})
			return nil
		})
		if !found {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killNodeProcesses kills the node's processes a killed run left behind (its
// kubelet, kube-proxy and containerd outlive a test process that is killed, and the
// runc shims outlive containerd): every process running one of this checkout's node
// binaries (tools), whatever run started it. Two real nodes of one checkout cannot
// run at once anyway: they share the bridge, the cgroup and the rules.
func killNodeProcesses(tools string) {
	own := map[string]bool{}
	for _, t := range []string{"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2"} {
		own[filepath.Join(tools, t)] = true
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && own[strings.TrimSuffix(exe, " (deleted)")] {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeCgroupTree removes a cgroup and its children, deepest first (a cgroup
// directory is removed with rmdir once it has no processes).
func removeCgroupTree(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = syscall.Rmdir(dirs[i])
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
