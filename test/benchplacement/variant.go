package main

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
)

// variant describes a trace derived from the shared one: the share of the tasks that
// ask for no GPU, and among GPU tasks the share that share a GPU (a fraction of one,
// rounded up to a whole GPU as every arm does) and the share that require a GPU
// model. Tasks are drawn, with replacement, from the trace's own CPU-only and GPU
// tasks, so that shapes stay the trace's; a seed makes it reproducible.
type variant struct {
	name             string
	cpuOnly, sharing float64
	model            float64
	seed             int64
}

// parseVariants reads "name:cpu=0.1,sharing=0.6,model=0.33;..." ("name:" optional).
// A key left out keeps the trace's own share.
func parseVariants(spec string, seed int64) ([]variant, error) {
	var out []variant
	for i, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v := variant{name: fmt.Sprintf("v%d", i+1), cpuOnly: -1, sharing: -1, model: -1, seed: seed + int64(i)}
		if name, rest, ok := strings.Cut(part, ":"); ok {
			v.name, part = name, rest
		}
		for _, kv := range strings.Split(part, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				return nil, fmt.Errorf("variant %q: %q is not key=value (keys: cpu, sharing, model)", v.name, kv)
			}
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || f < 0 || f > 1 {
				return nil, fmt.Errorf("variant %q: %s=%q, want a share from 0 to 1", v.name, k, val)
			}
			switch k {
			case "cpu":
				v.cpuOnly = f
			case "sharing":
				v.sharing = f
			case "model":
				v.model = f
			default:
				return nil, fmt.Errorf("variant %q: unknown key %q (keys: cpu, sharing, model)", v.name, k)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

func (v variant) String() string {
	share := func(f float64) string {
		if f < 0 {
			return "trace"
		}
		return fmt.Sprintf("%.0f%%", 100*f)
	}
	return fmt.Sprintf("%s (CPU-only %s, GPU-sharing %s of GPU tasks, model-bound %s of GPU tasks, seed %d)", v.name, share(v.cpuOnly), share(v.sharing), share(v.model), v.seed)
}

// apply derives the variant's tasks from the trace's, in the trace's order of draws.
// Model-bound tasks require one GPU model, drawn in proportion to the GPUs of the
// models whose nodes could host the task when empty; a task no model can host keeps
// no requirement. Sharing tasks ask for one GPU.
func (v variant) apply(base []task, nodes []traceNode) []task {
	rng := rand.New(rand.NewSource(v.seed))
	var cpuPool, gpuPool []task
	for _, t := range base {
		if t.gpus == 0 {
			cpuPool = append(cpuPool, t)
		} else {
			gpuPool = append(gpuPool, t)
		}
	}
	out := make([]task, 0, len(base))
	for i := range base {
		var t task
		switch {
		case v.cpuOnly < 0:
			t = base[i]
		case rng.Float64() < v.cpuOnly && len(cpuPool) > 0:
			t = cpuPool[rng.Intn(len(cpuPool))]
		default:
			t = gpuPool[rng.Intn(len(gpuPool))]
		}
		t.name = fmt.Sprintf("%s-%05d", v.name, i)
		if t.gpus > 0 && v.sharing >= 0 {
			share := rng.Float64() < v.sharing
			switch {
			case share && !t.fractional:
				t.gpus, t.fractional = 1, true
			case !share && t.fractional:
				t.fractional = false // a whole GPU: the same request, no longer shared
			}
		}
		if t.gpus > 0 && v.model >= 0 {
			t.models = nil
			if rng.Float64() < v.model {
				if m := pickModel(rng, t, nodes); m != "" {
					t.models = []string{m}
				}
			}
		}
		out = append(out, t)
	}
	return out
}

// pickModel draws a GPU model whose nodes could host t when empty, in proportion to
// the model's GPUs; "" when none could.
func pickModel(rng *rand.Rand, t task, nodes []traceNode) string {
	gpus := map[string]int64{}
	for _, n := range nodes {
		if n.gpus >= t.gpus && n.cpuMilli >= t.cpuMilli && n.mib >= t.mib && n.model != "" {
			gpus[n.model] += n.gpus
		}
	}
	models := make([]string, 0, len(gpus))
	var total int64
	for m, g := range gpus {
		models = append(models, m)
		total += g
	}
	if total == 0 {
		return ""
	}
	sort.Strings(models)
	x := rng.Int63n(total)
	for _, m := range models {
		if x < gpus[m] {
			return m
		}
		x -= gpus[m]
	}
	return models[len(models)-1]
}
