// Command krew packages kubectl-kubenexus for krew: it cross-compiles the plugin for
// each platform, archives each binary with the LICENSE as <name>-<os>-<arch>.tar.gz,
// and writes the krew plugin manifest (kubenexus.yaml) naming each archive's URL
// (under -uri, where the release will publish them) and SHA-256. make krew runs it;
// publishing the archives and submitting the manifest to a krew index is the
// release's step.
package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

const binary = "kubectl-kubenexus"

// Platform is one os/arch the plugin is built for.
type Platform struct{ OS, Arch string }

func (p Platform) archive() string { return fmt.Sprintf("%s-%s-%s.tar.gz", binary, p.OS, p.Arch) }

func (p Platform) bin() string {
	if p.OS == "windows" {
		return binary + ".exe"
	}
	return binary
}

func main() {
	root := flag.String("root", ".", "repository root")
	out := flag.String("out", "bin/krew", "where the archives and the manifest go")
	version := flag.String("version", "", "release version (v-prefixed semver), e.g. v0.1.0")
	uri := flag.String("uri", "", "URL the archives are published under (default: the GitHub release of -version)")
	ldflags := flag.String("ldflags", "-s -w", "linker flags (the version stamps)")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64", "os/arch list")
	flag.Parse()
	if err := run(*root, *out, *version, *uri, *ldflags, *platforms); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

func run(root, out, version, uri, ldflags, platforms string) error {
	if !strings.HasPrefix(version, "v") {
		return fmt.Errorf("-version %q: krew needs a v-prefixed semantic version, e.g. v0.1.0", version)
	}
	if uri == "" {
		uri = "https://github.com/kube-nexus/kubenexus/releases/download/" + version
	}
	var ps []Platform
	for _, s := range strings.Split(platforms, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(s), "/")
		if !ok {
			return fmt.Errorf("-platforms: %q is not os/arch", s)
		}
		ps = append(ps, Platform{goos, goarch})
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		return err
	}
	sums := map[Platform]string{}
	for _, p := range ps {
		fmt.Printf(">> %s/%s\n", p.OS, p.Arch)
		exe := filepath.Join(out, ".build", p.OS+"-"+p.Arch, p.bin())
		cmd := exec.Command("go", "build", "-trimpath", "-gcflags=all=-dwarf=false", "-ldflags", ldflags, "-o", exe, "./cmd/kubectl-kubenexus")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building for %s/%s: %w", p.OS, p.Arch, err)
		}
		sum, err := archive(filepath.Join(out, p.archive()), exe, p.bin(), license)
		if err != nil {
			return err
		}
		sums[p] = sum
	}
	manifest, err := Manifest(version, uri, ps, sums)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "kubenexus.yaml"), manifest, 0o644); err != nil {
		return err
	}
	fmt.Printf(">> %s: %d archives and kubenexus.yaml (archives to publish under %s)\n", out, len(ps), uri)
	return os.RemoveAll(filepath.Join(out, ".build"))
}

// archive writes a tar.gz of the binary and the LICENSE and returns its SHA-256.
func archive(path, exe, name string, license []byte) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	gz := gzip.NewWriter(io.MultiWriter(f, h))
	tw := tar.NewWriter(gz)
	bin, err := os.ReadFile(exe)
	if err != nil {
		return "", err
	}
	for _, e := range []struct {
		name string
		mode int64
		data []byte
	}{{name, 0o755, bin}, {"LICENSE", 0o644, license}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			return "", err
		}
		if _, err := tw.Write(e.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), f.Close()
}

// Manifest is the krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2
// Plugin) for the archives.
func Manifest(version, uri string, ps []Platform, sums map[Platform]string) ([]byte, error) {
	type selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	}
	type platform struct {
		Selector selector `json:"selector"`
		URI      string   `json:"uri"`
		SHA256   string   `json:"sha256"`
		Bin      string   `json:"bin"`
	}
	var platforms []platform
	for _, p := range ps {
		sum, ok := sums[p]
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("%s/%s: no SHA-256 of its archive", p.OS, p.Arch)
		}
		platforms = append(platforms, platform{
			Selector: selector{MatchLabels: map[string]string{"os": p.OS, "arch": p.Arch}},
			URI:      strings.TrimSuffix(uri, "/") + "/" + p.archive(),
			SHA256:   sum,
			Bin:      p.bin(),
		})
	}
	return yaml.Marshal(map[string]any{
		"apiVersion": "krew.googlecontainertools.github.com/v1alpha2",
		"kind":       "Plugin",
		"metadata":   map[string]any{"name": "kubenexus"},
		"spec": map[string]any{
			"version":          version,
			"homepage":         "https://github.com/kube-nexus/kubenexus",
			"shortDescription": "Why a workload waits under KubeNexus, and when it could run",
			"description": "explain says, layer by layer (admission, Kueue, gang, tenant tier, GPU memory, topology, capacity, preemption, earliest start),\n" +
				"why a pod, PodGroup, framework job or Kueue Workload scheduled by KubeNexus waits, and what would unblock it;\n" +
				"whatif says whether the jobs in a file would be placed now, where, or the earliest time they could start.\n" +
				"It needs read access only (the chart's kubenexus-explain ClusterRole).",
			"platforms": platforms,
		},
	})
}
