// Package image_test checks the Dockerfile against the code it builds, without a
// container engine: every package the binaries import is copied into the build
// stage, and the binaries build statically.
package image_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

const module = "github.com/kube-nexus/kubenexus/"

func TestDockerfileCopiesEveryImportedPackage(t *testing.T) {
	root := testenv.RepoRoot()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	copied := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "COPY" && strings.HasSuffix(fields[1], "/") {
			copied[strings.TrimSuffix(fields[1], "/")] = true
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./cmd/manager", "./cmd/scheduler")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if !strings.HasPrefix(pkg, module) {
			continue
		}
		top := strings.SplitN(strings.TrimPrefix(pkg, module), "/", 2)[0]
		if !copied[top] {
			t.Errorf("the binaries import %s but the Dockerfile does not COPY %s/", pkg, top)
		}
	}
}
