// Package version is the KubeNexus release the binaries were built as. The image
// build (hack/image) and `make build` stamp it with -ldflags -X; a plain `go build`
// reports the module's VCS revision instead.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags "-X github.com/kube-nexus/kubenexus/cmd/internal/version.version=v0.1.0
// -X ....revision=<commit>".
var (
	version  = "unknown"
	revision = ""
)

// String describes the build: "kubenexus-manager v0.1.0 (revision 0b50e79, go1.26.8 linux/amd64)".
func String(binary string) string {
	rev := revision
	if rev == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					rev = s.Value
				}
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("%s %s (revision %s, %s %s/%s)", binary, version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
