// Package adminkube writes kubeconfigs for the processes a benchmark or test runs
// against an envtest control plane. It is apart from test/util so that unit tests
// importing test/util do not compile envtest.
package adminkube

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// Write adds a system:masters user named user to a started envtest environment and
// writes its kubeconfig to dir/kubeconfig; it returns the file's path.
func Write(env *envtest.Environment, cfg *rest.Config, user, dir string) (string, error) {
	admin, err := env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, rest.CopyConfig(cfg))
	if err != nil {
		return "", err
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// ControlPlane is a started envtest control plane with a scratch directory holding
// an admin kubeconfig, for the processes a benchmark runs against it.
type ControlPlane struct {
	Env        *envtest.Environment
	Config     *rest.Config
	Dir        string
	Kubeconfig string
}

// Start starts envtest (its etcd without fsync) with the CRDs in crdDirs, makes a
// scratch directory (prefix names it) and writes an admin kubeconfig for user there.
// configure, when given, adjusts the environment before it starts (API server
// flags). Stop undoes both.
func Start(crdDirs []string, prefix, user string, configure ...func(*envtest.Environment) error) (*ControlPlane, error) {
	env := &envtest.Environment{CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: true, CRDInstallOptions: testenv.CRDInstall()}
	for _, f := range configure {
		if err := f(env); err != nil {
			return nil, err
		}
	}
	// The benchmarks measure schedulers, not this machine's disk: etcd skips fsync, so
	// that write latency (which on a shared virtual disk varies from run to run) does
	// not decide how fast the API server binds.
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Set("unsafe-no-fsync", "true")
	cfg, err := env.Start()
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Env: env, Config: cfg}
	if cp.Dir, err = os.MkdirTemp("", prefix); err != nil {
		cp.Stop()
		return nil, err
	}
	if cp.Kubeconfig, err = Write(env, cfg, user, cp.Dir); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

// Stop stops the control plane and removes the scratch directory.
func (cp *ControlPlane) Stop() {
	_ = cp.Env.Stop()
	if cp.Dir != "" {
		_ = os.RemoveAll(cp.Dir)
	}
}
