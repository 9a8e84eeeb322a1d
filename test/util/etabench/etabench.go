// Package etabench is what the estimated-start accuracy harnesses share: a seeded
// stream of gangs drawn from the trace's whole-GPU tasks, the record of each gang's
// estimates and real start, and the report of the errors by queue depth.
package etabench

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Fleet is the nodes the gangs run on: racks of 8-GPU-or-so nodes.
type Fleet struct {
	Racks, NodesPerRack int
	NodeGPUs            int64
}

// GPUs is the fleet's GPU count.
func (f Fleet) GPUs() int64 { return int64(f.Racks*f.NodesPerRack) * f.NodeGPUs }

// The stream's runtimes, and the shortest wait whose error is counted.
const (
	MinRuntime = 10 * time.Second
	MaxRuntime = 120 * time.Second
	// MinWait is the shortest real wait whose error is counted relative to it: a
	// gang that starts at once has no wait to be wrong about.
	MinWait = 5 * time.Second
)

// Gang is one gang of the stream.
type Gang struct {
	Name          string
	Size          int
	CPUMilli, MiB int64
	GPUs          int64
	Rack          bool // must share one rack
	Runtime       time.Duration
	Arrive        time.Duration // after the stream's start
}

// Stream draws n gangs from the trace's whole-GPU tasks with seed: each gang's
// members have one task's shape; the task's runtime (deletion − scheduled) becomes
// 10–120 s by its rank among them; the gang size is 1, 2 or 4 (at most one rack's
// GPUs); a third of the gangs of more than one member require one rack; arrivals are
// a Poisson stream of load times the GPU-seconds capacity (GPUs of it).
func Stream(podsFile string, n int, seed int64, fleet Fleet, capacity int64, load float64) ([]Gang, error) {
	rows, err := ReadCSV(podsFile)
	if err != nil {
		return nil, err
	}
	type src struct {
		cpu, mib, gpus int64
		dur            int64
	}
	var tasks []src
	for _, row := range rows {
		var t src
		var milli, created, deleted, scheduled int64
		for col, v := range map[string]*int64{"cpu_milli": &t.cpu, "memory_mib": &t.mib, "num_gpu": &t.gpus, "gpu_milli": &milli,
			"creation_time": &created, "deletion_time": &deleted, "scheduled_time": &scheduled} {
			if *v, err = Number(podsFile, row, col); err != nil {
				return nil, err
			}
		}
		start := max(scheduled, created)
		if t.gpus < 1 || t.gpus > fleet.NodeGPUs || milli != 1000 || deleted <= start {
			continue
		}
		t.dur = deleted - start
		tasks = append(tasks, t)
	}
	if len(tasks) < n {
		return nil, fmt.Errorf("%s: %d whole-GPU tasks with a runtime, %d gangs asked for", podsFile, len(tasks), n)
	}
	// Runtimes by rank: the shortest task 10 s, the longest 120 s.
	durs := make([]int64, len(tasks))
	for i, t := range tasks {
		durs[i] = t.dur
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	rankOf := func(d int64) float64 {
		return float64(sort.Search(len(durs), func(i int) bool { return durs[i] >= d })) / float64(len(durs)-1)
	}
	rng := rand.New(rand.NewSource(seed))
	rng.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	out := make([]Gang, n)
	var work float64 // GPU-seconds
	for i := range out {
		t := tasks[i]
		size := []int{1, 1, 2, 2, 4}[rng.Intn(5)]
		for int64(size)*t.gpus > int64(fleet.NodesPerRack)*fleet.NodeGPUs {
			size /= 2
		}
		g := Gang{Name: fmt.Sprintf("eta-%03d", i), Size: size, CPUMilli: min(t.cpu, 16000*t.gpus), MiB: min(t.mib, 131072*t.gpus), GPUs: t.gpus,
			Rack:    size > 1 && rng.Intn(3) == 0,
			Runtime: MinRuntime + time.Duration(rankOf(t.dur)*float64(MaxRuntime-MinRuntime)).Round(time.Second)}
		work += float64(int64(size)*t.gpus) * g.Runtime.Seconds()
		out[i] = g
	}
	mean := work / (float64(capacity) * load) / float64(n) // seconds between arrivals
	var at float64
	for i := range out {
		out[i].Arrive = time.Duration(at * float64(time.Second))
		at += rng.ExpFloat64() * mean
	}
	return out, nil
}

// Record is what a harness saw of one gang: when it was submitted, how many gangs
// waited then, the estimate of each arm read at once, and when its last member was
// bound (zero: never).
type Record struct {
	Gang      Gang
	Submitted time.Time
	Depth     int
	Estimates []Estimate
	Started   time.Time
}

// Estimate is one arm's estimate (OK false: none).
type Estimate struct {
	OK bool
	At time.Time
}

// LastBound is when the gang's last member was bound, by the bind times of its pods
// (named <gang>-<i>); zero when not all are.
func LastBound(bound map[string]time.Time, g Gang) time.Time {
	var last time.Time
	for i := range g.Size {
		t, ok := bound[fmt.Sprintf("%s-%d", g.Name, i)]
		if !ok {
			return time.Time{}
		}
		if t.After(last) {
			last = t
		}
	}
	return last
}

// buckets are the queue depths the report groups gangs by.
var buckets = []struct {
	name     string
	min, max int
}{{"0", 0, 0}, {"1–4", 1, 4}, {"5–14", 5, 14}, {"15+", 15, math.MaxInt}}

// relErr is |estimate − start| / wait; +Inf when there is no estimate.
func relErr(e Estimate, start, submitted time.Time) float64 {
	if !e.OK {
		return math.Inf(1)
	}
	return math.Abs(e.At.Sub(start).Seconds()) / start.Sub(submitted).Seconds()
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(math.Ceil(q*float64(len(s))))-1]
}

// Write writes eta.csv (every gang) and eta.md (the error table by queue depth,
// one median and p90 per arm) under out, prints the table and returns it; intro
// opens the report, arms name the estimates.
func Write(out, intro string, arms []string, records []*Record) (string, error) {
	var rows [][]string
	byBucket := make([][][]float64, len(buckets))
	for b := range byBucket {
		byBucket[b] = make([][]float64, len(arms))
	}
	all := make([][]float64, len(arms))
	atOnce := 0
	for _, r := range records {
		wait := r.Started.Sub(r.Submitted)
		row := []string{r.Gang.Name, fmt.Sprint(r.Gang.Size), fmt.Sprint(r.Gang.GPUs), fmt.Sprint(r.Gang.Rack), fmt.Sprint(r.Gang.Runtime.Seconds()),
			fmt.Sprint(r.Depth), fmt.Sprintf("%.1f", wait.Seconds())}
		for _, e := range r.Estimates {
			row = append(row, offset(e, r.Submitted))
		}
		rows = append(rows, row)
		if wait < MinWait {
			atOnce++
			continue
		}
		for a := range arms {
			e := relErr(r.Estimates[a], r.Started, r.Submitted)
			all[a] = append(all[a], e)
			for b, bk := range buckets {
				if r.Depth >= bk.min && r.Depth <= bk.max {
					byBucket[b][a] = append(byBucket[b][a], e)
				}
			}
		}
	}
	header := []string{"gang", "members", "gpus_each", "rack", "runtime_s", "depth", "wait_s"}
	for _, a := range arms {
		header = append(header, "estimate_"+strings.ReplaceAll(a, " ", "_")+"_s")
	}
	if err := WriteCSV(filepath.Join(out, "eta.csv"), header, rows); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s; %d started within %v of submission (not counted).\n"+
		"Error: |estimate − real start| / real wait, read when the gang was submitted; a gang with no estimate counts as an infinite error.\n\n",
		intro, atOnce, MinWait)
	b.WriteString("| queue depth at submission | gangs |")
	sep := "|---|---|"
	for _, a := range arms {
		fmt.Fprintf(&b, " median, %s | p90, %s |", a, a)
		sep += "---|---|"
	}
	b.WriteString("\n" + sep + "\n")
	line := func(name string, errs [][]float64) {
		fmt.Fprintf(&b, "| %s | %d |", name, len(errs[0]))
		for _, e := range errs {
			fmt.Fprintf(&b, " %s | %s |", pctErr(quantile(e, 0.5)), pctErr(quantile(e, 0.9)))
		}
		b.WriteString("\n")
	}
	for i, bk := range buckets {
		line(bk.name, byBucket[i])
	}
	line("all", all)
	fmt.Print(b.String())
	return b.String(), os.WriteFile(filepath.Join(out, "eta.md"), []byte(b.String()), 0o644)
}

// offset is the estimate in seconds after submission ("unknown" without one).
func offset(e Estimate, submitted time.Time) string {
	if !e.OK {
		return "unknown"
	}
	return fmt.Sprintf("%.1f", e.At.Sub(submitted).Seconds())
}

func pctErr(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "no estimate"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

// ReadCSV reads a CSV with a header into maps from column name to value.
func ReadCSV(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := csv.NewReader(f)
	header, err := rd.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading the header: %w", path, err)
	}
	var rows []map[string]string
	for line := 2; ; line++ {
		rec, err := rd.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		row := map[string]string{"#line": strconv.Itoa(line)}
		for i, h := range header {
			if i < len(rec) {
				row[h] = rec[i]
			}
		}
		rows = append(rows, row)
	}
}

// Number reads an integer column, naming the file, line and column when it is not one.
func Number(path string, row map[string]string, col string) (int64, error) {
	v := row[col]
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s:%s: column %s is %q, want a non-negative integer", path, row["#line"], col, v)
	}
	return n, nil
}

// WriteCSV writes a header and rows to path.
func WriteCSV(path string, header []string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows) // flushes; the error is w.Error's
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
