package coscheduling

import (
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"

	"github.com/kube-nexus/kubenexus/api/gang"
)

// gangPriority resolves a gang's queue priority from its PodGroup's
// spec.priorityClassName: the value of that PriorityClass, or nil when the PodGroup
// names none, does not exist, or names a class that does not exist (the members'
// own priorities apply then).
type gangPriority struct {
	// podGroupClass returns the priorityClassName of the gang's PodGroup ("" if none).
	podGroupClass func(gang.Key) string
	classes       schedulinglisters.PriorityClassLister
}

func (g gangPriority) resolve(key gang.Key) (class string, value *int32) {
	if g.podGroupClass == nil || g.classes == nil {
		return "", nil
	}
	class = g.podGroupClass(key)
	return class, g.value(class)
}

// value is the PriorityClass's value, nil when class is "" or does not exist.
func (g gangPriority) value(class string) *int32 {
	if class == "" || g.classes == nil {
		return nil
	}
	pc, err := g.classes.Get(class)
	if err != nil {
		return nil
	}
	v := pc.Value
	return &v
}

// refreshPriority re-resolves the priority of one gang (its PodGroup changed).
func (x *podIndex) refreshPriority(key gang.Key) {
	class, value := x.priority.resolve(key)
	x.setPriority(key, class, value)
}

// setPriority records the gang's PriorityClass and its value.
func (x *podIndex) setPriority(key gang.Key, class string, value *int32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.gangs[key]; e != nil {
		e.priorityClass, e.priority = class, value
	}
}

// gangsWithPriorityClass returns the gangs whose PodGroup names a PriorityClass.
func (x *podIndex) gangsWithPriorityClass() []gang.Key {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var keys []gang.Key
	for key, e := range x.gangs {
		if e.priorityClass != "" {
			keys = append(keys, key)
		}
	}
	return keys
}

// refreshPriorityClass re-resolves every gang whose PodGroup names the class (it
// was created, changed or deleted).
func (x *podIndex) refreshPriorityClass(class string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for key, e := range x.gangs {
		if e.priorityClass == class {
			e.priorityClass, e.priority = x.priority.resolve(key)
		}
	}
}
