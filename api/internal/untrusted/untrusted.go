// Package untrusted bounds values read from pod labels and annotations before they
// are quoted in messages.
package untrusted

import "github.com/kube-nexus/kubenexus/api/v1alpha1"

// maxQuoted is the longest value quoted whole, in bytes.
const maxQuoted = 64

// Truncate keeps messages bounded when values are hostile.
func Truncate(s string) string { return v1alpha1.Shorten(s, maxQuoted) }
