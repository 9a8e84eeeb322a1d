package config

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// check decodes a plugin's args as the scheduler does — strictly, into a new T —
// fills its defaults and validates them, reporting every error under path (the
// operator passes the KubeNexusConfig field the args were rendered from).
func check[T any](obj runtime.Object, path *field.Path, defaults func(*T), validate func(*field.Path, *T) field.ErrorList) (*T, field.ErrorList) {
	a := new(T)
	if err := decodeStrict(obj, a); err != nil {
		return nil, field.ErrorList{field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("the scheduler cannot decode these args: %v", err))}
	}
	defaults(a)
	if errs := validate(path, a); len(errs) > 0 {
		return nil, errs
	}
	return a, nil
}

// decode is check for a plugin factory: errors under the args' kind, as one error.
func decode[T any](obj runtime.Object, kind string, defaults func(*T), validate func(*field.Path, *T) field.ErrorList) (*T, error) {
	a, errs := check(obj, field.NewPath(kind), defaults, validate)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return a, nil
}
