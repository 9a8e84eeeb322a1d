// Package testenv is what the integration suites, the e2e and the chart checks need
// from the machine: the repository root, the control-plane binaries envtest runs, the
// CRDs of other projects (read from their modules) and free ports, and the events a
// test reads back. Object builders stay in test/util, which unit tests import
// without pulling controller-runtime's envtest in.
package testenv

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RepoRoot is the absolute path of the repository root: three directories above this
// file's, or, in a build with trimmed paths (make test builds the e2e so), the
// nearest directory above the working directory (a test runs in its package's)
// whose go.mod is the main module's.
func RepoRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	}
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("finding the repository root: %v", err))
	}
	for d := dir; ; d = filepath.Dir(d) {
		if raw, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(raw), "module github.com/kube-nexus/kubenexus\n") {
			return d
		}
		if filepath.Dir(d) == d {
			panic(fmt.Sprintf("no directory above %s holds the main module's go.mod", dir))
		}
	}
}

// CRDPath is where controller-gen writes the CRDs.
func CRDPath() string { return filepath.Join(RepoRoot(), "config", "crd", "bases") }

// RequireAssets points envtest at bin/k8s (built by `make envtest`) when
// KUBEBUILDER_ASSETS is unset, and fails with instructions when the binaries are missing.
func RequireAssets() error {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "bin", "k8s")
		if err := os.Setenv("KUBEBUILDER_ASSETS", dir); err != nil {
			return err
		}
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Errorf("envtest needs %s in KUBEBUILDER_ASSETS=%s; run `make envtest` to build it from source: %w", b, dir, err)
		}
	}
	return nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// SchedulerPluginsCRD is the path of scheduler-plugins' own PodGroup CRD
// (scheduling.x-k8s.io), from the module pinned in hack/tools/schedulerplugins.
func SchedulerPluginsCRD() (string, error) {
	return moduleFile("schedulerplugins", "sigs.k8s.io/scheduler-plugins", "config/crd/bases/scheduling.x-k8s.io_podgroups.yaml")
}

// VolcanoPodGroupCRD is the path of Volcano's own PodGroup CRD
// (scheduling.volcano.sh), from the module pinned in hack/tools/volcano.
func VolcanoPodGroupCRD() (string, error) {
	return moduleFile("volcano", "volcano.sh/volcano", "config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml")
}

// KAIPodGroupCRD is the path of KAI-Scheduler's own PodGroup CRD
// (scheduling.run.ai), from the module pinned in hack/tools/kai.
func KAIPodGroupCRD() (string, error) {
	return moduleFile("kai", "github.com/NVIDIA/KAI-scheduler", "deployments/kai-scheduler/crds/scheduling.run.ai_podgroups.yaml")
}

// TrainingOperatorCRDs are the paths of Kubeflow training-operator's own CRDs
// (kubeflow.org/v1: PyTorchJob, MPIJob, TFJob, ...), from the module pinned in
// hack/tools/trainingoperator (v1.8.1), whose binary hack/build-tools.sh builds.
func TrainingOperatorCRDs() ([]string, error) {
	dir, err := moduleFile("trainingoperator", "github.com/kubeflow/training-operator", "manifests/base/crds")
	if err != nil {
		return nil, err
	}
	crds, err := filepath.Glob(filepath.Join(dir, "kubeflow.org_*.yaml"))
	if err == nil && len(crds) == 0 {
		err = fmt.Errorf("no CRDs in %s", dir)
	}
	return crds, err
}

// KueueCRDs is the directory of Kueue's CRDs (kueue.x-k8s.io), from the Kueue
// module the manager builds with.
func KueueCRDs() (string, error) {
	return moduleFile("", "sigs.k8s.io/kueue", "config/components/crd/bases")
}

// The framework controllers the e2e runs from hack/tools/frameworks: LeaderWorkerSet
// v0.7.0, KubeRay v1.5.0, JobSet v0.10.1 and Kubeflow Trainer v2.1.0.
const (
	frameworksModule = "frameworks"
	lwsModule        = "sigs.k8s.io/lws"
	rayModule        = "github.com/ray-project/kuberay/ray-operator"
	jobSetModule     = "sigs.k8s.io/jobset"
	trainerModule    = "github.com/kubeflow/trainer/v2"
)

// LeaderWorkerSetCRD is the path of LeaderWorkerSet v0.7.0's CRD.
func LeaderWorkerSetCRD() (string, error) {
	return moduleFile(frameworksModule, lwsModule, "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml")
}

// LeaderWorkerSetWebhooks is the path of LeaderWorkerSet v0.7.0's webhook
// configurations.
func LeaderWorkerSetWebhooks() (string, error) {
	return moduleFile(frameworksModule, lwsModule, "config/webhook/manifests.yaml")
}

// RayCRDs are the paths of KubeRay v1.5.0's RayCluster and RayJob CRDs.
func RayCRDs() ([]string, error) {
	var paths []string
	for _, kind := range []string{"rayclusters", "rayjobs"} {
		p, err := moduleFile(frameworksModule, rayModule, "config/crd/bases/ray.io_"+kind+".yaml")
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// JobSetCRD is the path of JobSet v0.10.1's CRD.
func JobSetCRD() (string, error) {
	return moduleFile(frameworksModule, jobSetModule, "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml")
}

// JobSetWebhooks is the path of JobSet v0.10.1's webhook configurations.
func JobSetWebhooks() (string, error) {
	return moduleFile(frameworksModule, jobSetModule, "config/components/webhook/manifests.yaml")
}

// TrainerCRDs are the paths of Kubeflow Trainer v2.1.0's CRDs (TrainJob,
// TrainingRuntime, ClusterTrainingRuntime).
func TrainerCRDs() ([]string, error) {
	dir, err := moduleFile(frameworksModule, trainerModule, "manifests/base/crds")
	if err != nil {
		return nil, err
	}
	crds, err := filepath.Glob(filepath.Join(dir, "trainer.kubeflow.org_*.yaml"))
	if err == nil && len(crds) == 0 {
		err = fmt.Errorf("no CRDs in %s", dir)
	}
	return crds, err
}

// TrainerWebhooks is the path of Kubeflow Trainer v2.1.0's webhook configurations.
func TrainerWebhooks() (string, error) {
	return moduleFile(frameworksModule, trainerModule, "manifests/base/webhook/manifests.yaml")
}

// LegacyKueueCRDs is the directory of Kueue v0.14.8's CRDs (hack/tools/kueuelegacy):
// the API of a Kueue that serves only kueue.x-k8s.io/v1beta1.
func LegacyKueueCRDs() (string, error) {
	return moduleFile("kueuelegacy", "sigs.k8s.io/kueue", "config/components/crd/bases")
}

// NodeResourceTopologyCRD is the path of the NodeResourceTopology CRD
// (topology.node.k8s.io), from the API module the scheduler builds with.
func NodeResourceTopologyCRD() (string, error) {
	return moduleFile("", "github.com/k8stopologyawareschedwg/noderesourcetopology-api", "manifests/crd.yaml")
}

// moduleFile is the path of a file in a module pinned by a tools module under
// hack/tools ("": the main module), downloaded through the Go module proxy on
// first use.
func moduleFile(toolsModule, module, file string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = RepoRoot()
	if toolsModule != "" {
		cmd.Dir = filepath.Join(RepoRoot(), "hack", "tools", toolsModule)
	}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("downloading %s (hack/tools/%s): %w", module, toolsModule, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("downloading %s: %s %v", module, mod.Error, err)
	}
	path := filepath.Join(mod.Dir, filepath.FromSlash(file))
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	return path, nil
}

// EnableNativeWorkloads turns on Kubernetes' own Workload and PodGroup API
// (scheduling.k8s.io/v1beta1, feature gate GenericWorkload, and
// TopologyAwareWorkloadScheduling for their spec.schedulingConstraints), with its
// CompositePodGroups (scheduling.k8s.io/v1alpha3, feature gate CompositePodGroup),
// in env's API server when
// that server serves it (1.37 and later; an older one, as make test-skew runs, is
// left as it is), and reports whether it did. Call before env.Start.
func EnableNativeWorkloads(env *envtest.Environment) (bool, error) {
	dir := env.BinaryAssetsDirectory
	if dir == "" {
		dir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	minor, err := APIServerMinor(dir)
	if err != nil || minor < 37 {
		return false, err
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Append("feature-gates", "GenericWorkload=true,TopologyAwareWorkloadScheduling=true,CompositePodGroup=true")
	args.Append("runtime-config", "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true")
	return true, nil
}

// APIServerMinor is the minor version of the kube-apiserver in dir.
func APIServerMinor(dir string) (int, error) {
	bin := filepath.Join(dir, "kube-apiserver")
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("%s --version: %w", bin, err)
	}
	// "Kubernetes v1.37.2"
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "Kubernetes v%d.%d", &major, &minor); err != nil {
		return 0, fmt.Errorf("%s --version printed %q: %w", bin, out, err)
	}
	return minor, nil
}

// CRDInstall is how the suites install CRDs: envtest waits 10 s by default for
// them to be served, which a loaded 2-core machine does not always meet with the
// dozens of CRDs the operator suite installs (its BeforeSuite failed so beside a
// compile); they wait up to two minutes.
func CRDInstall() envtest.CRDInstallOptions {
	return envtest.CRDInstallOptions{MaxTime: 2 * time.Minute}
}
