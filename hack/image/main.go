// Command image builds the KubeNexus container images without a container engine:
// each binary is built static (CGO_ENABLED=0) for linux on each architecture and
// put, with the passwd and group entries of the non-root user 65532 and a /tmp, in
// a single layer on an empty base. Each image is written as an archive in `docker
// save` format that `docker load`, `podman load` and `kind load image-archive` read;
// -push sends every image, as one multi-architecture index per component, to a
// registry.
//
//	go run . -root ../.. -out ../../bin/image -version v0.1.0 -arch amd64,arm64 [-push ghcr.io/kube-nexus]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	var (
		opts   Options
		arches string
		push   string
		node   bool
	)
	flag.StringVar(&opts.Root, "root", "../..", "The repository root (the main module).")
	flag.StringVar(&opts.Out, "out", "../../bin/image", "Directory the binaries and image archives are written to.")
	flag.StringVar(&opts.Version, "version", "", "Image tag and the version stamped into the binaries (default: the chart's appVersion).")
	flag.StringVar(&opts.Revision, "revision", "", "Source revision for the label and the binaries (default: git rev-parse HEAD).")
	flag.StringVar(&opts.Registry, "registry", "ghcr.io/kube-nexus", "Registry and path the images are named under.")
	flag.StringVar(&arches, "arch", "amd64,arm64", "Architectures, comma-separated.")
	flag.StringVar(&push, "push", "", "Push the images to this registry path (overrides -registry) as multi-architecture indexes.")
	flag.BoolVar(&node, "node-test-images", false, "Also build the real node's test images (pause, workload; make test-e2e-node). Never pushed.")
	flag.Parse()
	if node && push != "" {
		fmt.Fprintln(os.Stderr, "image: -node-test-images: the test images are not pushed; leave out -push")
		os.Exit(2)
	}
	if node {
		opts.Components = append(append([]Component{}, Components...), NodeTestComponents...)
	}
	if push != "" {
		opts.Registry = push
	}
	opts.Arches = strings.Split(arches, ",")
	if err := run(opts, push != ""); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(opts Options, push bool) error {
	start := time.Now()
	built, err := Build(opts, func(msg string) { fmt.Printf("[%5.1fs] %s\n", time.Since(start).Seconds(), msg) })
	if err != nil {
		return err
	}
	for _, b := range built {
		fmt.Printf("%s  %s  %s  %d bytes  %s\n", b.Ref, b.Arch, b.Digest, b.Size, filepath.Base(b.Archive))
	}
	if !push {
		return nil
	}
	byRef := map[string][]Built{}
	var order []string
	for _, b := range built {
		if _, ok := byRef[b.Ref]; !ok {
			order = append(order, b.Ref)
		}
		byRef[b.Ref] = append(byRef[b.Ref], b)
	}
	for _, ref := range order {
		tag, err := name.NewTag(ref)
		if err != nil {
			return err
		}
		idx, err := Index(byRef[ref])
		if err != nil {
			return err
		}
		if err := remote.WriteIndex(tag, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s\n", ref, d)
	}
	return nil
}

// platform is the image platform of a linux architecture.
func platform(arch string) v1.Platform { return v1.Platform{OS: "linux", Architecture: arch} }
