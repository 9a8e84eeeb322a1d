package config

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// SchemeGroupVersion is the apiVersion plugin args carry inside a
// KubeSchedulerConfiguration's pluginConfig.
const SchemeGroupVersion = "kubescheduler.config.k8s.io/v1"

// decodeStrict decodes plugin args as the scheduler hands them to a plugin factory
// (nil, or *runtime.Unknown holding JSON) into out, refusing unknown fields so that
// a misspelt argument is an error rather than silently ignored.
func decodeStrict(obj runtime.Object, out any) error {
	if obj == nil {
		return nil
	}
	var raw []byte
	switch o := obj.(type) {
	case *runtime.Unknown:
		raw = o.Raw
	default:
		b, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("encoding plugin args %T: %w", obj, err)
		}
		raw = b
	}
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decoding plugin args: %w", err)
	}
	return nil
}
