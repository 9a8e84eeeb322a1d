package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// A real node: containerd 2 (its runc shim calling the machine's runc), the CNI
// bridge plugin, kubelet and kube-proxy, all built from source but runc, started as
// local processes beside the control plane, their state under the run's directory.
const (
	// NodeName is the real node's name.
	NodeName = "kubenexus-node"
	// PodCIDR is the real node's pod network (the CNI bridge's subnet).
	PodCIDR = "10.88.0.0/24"
	// nodeBridge is the Linux bridge the pods are attached to.
	nodeBridge = "knbr0"
	// nodeCgroup is the cgroup (in every hierarchy) the kubelet puts its pods under.
	nodeCgroup = "kubenexus-e2e"
	// imageRegistry is where make image names its images by default (the chart's).
	imageRegistry = "ghcr.io/kube-nexus/"
)

// ImageVersion is the tag make image gives the images: the chart's appVersion.
func ImageVersion(root string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(root, "charts", "kubenexus", "Chart.yaml"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?\s*$`).FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("charts/kubenexus/Chart.yaml has no appVersion")
	}
	return string(m[1]), nil
}

// NodeImage is the reference of image name (hack/image -node-test-images: the
// node's sandbox kubenexus-e2e-pause, the test workload kubenexus-e2e-workload;
// imported into the node, never pulled) at version.
func NodeImage(name, version string) string { return imageRegistry + name + ":" + version }

// NodeTools are the binaries under Bin/k8s a real node needs (hack/build-tools.sh
// builds them: make test-e2e-node).
var NodeTools = []string{"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "cni-bridge", "cni-host-local", "cni-loopback"}

// Node is the running real node.
type Node struct {
	Name, IP string
	// pause is the pods' sandbox image.
	pause string
	// dir holds containerd's, the kubelet's and the CNI plugins' state.
	dir string
	// sock is containerd's socket.
	sock string
	ctr  string
	runc string
}

// nodePrerequisites says what is missing for a real node, naming how to get it.
func nodePrerequisites(tools string) (runc string, err error) {
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("a real node needs root (the kubelet creates cgroups, mounts and network interfaces); run make test-e2e-node as root")
	}
	for _, t := range NodeTools {
		if _, err := os.Stat(filepath.Join(tools, t)); err != nil {
			return "", fmt.Errorf("%s/%s is missing: make test-e2e-node builds it (hack/build-tools.sh %s)", tools, t, strings.Join(NodeTools, " "))
		}
	}
	runc, err = exec.LookPath("runc")
	if err != nil {
		return "", fmt.Errorf("runc is not installed: hack/node-deps.sh installs Debian's (apt-get install runc iptables)")
	}
	if _, err := exec.LookPath("iptables-restore"); err != nil {
		return "", fmt.Errorf("iptables-restore is not installed (kube-proxy's iptables mode runs it): hack/node-deps.sh installs Debian's iptables")
	}
	return runc, nil
}

// StartNode starts a real node named NodeName at ip and waits until it is Ready,
// with images (archives in `docker save` format) imported into its runtime;
// version is their tag (the sandbox is NodeImage("kubenexus-e2e-pause", version)).
func (c *Cluster) StartNode(ctx context.Context, ip, version string, images []string) (*Node, error) {
	tools := filepath.Join(c.opts.Bin, "k8s")
	runc, err := nodePrerequisites(tools)
	if err != nil {
		return nil, err
	}
	n := &Node{Name: NodeName, IP: ip, pause: NodeImage("kubenexus-e2e-pause", version), dir: filepath.Join(c.opts.Dir, "node"), ctr: filepath.Join(tools, "ctr"), runc: runc}
	n.sock = filepath.Join(n.dir, "containerd", "containerd.sock")
	// What a run that was killed left behind (its containers, mounts, cgroups,
	// bridge and rules) goes first.
	n.clean(c.logf)
	c.node = n
	if err := n.prepare(tools); err != nil {
		return nil, err
	}
	c.logf("starting containerd (runc: %s)", runc)
	if err := c.startEnv("containerd", n.env(tools), filepath.Join(tools, "containerd"), "--config", filepath.Join(n.dir, "containerd.toml")); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, time.Minute, func() error { return n.ctrRun("version") }); err != nil {
		return nil, fmt.Errorf("containerd never answered on %s (see %s): %w", n.sock, c.logPath("containerd"), err)
	}
	for _, img := range images {
		c.logf("importing %s into the node", filepath.Base(img))
		if err := n.ctrRun("-n", "k8s.io", "images", "import", "--no-unpack=false", img); err != nil {
			return nil, fmt.Errorf("importing %s: %w", img, err)
		}
	}
	ports, err := testenv.FreePorts(4)
	if err != nil {
		return nil, err
	}
	if err := n.writeKubeletConfig(ports[0], ports[1]); err != nil {
		return nil, err
	}
	if err := n.writeKubeProxyConfig(c.Kubeconfig, ports[2], ports[3]); err != nil {
		return nil, err
	}
	c.logf("starting kubelet and kube-proxy (node %s at %s, pods in %s)", n.Name, ip, PodCIDR)
	if err := c.startEnv("kubelet", n.env(tools), filepath.Join(tools, "kubelet"),
		"--config="+filepath.Join(n.dir, "kubelet.yaml"), "--kubeconfig="+c.Kubeconfig,
		"--hostname-override="+n.Name, "--node-ip="+ip, "--root-dir="+filepath.Join(n.dir, "kubelet"), "--v=2"); err != nil {
		return nil, err
	}
	if err := c.startEnv("kube-proxy", n.env(tools), filepath.Join(tools, "kube-proxy"),
		"--config="+filepath.Join(n.dir, "kube-proxy.yaml"), "--v=2"); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, 2*time.Minute, func() error { return c.nodeReady(ctx, n.Name) }); err != nil {
		return nil, fmt.Errorf("node %s never became Ready (see %s): %w", n.Name, c.logPath("kubelet"), err)
	}
	return n, nil
}

// nodeReady is nil once node name reports Ready.
func (c *Cluster) nodeReady(ctx context.Context, name string) error {
	node := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s: Ready=%s: %s", name, cond.Status, cond.Message)
		}
	}
	return fmt.Errorf("node %s reports no Ready condition yet", name)
}

// env is the node processes' environment: the tools first on PATH (containerd finds
// its shim there), runc's directory after them.
func (n *Node) env(tools string) []string {
	return append(os.Environ(), "PATH="+tools+":"+filepath.Dir(n.runc)+":"+os.Getenv("PATH"))
}

// ctrRun runs containerd's ctr against the node's containerd.
func (n *Node) ctrRun(args ...string) error {
	out, err := exec.Command(n.ctr, append([]string{"--address", n.sock}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// prepare writes containerd's and the CNI configuration, links the CNI plugins
// under the names containerd runs them by, and creates the pods' cgroup.
func (n *Node) prepare(tools string) error {
	cniBin := filepath.Join(n.dir, "cni", "bin")
	for _, d := range []string{cniBin, filepath.Join(n.dir, "cni", "net.d"), filepath.Join(n.dir, "containerd")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if err := os.Symlink(filepath.Join(tools, "cni-"+p), filepath.Join(cniBin, p)); err != nil {
			return err
		}
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "kubenexus-e2e",
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
`, nodeBridge, filepath.Join(n.dir, "cni", "ipam"), PodCIDR)
	if err := os.WriteFile(filepath.Join(n.dir, "cni", "net.d", "10-kubenexus-e2e.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "containerd.toml"), []byte(n.containerdConfig(cniBin)), 0o644); err != nil {
		return err
	}
	// Service traffic between pods on the bridge passes kube-proxy's rules.
	_ = os.WriteFile("/proc/sys/net/bridge/bridge-nf-call-iptables", []byte("1"), 0o644)
	return forEachHierarchy(func(root string) error { return os.MkdirAll(filepath.Join(root, nodeCgroup), 0o755) })
}

// containerdConfig is containerd's configuration (version 3): its state under the
// node's directory, CRI with runc through the cgroupfs driver, the CNI bridge, the
// imported pause image as every pod's sandbox, and no TCP listener.
func (n *Node) containerdConfig(cniBin string) string {
	d := filepath.Join(n.dir, "containerd")
	return fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[5]q

[plugins."io.containerd.cri.v1.runtime"]
  netns_mounts_under_state_dir = true
  # Lowering a process's OOM score is refused on these machines (the kubelet asks
  # -998 for every sandbox): no lower than containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = %[6]q
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%[7]q]
    conf_dir = %[8]q
`, filepath.Join(d, "root"), filepath.Join(d, "state"), n.sock, n.sock+".ttrpc", n.pause, n.runc, cniBin, filepath.Join(n.dir, "cni", "net.d"))
}

// writeKubeletConfig writes the kubelet's configuration: cgroupfs under
// nodeCgroup (cgroup v1 allowed: these machines mount a v1/v2 hybrid), containerd's
// socket, its API on the node's address for the API server (logs), no image
// garbage collection (the imported images cannot be pulled again) and eviction
// only when the machine is really short.
func (n *Node) writeKubeletConfig(port, healthz int) error {
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
containerRuntimeEndpoint: unix://%[4]s
cgroupDriver: cgroupfs
cgroupRoot: /%[5]s
failCgroupV1: false
failSwapOn: false
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
maxPods: 30
resolvConf: /etc/resolv.conf
`, n.IP, port, healthz, n.sock, nodeCgroup)
	return os.WriteFile(filepath.Join(n.dir, "kubelet.yaml"), []byte(cfg), 0o644)
}

// writeKubeProxyConfig writes kube-proxy's configuration: iptables mode for
// PodCIDR, its ports on loopback, and no conntrack sysctls (left as the machine has
// them).
func (n *Node) writeKubeProxyConfig(kubeconfig string, healthz, metrics int) error {
	cfg := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
mode: iptables
clusterCIDR: %[3]s
healthzBindAddress: 127.0.0.1:%[4]d
metricsBindAddress: 127.0.0.1:%[5]d
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeconfig, n.Name, PodCIDR, healthz, metrics)
	return os.WriteFile(filepath.Join(n.dir, "kube-proxy.yaml"), []byte(cfg), 0o644)
}

// Node is the real node StartNode started (nil: none).
func (c *Cluster) Node() *Node { return c.node }

// KillContainer sends SIGKILL to a container through the runtime (as the kernel's
// OOM killer or a crash would end it), given its status's containerID
// (containerd://…); the kubelet then sees it exit.
func (n *Node) KillContainer(containerID string) error {
	id, ok := strings.CutPrefix(containerID, "containerd://")
	if !ok {
		return fmt.Errorf("container %q is not containerd's", containerID)
	}
	return n.ctrRun("-n", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id)
}
