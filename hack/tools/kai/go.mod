// Tools module for KAI-Scheduler (github.com/NVIDIA/KAI-scheduler): its
// scheduling.run.ai PodGroup CRD, which the tests install to check that KubeNexus
// reads KAI's PodGroups (sub-groups and topology constraints) under its real
// validation.
module github.com/kube-nexus/kubenexus/hack/tools/kai

go 1.25.0

require github.com/NVIDIA/KAI-scheduler v0.12.0
