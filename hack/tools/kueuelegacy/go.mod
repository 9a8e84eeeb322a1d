// Kueue v0.14.8's API module, for its CRDs only: the last Kueue that serves only
// kueue.x-k8s.io/v1beta1. test/integration/kueuelegacy installs them to check that
// KubeNexus still works on such clusters. Nothing here is built.
module github.com/kube-nexus/kubenexus/hack/tools/kueuelegacy

go 1.25.0

require sigs.k8s.io/kueue v0.14.8
