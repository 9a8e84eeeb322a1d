// Package config holds the typed arguments of the KubeNexus scheduler plugins: their
// types, defaults and validation. It imports nothing from k8s.io/kubernetes so that
// the operator can render and validate scheduler configuration with it.
package config
