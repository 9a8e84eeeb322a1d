package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// apiCalls is what kube-apiserver counted over one run, per kind of request
// ("POST pods/binding") and per kind of watch event sent ("watch Pod"), from its
// apiserver_request_total and apiserver_watch_events_total: it tells what a
// scheduler asks of the API server besides the bindings the null binder makes.
// Everything the API server served in the window counts (the bench's own metrics
// read too, one request per run).
type apiCalls map[string]float64

// scrapeAPICalls reads the counters from kube-apiserver's /metrics.
func scrapeAPICalls(ctx context.Context, cs kubernetes.Interface) (apiCalls, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := apiCalls{}
	for _, line := range strings.Split(string(body), "\n") {
		var key string
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			l := labelsOf(line)
			if l["verb"] == "WATCH" || l["verb"] == "CONNECT" {
				continue // long-running: counted when they start, not per item
			}
			res := l["resource"]
			if l["subresource"] != "" {
				res += "/" + l["subresource"]
			}
			key = l["verb"] + " " + res
		case strings.HasPrefix(line, "apiserver_watch_events_total{"):
			key = "watch event " + labelsOf(line)["resource"]
		default:
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			out[key] += v
		}
	}
	return out, nil
}

// labelsOf parses the label set of one exposition line (values without escaped
// quotes, as the API server's are).
func labelsOf(line string) map[string]string {
	out := map[string]string{}
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if open < 0 || end < open {
		return out
	}
	for _, kv := range strings.Split(line[open+1:end], `",`) {
		k, v, ok := strings.Cut(kv, `="`)
		if ok {
			out[k] = strings.TrimSuffix(v, `"`)
		}
	}
	return out
}

// since is the counts from before to after, per pod.
func (after apiCalls) since(before apiCalls, pods int) apiCalls {
	out := apiCalls{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d / float64(pods)
		}
	}
	return out
}

// reportAPICalls prints, per kind, the median per pod of each arm, for the kinds
// any arm made at least 0.05 times per pod.
func reportAPICalls(by map[string][]result, present []string) {
	kinds := map[string]bool{}
	for _, a := range present {
		for _, r := range by[a] {
			for k, v := range r.api {
				if v >= 0.05 {
					kinds[k] = true
				}
			}
		}
	}
	if len(kinds) == 0 {
		return
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Println("kube-apiserver requests and watch events per pod, process start→last binding (apiserver_request_total, apiserver_watch_events_total), medians:")
	for _, k := range names {
		fmt.Printf("  %-30s", k)
		for _, a := range present {
			var vs []float64
			for _, r := range by[a] {
				if r.api == nil {
					vs = append(vs, math.NaN())
					continue
				}
				vs = append(vs, r.api[k])
			}
			fmt.Printf("  %-22s", f2(summarize(vs).med))
		}
		fmt.Println()
	}
}
