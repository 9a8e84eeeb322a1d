// Tools module for Volcano (volcano.sh/volcano): its scheduling.volcano.sh PodGroup
// CRD, which the tests install to check KubeNexus's Volcano compatibility.
module github.com/kube-nexus/kubenexus/hack/tools/volcano

go 1.25.0

require volcano.sh/volcano v1.8.0
