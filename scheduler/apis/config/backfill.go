package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BackfillArgs are the arguments of the Backfill plugin. It has none yet: lending
// to runtime-bounded pods, whose safety margin would be its argument, is not built.
type BackfillArgs struct {
	metav1.TypeMeta `json:",inline"`
}

// DecodeBackfillArgs decodes Backfill's args, refusing unknown fields.
func DecodeBackfillArgs(obj runtime.Object) (*BackfillArgs, error) {
	a := &BackfillArgs{}
	if err := decodeStrict(obj, a); err != nil {
		return nil, err
	}
	return a, nil
}
