// Package plugins is the one list of KubeNexus scheduler plugins. cmd/scheduler and
// the integration tests build the scheduler from it, so the scheduler under test is
// the scheduler that ships.
package plugins

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/coscheduling"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/names"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/profileclassifier"
)

// RegistryOptions returns the app options that register every KubeNexus plugin.
// Plugins share one KubeNexus object cache that lives as long as runCtx.
func RegistryOptions(runCtx context.Context) []app.Option {
	crds := crdcache.NewProvider(runCtx)
	return []app.Option{
		app.WithPlugin(names.ProfileClassifier, profileclassifier.New),
		app.WithPlugin(names.Coscheduling, func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return coscheduling.New(ctx, obj, h, crds)
		}),
	}
}
