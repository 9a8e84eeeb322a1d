package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A repository whose docs name a missing file, heading, make target, path, Go
// identifier, values key and flag: each is reported, on its line; what exists is not.
func TestReportsWhatDoesNotExist(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Makefile", "test: build ## tests\n\tgo test ./...\nbuild:\n\tgo build\nVERSION := 1\n")
	write("charts/kubenexus/values.yaml", "manager:\n  replicas: 1\n  nodeSelector: {}\n")
	write("cmd/manager/main.go", "package main\n\nfunc main() { flag.DurationVar(&d, \"reservation-resync\", 0, \"\") }\n")
	write("api/workload/classify.go", "package workload\n\nfunc Classify() {}\n")
	write("hack/README.md", "# Hack\n\n## Every target\n")
	write("README.md", strings.Join([]string{
		"# KubeNexus",
		"[ok](hack/README.md#every-target) and [gone](hack/missing.md) and [no heading](hack/README.md#nowhere)",
		"run `make test`, not `make deploy`",
		"see `api/workload.Classify`, `api/workload.Missing` and `cmd/manager/` and `cmd/gone/main.go`",
		"`--reservation-resync` and `--no-such-flag`",
		"```sh",
		"make build && make bogus",
		"```",
	}, "\n"))
	write("charts/kubenexus/README.md", "| `manager.replicas` | `manager.nodeSelector.zone` | `manager.replica` |\n")
	c, err := load(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := c.run()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:2: link hack/missing.md: no such file or directory",
		"README.md:2: link hack/README.md#nowhere: no heading #nowhere in README.md",
		`README.md:3: make target "deploy" is not in the Makefile`,
		"README.md:4: path api/workload.Missing: package api/workload declares no Missing",
		"README.md:4: path cmd/gone/main.go: does not exist",
		"README.md:5: flag --no-such-flag is defined by no binary, program or script of the repository",
		`README.md:7: make target "bogus" is not in the Makefile`,
		"charts/kubenexus/README.md:1: values key manager.replica: charts/kubenexus/values.yaml has no manager.replica",
	}
	got := strings.Join(problems, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("not reported: %s", w)
		}
	}
	if len(problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(problems), len(want), got)
	}
}
