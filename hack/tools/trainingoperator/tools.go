//go:build tools

// Package tools pins the training-operator binary this module builds.
package tools

import _ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
