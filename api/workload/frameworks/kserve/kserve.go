// Package kserve tells the pods of KServe (and KFServing) InferenceServices, and
// of predictors labelled as such, as inference. Their gangs, if any, are PodGroups.
package kserve

import (
	"strings"

	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/api/workload/frameworks"
)

// Labels of serving pods.
const (
	LabelInferenceService   = "serving.kserve.io/inferenceservice"
	LabelKFInferenceService = "serving.kubeflow.org/inferenceservice"
	LabelAppComponent       = "app.kubernetes.io/component"
)

// Framework is KServe.
type Framework struct{ frameworks.Base }

func (Framework) Recognise(l map[string]string, _ string) (frameworks.Recognition, bool) {
	switch strings.ToLower(l[LabelAppComponent]) {
	case "predictor", "inference", "serving":
		return frameworks.Recognition{Class: v1alpha1.WorkloadClassInference}, true
	}
	if l[LabelInferenceService] == "" && l[LabelKFInferenceService] == "" {
		return frameworks.Recognition{}, false
	}
	return frameworks.Recognition{Class: v1alpha1.WorkloadClassInference}, true
}
