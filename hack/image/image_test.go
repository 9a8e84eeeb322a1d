package main

import (
	"archive/tar"
	"bufio"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const root = "../.."

// The images are built for this machine's architecture (its compiled packages are
// `make build`'s), and for the others IMAGE_TEST_ARCHES names (a first build for an
// architecture compiles every package: minutes).
func testArches(t *testing.T) []string {
	arches := []string{runtime.GOARCH}
	if extra := os.Getenv("IMAGE_TEST_ARCHES"); extra != "" {
		arches = strings.Split(extra, ",")
	}
	if !slices.Contains([]string{"amd64", "arm64"}, arches[0]) {
		t.Skipf("images are built for amd64 and arm64, not %s", arches[0])
	}
	return arches
}

func TestImagesRunAsTheDockerfileSaysAndTheChartNamesThem(t *testing.T) {
	arches := testArches(t)
	out := t.TempDir()
	built, err := Build(Options{Root: root, Out: out, Registry: "ghcr.io/kube-nexus", Arches: arches}, func(msg string) { t.Log(msg) })
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != len(Components)*len(arches) {
		t.Fatalf("built %d images, want %d", len(built), len(Components)*len(arches))
	}
	version, err := appVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	revision, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := goList(root, "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	stages := dockerfileStages(t)
	repos := chartRepositories(t)
	for _, b := range built {
		component := filepath.Base(b.Binary)
		t.Run(component+"/"+b.Arch, func(t *testing.T) {
			// The chart pulls exactly this reference by default.
			if want := repos[component] + ":" + version; b.Ref != want {
				t.Errorf("image %s, but the chart's values name %s", b.Ref, want)
			}
			tag, err := name.NewTag(b.Ref)
			if err != nil {
				t.Fatal(err)
			}
			// Read back from the archive, as docker load / kind load read it.
			img, err := tarball.ImageFromPath(b.Archive, &tag)
			if err != nil {
				t.Fatalf("reading %s: %v", b.Archive, err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OS != "linux" || cfg.Architecture != b.Arch {
				t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, b.Arch)
			}
			entry := []string{"/" + component}
			if !slices.Equal(cfg.Config.Entrypoint, entry) {
				t.Errorf("entrypoint %q, want %q", cfg.Config.Entrypoint, entry)
			}
			if cfg.Config.User != User {
				t.Errorf("user %q, want %q", cfg.Config.User, User)
			}
			// The Dockerfile's stage of the same name builds the same contract.
			st, ok := stages[strings.TrimPrefix(component, "kubenexus-")]
			if !ok {
				t.Fatalf("the Dockerfile has no stage %q", strings.TrimPrefix(component, "kubenexus-"))
			}
			if st.user != cfg.Config.User || !slices.Equal(st.entrypoint, cfg.Config.Entrypoint) {
				t.Errorf("the Dockerfile's stage runs %q as %q; the image %q as %q", st.entrypoint, st.user, cfg.Config.Entrypoint, cfg.Config.User)
			}
			for k, want := range map[string]string{
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": revision,
				"org.opencontainers.image.source":   Source,
				"org.opencontainers.image.title":    component,
			} {
				if got := cfg.Config.Labels[k]; got != want {
					t.Errorf("label %s=%q, want %q", k, got, want)
				}
			}

			files := unpack(t, img, t.TempDir())
			if files["tmp"].Mode&0o7777 != 0o1777 {
				t.Errorf("/tmp mode %o, want 1777", files["tmp"].Mode&0o7777)
			}
			passwd, err := os.ReadFile(files["etc/passwd"].path)
			if err != nil || !strings.Contains(string(passwd), ":65532:65532:") {
				t.Errorf("/etc/passwd names no user 65532: %q (%v)", passwd, err)
			}
			bin, ok := files[component]
			if !ok {
				t.Fatalf("the image has no /%s", component)
			}
			if bin.Mode&0o111 == 0 {
				t.Errorf("/%s mode %o is not executable", component, bin.Mode)
			}
			checkELF(t, bin.path, b.Arch)
			if b.Arch != runtime.GOARCH {
				return
			}
			got, err := exec.Command(bin.path, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("/%s --version: %v\n%s", component, err, got)
			}
			want := component + " " + version + " (revision " + revision
			if component == "kubenexus-scheduler" {
				want = "Kubernetes " + k8s + "+kubenexus-" + version
			}
			if !strings.Contains(string(got), want) {
				t.Errorf("/%s --version printed %q, want it to say %q", component, got, want)
			}
		})
	}
}

type file struct {
	path string
	Mode int64
}

// unpack writes the image's filesystem under dir and returns its entries by path.
func unpack(t *testing.T, img v1.Image, dir string) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]file{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		clean := strings.TrimSuffix(filepath.Clean(h.Name), "/")
		p := filepath.Join(dir, clean)
		out[clean] = file{path: p, Mode: h.Mode}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode&0o777))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkELF: a static linux executable for arch (no interpreter: it runs on an
// empty base).
func checkELF(t *testing.T, path, arch string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		t.Errorf("%s is for %s, want %s", path, f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (it names an interpreter); the image has no libc", path)
		}
	}
}

type stage struct {
	user       string
	entrypoint []string
}

// dockerfileStages reads USER and ENTRYPOINT (exec form) of each named stage.
func dockerfileStages(t *testing.T) map[string]stage {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]stage{}
	from := regexp.MustCompile(`(?i)^FROM\s+\S+\s+AS\s+(\S+)`)
	entry := regexp.MustCompile(`^ENTRYPOINT\s+\[(.*)\]`)
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := from.FindStringSubmatch(line); m != nil {
			cur = m[1]
			continue
		}
		st := out[cur]
		switch {
		case strings.HasPrefix(line, "USER "):
			st.user = strings.TrimSpace(strings.TrimPrefix(line, "USER "))
		case entry.MatchString(line):
			st.entrypoint = nil
			for _, part := range strings.Split(entry.FindStringSubmatch(line)[1], ",") {
				st.entrypoint = append(st.entrypoint, strings.Trim(strings.TrimSpace(part), `"`))
			}
		default:
			continue
		}
		out[cur] = st
	}
	return out
}

// chartRepositories reads the image repositories the chart's values name, by
// component.
func chartRepositories(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "charts", "kubenexus", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*repository:\s*(\S+/(kubenexus-[a-z]+))\s*$`).FindAllStringSubmatch(string(raw), -1) {
		out[m[2]] = m[1]
	}
	return out
}
