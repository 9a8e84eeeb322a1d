package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kube-nexus/kubenexus/test/util/etabench"
)

// write saves the allocation curves (CSV and PNG) and a markdown summary under out,
// and prints the summary.
func write(out, nodesFile, podsFile string, totalGPUs int64, results []result) error {
	var curves [][]string
	for _, r := range results {
		for _, p := range r.curve {
			frag := ""
			if p.fragmented >= 0 {
				frag = strconv.FormatFloat(p.fragmented, 'f', 1, 64)
			}
			curves = append(curves, []string{r.arm, strconv.FormatFloat(p.arrived, 'f', 3, 64), strconv.FormatFloat(p.allocated, 'f', 3, 64), frag})
		}
	}
	if err := etabench.WriteCSV(filepath.Join(out, "allocation.csv"), []string{"arm", "arrived_gpu_demand_pct", "gpu_allocation_pct", "fragmented_gpus"}, curves); err != nil {
		return err
	}
	if err := writeFailures(filepath.Join(out, "failures.csv"), results); err != nil {
		return err
	}
	if err := writeNodes90(filepath.Join(out, "nodes-at-90.csv"), results); err != nil {
		return err
	}
	if err := plotCurves(filepath.Join(out, "allocation.png"), filepath.Base(podsFile), results); err != nil {
		return err
	}
	if err := plotFragmentation(filepath.Join(out, "fragmentation.png"), filepath.Base(podsFile), results); err != nil {
		return err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# Placement quality: %s\n\n", filepath.Base(podsFile))
	order := "creation (file) order"
	if shuffleSeed != 0 {
		order = fmt.Sprintf("an order shuffled with seed %d", shuffleSeed)
	}
	mode := "Tasks asking for a fraction of a GPU ask for a whole one in every arm (-whole-gpus: GPU sharing is not modelled)."
	if !wholeGPUs {
		mode = "GPUs are shared through DRA: nodes publish their GPUs as shareable ResourceSlice devices, a task asks for its gpu_milli share of one " +
			"(or for whole devices) through a ResourceClaim, and each arm allocates with kube-scheduler's DRA allocator; the trace is replayed again from its start if it runs out before the demand reaches the cluster's GPUs."
	}
	fmt.Fprintf(&b, "Nodes %s (%d GPUs), tasks %s in "+order+" until the GPUs asked for reach the cluster's; refused tasks are deleted, nothing else is. %s "+
		"Fragmented GPUs: the sum over nodes of the free GPU capacity a task drawn from the trace's GPU task mix could not use there (FGD's measure, Weng et al. ATC'23).\n\n", nodesFile, totalGPUs, podsFile, mode)
	fmt.Fprintf(&b, "| arm | tasks | failed (GPU) | unallocated GPUs at first GPU failure | fragmented GPUs at 90%% demand | GPU allocation at 80 / 90 / 100%% demand | largest 8-GPU gang at the end | pods/s |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		first := "none failed"
		if r.firstFailUnalloc >= 0 {
			first = fmt.Sprintf("%s (%s)", gpusText(r.firstFailUnalloc), r.firstFail)
		}
		frag := "-"
		if r.frag90 >= 0 {
			frag = fmt.Sprintf("%.1f", r.frag90)
		}
		rate := "-" // the model places in-process: no rate to compare
		if r.arm != fgdModel {
			rate = fmt.Sprintf("%.1f", r.podsPerSec)
		}
		fmt.Fprintf(&b, "| %s | %d | %d (%d) | %s | %s | %s / %s / %s | %d | %s |\n", r.arm, r.tasks, r.failed, r.gpuFailed, first, frag,
			pctOrDash(r.at80), pctOrDash(r.at90), pctOrDash(r.at100), r.largest8, rate)
	}
	if len(results) > 0 {
		fmt.Fprintf(&b, "\n%d of the tasks replayed asked for a fraction of a GPU.\n", results[0].fractionalTasks)
		if r := results[0]; !wholeGPUs && r.fractionalTasks > 0 && r.frag90 >= 0 {
			fmt.Fprintf(&b, "\nThe shares asked for by 90%% demand, packed with hindsight (first-fit decreasing, CPU and memory ignored), leave %.1f fragmented GPUs in the crumbs of partly used cards.\n", r.packedShares90)
		}
	}
	var base, packed, model, nexus *result
	for i := range results {
		switch results[i].arm {
		case "stock":
			base = &results[i]
		case "stock-mostallocated":
			packed = &results[i]
		case fgdModel:
			model = &results[i]
		case "kubenexus":
			nexus = &results[i]
		}
	}
	if nexus != nil {
		for _, other := range []*result{base, packed, model} {
			if other == nil {
				continue
			}
			if nexus.firstFailUnalloc >= 0 && other.firstFailUnalloc > 0 {
				fmt.Fprintf(&b, "\nkubenexus / %s, unallocated GPUs at first GPU failure: %.2f\n", other.arm, float64(nexus.firstFailUnalloc)/float64(other.firstFailUnalloc))
			}
			if nexus.frag90 >= 0 && other.frag90 > 0 {
				fmt.Fprintf(&b, "\nkubenexus / %s, fragmented GPUs at 90%% demand: %.2f\n", other.arm, nexus.frag90/other.frag90)
			}
		}
	}
	fmt.Fprintf(&b, "\nCurves: allocation.csv, allocation.png.\n")
	if err := os.WriteFile(filepath.Join(out, "summary.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	fmt.Printf("results in %s\n", out)
	return nil
}

func pctOrDash(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// plotCurves plots each arm's GPU allocation against the arrived GPU demand.
func plotCurves(path, title string, results []result) error {
	return plotAgainstDemand(path, "GPU allocation vs arrived GPU demand: "+title, "GPUs allocated, %", results,
		func(c point) (float64, bool) { return c.allocated, true })
}

// plotFragmentation plots each arm's fragmented GPUs (FGD's measure, taken once per
// percent of arrived demand) against the arrived GPU demand.
func plotFragmentation(path, title string, results []result) error {
	return plotAgainstDemand(path, "Fragmented GPUs vs arrived GPU demand: "+title, "fragmented GPUs (FGD)", results,
		func(c point) (float64, bool) { return c.fragmented, c.fragmented >= 0 })
}

// plotAgainstDemand draws one line per arm of y (where measured) over the arrived
// GPU demand.
func plotAgainstDemand(path, title, yLabel string, results []result, y func(point) (float64, bool)) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "arrived GPU demand, % of the cluster's GPUs"
	p.Y.Label.Text = yLabel
	colors := []color.Color{color.RGBA{R: 200, A: 255}, color.RGBA{G: 140, A: 255}, color.RGBA{B: 200, A: 255}}
	for i, r := range results {
		var pts plotter.XYs
		for _, c := range r.curve {
			if v, ok := y(c); ok {
				pts = append(pts, plotter.XY{X: c.arrived, Y: v})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = colors[i%len(colors)]
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(r.arm, line)
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// replot draws allocation.png and fragmentation.png again from the allocation.csv
// files given (several runs' arms in one plot), into out.
func replot(out, title string, csvs []string) error {
	var results []result
	index := map[string]int{}
	for _, path := range csvs {
		rows, err := etabench.ReadCSV(path)
		if err != nil {
			return err
		}
		for _, row := range rows {
			arm := row["arm"]
			i, ok := index[arm]
			if !ok {
				i = len(results)
				index[arm] = i
				results = append(results, result{arm: arm})
			}
			pt := point{fragmented: -1}
			var err error
			if pt.arrived, err = strconv.ParseFloat(row["arrived_gpu_demand_pct"], 64); err != nil {
				return fmt.Errorf("%s:%s: arrived_gpu_demand_pct: %w", path, row["#line"], err)
			}
			if pt.allocated, err = strconv.ParseFloat(row["gpu_allocation_pct"], 64); err != nil {
				return fmt.Errorf("%s:%s: gpu_allocation_pct: %w", path, row["#line"], err)
			}
			if v := row["fragmented_gpus"]; v != "" {
				if pt.fragmented, err = strconv.ParseFloat(v, 64); err != nil {
					return fmt.Errorf("%s:%s: fragmented_gpus: %w", path, row["#line"], err)
				}
			}
			results[i].curve = append(results[i].curve, pt)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := plotCurves(filepath.Join(out, "allocation.png"), title, results); err != nil {
		return err
	}
	return plotFragmentation(filepath.Join(out, "fragmentation.png"), title, results)
}

// writeVariants saves and prints one table over the variants: per arm, failed GPU
// tasks, unallocated GPUs at the first GPU failure and allocation at 100% demand, and
// whether kubenexus failed more GPU tasks than stock anywhere.
func writeVariants(out string, variants []variant, all map[string][]result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Placement quality over trace variants\n\n")
	fmt.Fprintf(&b, "| variant | arm | tasks | failed GPU tasks | unallocated GPUs at first GPU failure | GPU allocation at 100%% demand |\n|---|---|---|---|---|---|\n")
	var worse []string
	for _, v := range variants {
		failed := map[string]int{}
		for _, r := range all[v.name] {
			first := "none failed"
			if r.firstFailUnalloc >= 0 {
				first = gpusText(r.firstFailUnalloc)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s |\n", v, r.arm, r.tasks, r.gpuFailed, first, pctOrDash(r.at100))
			failed[r.arm] = r.gpuFailed
		}
		k, okK := failed["kubenexus"]
		s, okS := failed["stock"]
		if okK && okS && k > s {
			worse = append(worse, fmt.Sprintf("%s (kubenexus %d, stock %d)", v.name, k, s))
		}
	}
	if len(worse) > 0 {
		fmt.Fprintf(&b, "\nkubenexus failed more GPU tasks than stock on: %s\n", strings.Join(worse, "; "))
	} else {
		fmt.Fprintf(&b, "\nkubenexus failed no more GPU tasks than stock on any variant.\n")
	}
	fmt.Print(b.String())
	return os.WriteFile(filepath.Join(out, "variants.md"), []byte(b.String()), 0o644)
}

// writeNodes90 lists, per arm and GPU node, the free room and fragmented GPUs when
// the arrived demand reached 90%.
func writeNodes90(path string, results []result) error {
	var rows [][]string
	for _, r := range results {
		for _, row := range r.frag90Nodes {
			rows = append(rows, append([]string{r.arm}, row...))
		}
	}
	return etabench.WriteCSV(path, []string{"arm", "node", "gpus", "model", "whole_free_gpus", "partial_free_shares", "free_cpu_milli", "free_mib", "fragmented_gpus"}, rows)
}

// writeFailures lists every refused task of every arm with its shape and the
// scheduler's reason, to compare what each arm could not place.
func writeFailures(path string, results []result) error {
	var rows [][]string
	for _, r := range results {
		for _, x := range r.failures {
			t := x.task
			rows = append(rows, []string{r.arm, t.name, strconv.FormatInt(t.gpus, 10), strconv.FormatBool(t.fractional), strconv.FormatInt(t.cpuMilli, 10),
				strconv.FormatInt(t.mib, 10), strings.Join(t.models, "|"), gpusText(x.unallocatedMilli), x.message})
		}
	}
	return etabench.WriteCSV(path, []string{"arm", "task", "gpus", "fractional", "cpu_milli", "memory_mib", "models", "unallocated_gpus", "message"}, rows)
}
