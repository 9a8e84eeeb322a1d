package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Component is one image: a binary of the main module and its entrypoint.
type Component struct {
	Name, Package, Description string
}

// Components are the images KubeNexus ships.
var Components = []Component{
	{Name: "kubenexus-manager", Package: "./cmd/manager", Description: "KubeNexus operator: reconciles the KubeNexus API and serves the pod webhooks"},
	{Name: "kubenexus-scheduler", Package: "./cmd/scheduler", Description: "kube-scheduler with the KubeNexus plugins"},
}

// NodeTestComponents are the images the real node of make test-e2e-node runs
// besides KubeNexus's own (-node-test-images): its pods' sandbox and the test
// workload, built the same way so that the node pulls nothing. They are never
// pushed.
var NodeTestComponents = []Component{
	{Name: "kubenexus-e2e-pause", Package: "./test/e2e/node/images/pause", Description: "KubeNexus e2e: the real node's pod sandbox"},
	{Name: "kubenexus-e2e-workload", Package: "./test/e2e/node/images/workload", Description: "KubeNexus e2e: a container that sleeps and exits with a given code"},
}

// User is the image's non-root user and group.
const User = "65532:65532"

// Source is the repository the images are labelled with.
const Source = "https://github.com/kube-nexus/kubenexus"

// Options says what to build.
type Options struct {
	Root, Out         string
	Version, Revision string
	Registry          string
	Arches            []string
	// Components are the images to build (default: Components).
	Components []Component
}

// Built is one image written.
type Built struct {
	Ref, Arch, Archive, Binary string
	Digest                     v1.Hash
	Size                       int64
	Image                      v1.Image
}

// Build builds every component for every architecture and writes the images.
func Build(opts Options, progress func(string)) ([]Built, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	created, err := commitTime(opts.Root)
	if err != nil {
		return nil, err
	}
	k8s, err := goList(opts.Root, "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	if err != nil {
		return nil, err
	}
	var out []Built
	for _, c := range opts.Components {
		for _, arch := range opts.Arches {
			bin := filepath.Join(opts.Out, "linux_"+arch, c.Name)
			progress(fmt.Sprintf("building %s for linux/%s (a first build for an architecture compiles every package: minutes)", c.Name, arch))
			if err := goBuild(opts, arch, c.Package, bin, LDFlags(opts.Version, opts.Revision, k8s)); err != nil {
				return nil, err
			}
			img, err := Image(c, arch, bin, opts.Version, opts.Revision, created)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", c.Name, arch, err)
			}
			ref := opts.Registry + "/" + c.Name + ":" + opts.Version
			tag, err := name.NewTag(ref)
			if err != nil {
				return nil, err
			}
			archive := filepath.Join(opts.Out, fmt.Sprintf("%s_%s_linux_%s.tar", c.Name, opts.Version, arch))
			if err := tarball.WriteToFile(archive, tag, img); err != nil {
				return nil, fmt.Errorf("writing %s: %w", archive, err)
			}
			d, err := img.Digest()
			if err != nil {
				return nil, err
			}
			st, err := os.Stat(archive)
			if err != nil {
				return nil, err
			}
			progress("wrote " + archive)
			out = append(out, Built{Ref: ref, Arch: arch, Archive: archive, Binary: bin, Digest: d, Size: st.Size(), Image: img})
		}
	}
	return out, nil
}

// LDFlags stamps the KubeNexus version and revision into the binaries, and into
// kube-scheduler's own version (`kubenexus-scheduler --version` prints
// "Kubernetes v1.37.2+kubenexus-v0.1.0").
func LDFlags(version, revision, k8s string) string {
	pkg := "github.com/kube-nexus/kubenexus/cmd/internal/version"
	return strings.Join([]string{
		"-s", "-w",
		"-X", pkg + ".version=" + version,
		"-X", pkg + ".revision=" + revision,
		"-X", "k8s.io/component-base/version.gitVersion=" + k8s + "+kubenexus-" + version,
		"-X", "k8s.io/component-base/version.gitCommit=" + revision,
	}, " ")
}

func (o *Options) defaults() error {
	if o.Version == "" {
		v, err := appVersion(o.Root)
		if err != nil {
			return err
		}
		o.Version = v
	}
	if o.Revision == "" {
		rev, err := git(o.Root, "rev-parse", "HEAD")
		if err != nil {
			return err
		}
		o.Revision = rev
	}
	for _, a := range o.Arches {
		if a != "amd64" && a != "arm64" {
			return fmt.Errorf("-arch %q: amd64 and arm64 are built", a)
		}
	}
	if len(o.Components) == 0 {
		o.Components = Components
	}
	if len(o.Arches) == 0 {
		return fmt.Errorf("-arch: name at least one of amd64, arm64")
	}
	return nil
}

var appVersionLine = regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?\s*$`)

// appVersion is the chart's appVersion: the tag the chart's images name.
func appVersion(root string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(root, "charts", "kubenexus", "Chart.yaml"))
	if err != nil {
		return "", err
	}
	m := appVersionLine.FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("charts/kubenexus/Chart.yaml has no appVersion")
	}
	return string(m[1]), nil
}

// commitTime is HEAD's commit time: images of one commit are the same bytes.
func commitTime(root string) (time.Time, error) {
	s, err := git(root, "log", "-1", "--format=%ct")
	if err != nil {
		return time.Time{}, err
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func goList(root string, args ...string) (string, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// goBuild builds pkg of the main module for linux/arch: static, paths trimmed, no
// DWARF (the flags `make build` uses, so the host's architecture reuses its compiled
// packages).
func goBuild(opts Options, arch, pkg, out, ldflags string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-gcflags=all=-dwarf=false", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = opts.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for linux/%s: %w", pkg, arch, err)
	}
	return nil
}

// Image is the image of component c for arch, with the binary at bin.
func Image(c Component, arch, bin, version, revision string, created time.Time) (v1.Image, error) {
	layer, err := rootfs(c.Name, bin, created)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	p := platform(arch)
	cfg.OS, cfg.Architecture = p.OS, p.Architecture
	cfg.Created = v1.Time{Time: created}
	cfg.Config = v1.Config{
		Entrypoint: []string{"/" + c.Name},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels: map[string]string{
			"org.opencontainers.image.title":       c.Name,
			"org.opencontainers.image.description": c.Description,
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.revision":    revision,
			"org.opencontainers.image.source":      Source,
			"org.opencontainers.image.licenses":    "Apache-2.0",
			"org.opencontainers.image.created":     created.Format(time.RFC3339),
		},
	}
	cfg.History = []v1.History{{Created: v1.Time{Time: created}, CreatedBy: "hack/image: " + c.Name + " " + version, Comment: "static binary, passwd/group for " + User + ", /tmp"}}
	return mutate.ConfigFile(img, cfg)
}

// rootfs is the image's one layer: /etc/passwd and /etc/group naming root and the
// non-root user, the user's home, /tmp (sticky, world-writable; mount an emptyDir
// there under a read-only root filesystem) and the binary.
func rootfs(binary, bin string, mtime time.Time) (v1.Layer, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, 65532) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return file(binary, 0o755, exe) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// Index is the multi-architecture index of one component's images.
func Index(images []Built) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, b := range images {
		mt, err := b.Image.MediaType()
		if err != nil {
			return nil, err
		}
		p := platform(b.Arch)
		adds = append(adds, mutate.IndexAddendum{Add: b.Image, Descriptor: v1.Descriptor{MediaType: mt, Platform: &p}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}
