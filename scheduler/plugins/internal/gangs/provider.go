package gangs

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/scheduler/crdcache"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/podobj"
)

// Provider builds one Service per scheduler profile, on the first plugin of the
// profile that asks, and hands the same one to the others.
type Provider struct {
	mu        sync.Mutex
	byProfile map[string]*Service
	// failed says the failed pods' watch runs (one per process, for every profile).
	failed bool
}

// For returns the profile's Service, built and fed by the profile's shared
// informers (pods, PriorityClasses) and the KubeNexus object cache (PodGroups) on
// first use.
func (p *Provider) For(ctx context.Context, h fwk.Handle, pgs *crdcache.Cache) (*Service, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.byProfile[h.ProfileName()]; s != nil {
		return s, nil
	}
	s := NewService(h.ProfileName(), time.Now)
	s.adm.pgs = pgs
	s.adm.activate = func(pods map[string]*corev1.Pod) { h.Activate(klog.Background(), pods) }
	classes := h.SharedInformerFactory().Scheduling().V1().PriorityClasses()
	s.ResolvePrioritiesWith(func(key gang.Key) string {
		if pg := pgs.PodGroup(key); pg != nil {
			return pg.Spec.PriorityClassName
		}
		return ""
	}, classes.Lister())
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(s.Handler()); err != nil {
		return nil, fmt.Errorf("gangs: watching pods: %w", err)
	}
	if err := p.watchFailedLocked(ctx, h.ClientSet()); err != nil {
		return nil, err
	}
	// A PodGroup or PriorityClass change re-resolves the gang's queue priority, then
	// wakes the gang's members if the change completes it, then tells the subscribers.
	if err := pgs.OnPodGroupChange(func(key gang.Key) {
		s.Refile(key)
		s.RefreshPriority(key)
		s.ActivateIfQuorum(key)
		s.mu.RLock()
		subs := s.podGroupSubs
		s.mu.RUnlock()
		for _, f := range subs {
			f(key)
		}
	}); err != nil {
		return nil, fmt.Errorf("gangs: watching PodGroups: %w", err)
	}
	onClass := func(obj any) {
		if m, err := meta.Accessor(obj); err == nil {
			s.RefreshPriorityClass(m.GetName())
		} else if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			if m, err := meta.Accessor(t.Obj); err == nil {
				s.RefreshPriorityClass(m.GetName())
			}
		}
	}
	informer := classes.Informer()
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    onClass,
		UpdateFunc: func(_, obj any) { onClass(obj) },
		DeleteFunc: onClass,
	}); err != nil {
		return nil, fmt.Errorf("gangs: watching PriorityClasses: %w", err)
	}
	s.ClassesSynced = informer.HasSynced
	// Admit holds members of gangs with a PriorityClass until the PriorityClass cache
	// has synced, and every member until the object cache has (it must not wait on
	// the queue's path); then they are let in.
	go func() {
		if toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			for _, key := range s.GangsWithPriorityClass() {
				s.ActivateIfQuorum(key)
			}
		}
	}()
	go func() {
		select {
		case <-pgs.WhenSynced():
			s.activateHeldForCache()
		case <-ctx.Done():
		}
	}()
	if p.byProfile == nil {
		p.byProfile = map[string]*Service{}
	}
	p.byProfile[h.ProfileName()] = s
	return s, nil
}

// OnPodGroupChange registers f, called after the Service has re-resolved the
// priority of the gang whose PodGroup changed.
func (s *Service) OnPodGroupChange(f func(gang.Key)) {
	s.mu.Lock()
	s.podGroupSubs = append(s.podGroupSubs, f)
	s.mu.Unlock()
}

// priorityResolver resolves a gang's queue priority from its PodGroup's
// spec.priorityClassName: the value of that PriorityClass, or nil when the PodGroup
// names none, does not exist, or names a class that does not exist (the members'
// own priorities apply then).
type priorityResolver struct {
	// podGroupClass returns the priorityClassName of the gang's PodGroup ("" if none).
	podGroupClass func(gang.Key) string
	classes       schedulinglisters.PriorityClassLister
}

func (r priorityResolver) resolve(key gang.Key) (class string, value *int32) {
	if r.podGroupClass == nil || r.classes == nil {
		return "", nil
	}
	class = r.podGroupClass(key)
	return class, r.value(class)
}

// value is the PriorityClass's value, nil when class is "" or does not exist.
func (r priorityResolver) value(class string) *int32 {
	if class == "" || r.classes == nil {
		return nil
	}
	pc, err := r.classes.Get(class)
	if err != nil {
		return nil
	}
	v := pc.Value
	return &v
}

// ResolvePrioritiesWith sets how gangs' priorities are resolved: podGroupClass
// names the PriorityClass of a gang's PodGroup ("" if none), classes has their
// values. Until it is called every gang has its members' own priorities.
func (s *Service) ResolvePrioritiesWith(podGroupClass func(gang.Key) string, classes schedulinglisters.PriorityClassLister) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.priority = priorityResolver{podGroupClass: podGroupClass, classes: classes}
}

// ClassValue is the value of the PriorityClass class as the scheduler's cache has
// it (nil: "" or no such class).
func (s *Service) ClassValue(class string) *int32 { return s.priority.value(class) }

// RefreshPriority re-resolves the priority of one gang (its PodGroup changed).
func (s *Service) RefreshPriority(key gang.Key) {
	class, value := s.priority.resolve(key)
	s.SetPriority(key, class, value)
}

// SetPriority records the gang's PriorityClass and its value.
func (s *Service) SetPriority(key gang.Key, class string, value *int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.gangs[key]; e != nil {
		e.PriorityClass, e.Priority = class, value
	}
}

// GangsWithPriorityClass returns the gangs whose PodGroup names a PriorityClass.
func (s *Service) GangsWithPriorityClass() []gang.Key {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var keys []gang.Key
	for key, e := range s.gangs {
		if e.PriorityClass != "" {
			keys = append(keys, key)
		}
	}
	return keys
}

// RefreshPriorityClass re-resolves every gang whose PodGroup names the class (it
// was created, changed or deleted).
func (s *Service) RefreshPriorityClass(class string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, e := range s.gangs {
		if e.PriorityClass == class {
			e.PriorityClass, e.Priority = s.priority.resolve(key)
		}
	}
}

// watchFailedLocked starts, once, a watch of the pods that failed, kept trimmed
// to what a loss needs, and hands each to every profile's Service: kube-scheduler's
// own pod informer leaves terminal pods out, so a member's failure shows there only
// as a deletion. Callers hold p.mu.
func (p *Provider) watchFailedLocked(ctx context.Context, client kubernetes.Interface) error {
	if p.failed || client == nil {
		return nil
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("status.phase", string(corev1.PodFailed)).String()
	}))
	informer := factory.Core().V1().Pods().Informer()
	if err := informer.SetTransform(trimFailed); err != nil {
		return fmt.Errorf("gangs: watching failed pods: %w", err)
	}
	on := func(obj any) {
		pod := podobj.From(obj)
		p.mu.Lock()
		services := make([]*Service, 0, len(p.byProfile))
		for _, s := range p.byProfile {
			services = append(services, s)
		}
		p.mu.Unlock()
		for _, s := range services {
			s.Failed(pod)
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    on,
		UpdateFunc: func(_, obj any) { on(obj) },
	}); err != nil {
		return fmt.Errorf("gangs: watching failed pods: %w", err)
	}
	factory.Start(ctx.Done())
	p.failed = true
	return nil
}

// trimFailed keeps of a failed pod what Service.Failed reads.
func trimFailed(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Spec:       corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status:     corev1.PodStatus{Phase: pod.Status.Phase, Conditions: pod.Status.Conditions},
	}, nil
}
