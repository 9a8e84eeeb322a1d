// Package adminkube writes kubeconfigs for the processes a benchmark or test runs
// against an envtest control plane. It is apart from test/util so that unit tests
// importing test/util do not compile envtest.
package adminkube

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
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
