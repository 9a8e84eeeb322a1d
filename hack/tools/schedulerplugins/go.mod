// Tools module for scheduler-plugins (kubernetes-sigs/scheduler-plugins): its
// scheduling.x-k8s.io PodGroup CRD, which the tests install to check that KubeNexus
// honours PodGroups written for scheduler-plugins. It pins the release the module
// proxy serves here (v0.31.8).
module github.com/kube-nexus/kubenexus/hack/tools/schedulerplugins

go 1.25.0

require sigs.k8s.io/scheduler-plugins v0.31.8
