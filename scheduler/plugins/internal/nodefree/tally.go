package nodefree

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// Tally is resource amounts per node (by name or index), in milli-units: what pods
// use, what reservations hold, what evictions free.
type Tally[K comparable] map[K]map[corev1.ResourceName]int64

// Add adds n times amounts to key's tally (n < 0 subtracts), saturating.
func (t Tally[K]) Add(key K, amounts map[corev1.ResourceName]int64, n int) {
	m := t[key]
	if m == nil {
		m = map[corev1.ResourceName]int64{}
		t[key] = m
	}
	for name, v := range amounts {
		m[name] += Times(v, n)
	}
}

// AddPod adds n times a pod's requests and its pod slot to key's tally.
func (t Tally[K]) AddPod(key K, requests map[corev1.ResourceName]int64, n int) {
	t.Add(key, requests, n)
	t[key][corev1.ResourcePods] += int64(n) * 1000
}

// Times multiplies a non-negative amount by a count (n < 0 gives the negative),
// saturating: a reservation of many large slots (10000 × 1Ti) must hold
// "everything", not wrap around to a negative. A negative amount counts as 0.
func Times(v int64, n int) int64 {
	if v <= 0 || n == 0 {
		return 0
	}
	abs := n
	if abs < 0 {
		abs = -abs
	}
	const limit = math.MaxInt64 / 4
	r := int64(limit)
	if v <= limit/int64(abs) {
		r = v * int64(abs)
	}
	if n < 0 {
		return -r
	}
	return r
}
