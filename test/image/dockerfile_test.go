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

// TestDockerfileMatchesTheModuleAndTheMakefile fails when the Dockerfile's builder
// drifts from what make builds with: its Go is go.mod's go version (the official
// images set GOTOOLCHAIN=local and refuse a newer go.mod), its default version
// arguments are the chart's appVersion and the pinned k8s.io/kubernetes, and its
// -ldflags stamp the same variables as the Makefile's LDFLAGS.
func TestDockerfileMatchesTheModuleAndTheMakefile(t *testing.T) {
	root := testenv.RepoRoot()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dockerfile, makefile, gomod, chart := read("Dockerfile"), read("Makefile"), read("go.mod"), read("charts/kubenexus/Chart.yaml")
	args := map[string]string{}
	for _, line := range strings.Split(dockerfile, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "ARG" {
			if k, v, ok := strings.Cut(f[1], "="); ok {
				args[k] = v
			}
		}
	}
	goVersion := ""
	k8sVersion := ""
	for _, line := range strings.Split(gomod, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "go" {
			goVersion = f[1]
		}
		if len(f) >= 2 && f[0] == "k8s.io/kubernetes" && k8sVersion == "" {
			k8sVersion = f[1]
		}
	}
	if want := strings.Join(strings.SplitN(goVersion, ".", 3)[:2], "."); args["GO_VERSION"] != want {
		t.Errorf("Dockerfile ARG GO_VERSION=%s; go.mod says go %s: the builder image must be golang:%s", args["GO_VERSION"], goVersion, want)
	}
	if !strings.Contains(dockerfile, "FROM golang:${GO_VERSION} AS builder") {
		t.Error("the Dockerfile's builder stage is not FROM golang:${GO_VERSION}")
	}
	if args["K8S_VERSION"] != k8sVersion {
		t.Errorf("Dockerfile ARG K8S_VERSION=%s; go.mod pins k8s.io/kubernetes %s", args["K8S_VERSION"], k8sVersion)
	}
	if want := `appVersion: "` + args["VERSION"] + `"`; !strings.Contains(chart, want) {
		t.Errorf("Dockerfile ARG VERSION=%s is not the chart's appVersion", args["VERSION"])
	}
	stamped := func(text string) []string {
		var vars []string
		for _, f := range strings.Fields(text) {
			if k, _, ok := strings.Cut(f, "="); ok && strings.Contains(k, "/") && strings.Count(k, ".") >= 1 && !strings.HasPrefix(k, "-") {
				vars = append(vars, k)
			}
		}
		return vars
	}
	makeLine, dockerLine := "", ""
	for _, line := range strings.Split(makefile, "\n") {
		if strings.HasPrefix(line, "LDFLAGS ?=") {
			makeLine = line
		}
	}
	for _, line := range strings.Split(dockerfile, "\n") {
		if strings.Contains(line, "-ldflags") {
			dockerLine = line
		}
	}
	m, d := stamped(makeLine), stamped(dockerLine)
	if len(m) == 0 || strings.Join(m, " ") != strings.Join(d, " ") {
		t.Errorf("the Dockerfile stamps %v, the Makefile's LDFLAGS %v", d, m)
	}
}
