// Package podobj reads the pod out of what a shared informer hands an event handler.
package podobj

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// From returns the pod an informer event carries — the pod itself or, for a
// deletion the informer missed, the last state it knew — or nil for anything else.
func From(obj any) *corev1.Pod {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o
	case toolscache.DeletedFinalStateUnknown:
		p, _ := o.Obj.(*corev1.Pod)
		return p
	}
	return nil
}
