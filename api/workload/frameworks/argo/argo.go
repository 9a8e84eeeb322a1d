// Package argo tells the pods of Argo Workflows as batch.
package argo

import (
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// LabelWorkflow names a workflow pod's Workflow.
const LabelWorkflow = "workflows.argoproj.io/workflow"

// Framework is Argo Workflows.
type Framework struct{ frameworks.Base }

func (Framework) Recognise(l map[string]string, _ string) (frameworks.Recognition, bool) {
	if l[LabelWorkflow] == "" {
		return frameworks.Recognition{}, false
	}
	return frameworks.Recognition{Class: v1alpha1.WorkloadClassBatch}, true
}
