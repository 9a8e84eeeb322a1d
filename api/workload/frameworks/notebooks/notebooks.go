// Package notebooks tells the pods of JupyterHub and Kubeflow Notebooks as
// interactive.
package notebooks

import (
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// Labels of notebook pods.
const (
	LabelJupyterHub       = "app.jupyter.org/hub-version"
	LabelKubeflowNotebook = "notebook-name"
)

// Framework is JupyterHub and Kubeflow Notebooks.
type Framework struct{ frameworks.Base }

func (Framework) Recognise(l map[string]string, _ string) (frameworks.Recognition, bool) {
	if l[LabelJupyterHub] == "" && l[LabelKubeflowNotebook] == "" {
		return frameworks.Recognition{}, false
	}
	return frameworks.Recognition{Class: v1alpha1.WorkloadClassInteractive}, true
}
