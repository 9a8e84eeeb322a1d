// Package untrusted bounds values read from pod labels and annotations before they
// are quoted in messages.
package untrusted

// maxQuoted is the longest value quoted whole.
const maxQuoted = 64

// Truncate keeps messages bounded when values are hostile.
func Truncate(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted] + "..."
}
