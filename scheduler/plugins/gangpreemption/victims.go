package gangpreemption

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-nexus/kubenexus/api/gang"
	"github.com/kube-nexus/kubenexus/api/workload"
	"github.com/kube-nexus/kubenexus/scheduler/plugins/internal/gangs"
)

// victim is what the search reads of a running pod, kept between preemptions (see
// profiles): its profile, the unit it is evicted with, and the GPUs it holds.
type victim struct {
	prof workload.Profile
	// key names its unit: "gang ns/name" or "pod ns/name".
	key  string
	gang *gang.Key
	gpus int64
	// ckpt is what it declares of its checkpoints (malformed annotations count
	// as not declared).
	ckpt workload.Checkpointing
}

// newVictim describes a running pod for the search.
func newVictim(p *corev1.Pod, prof workload.Profile, gpuNames []corev1.ResourceName) *victim {
	v := &victim{prof: prof, key: "pod " + p.Namespace + "/" + p.Name}
	if prof.Gang != nil {
		v.gang, v.key = &prof.Gang.Key, "gang "+prof.Gang.Key.String()
	}
	if workload.NamesAny(p, gpuNames) {
		v.gpus = workload.HeldGPUs(p, gpuNames...)
		if len(p.Annotations) > 0 {
			v.ckpt, _ = workload.CheckpointingOf(p)
		}
	}
	return v
}

// profiles remembers what the search reads of each running pod (victim: its
// profile, unit and GPUs) between preemptions: every PostFilter looks at every
// running pod, and classifying them all again each time was most of its cost,
// building their unit keys most of the rest. An entry is valid
// while the snapshot holds the same pod object (an update makes a new one); entries
// of pods not seen for a while are dropped.
type profiles struct {
	// gangs files each pod's gang (a CompositePodGroup's for its PodGroups' pods).
	gangs *gangs.Service
	mu    sync.Mutex
	epoch uint64
	byUID map[types.UID]*classified
}

type classified struct {
	pod  *corev1.Pod
	v    *victim
	seen uint64
}

// sweepEvery is how many scans pass between drops of entries not seen since the
// scan before.
const sweepEvery = 64

// scan returns the describer of one scan over the running pods (counting the GPUs
// of gpuNames); done ends it.
func (c *profiles) scan(gpuNames []corev1.ResourceName) (describe func(*corev1.Pod) *victim, done func()) {
	c.mu.Lock()
	if c.byUID == nil {
		c.byUID = map[types.UID]*classified{}
	}
	c.epoch++
	if c.epoch%sweepEvery == 0 {
		for uid, e := range c.byUID {
			if e.seen+1 < c.epoch {
				delete(c.byUID, uid)
			}
		}
	}
	epoch := c.epoch
	return func(p *corev1.Pod) *victim {
		if e := c.byUID[p.UID]; e != nil && e.pod == p {
			e.seen = epoch
			return e.v
		}
		prof := workload.Classify(p, workload.Namespace{}, "")
		c.gangs.FileProfile(&prof, p)
		v := newVictim(p, prof, gpuNames)
		c.byUID[p.UID] = &classified{pod: p, v: v, seen: epoch}
		return v
	}, c.mu.Unlock
}
