// Command promql-names parses every query of a Grafana dashboard with Prometheus's
// own PromQL parser and prints the metric names they read, one per line; it fails,
// naming the panel, on a query that does not parse. The e2e checks those names
// against what kubenexus-manager and kubenexus-scheduler export.
//
// Usage: promql-names DASHBOARD.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// grafana replaces the variables Grafana expands before a query reaches Prometheus
// with values of their kind.
var grafana = strings.NewReplacer("$__rate_interval", "5m", "${__rate_interval}", "5m", "$__interval", "1m", "${__interval}", "1m", "$__range", "6h", "${__range}", "6h")

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: promql-names DASHBOARD.json")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var dash panel
	if err := json.Unmarshal(raw, &dash); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	names := map[string]bool{}
	failed := false
	queries := 0
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					continue
				}
				queries++
				expr, err := parser.NewParser(parser.Options{}).ParseExpr(grafana.Replace(t.Expr))
				if err != nil {
					fmt.Fprintf(os.Stderr, "panel %q, query %s: %v\n", p.Title, t.RefID, err)
					failed = true
					continue
				}
				parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
					vs, ok := n.(*parser.VectorSelector)
					if !ok {
						return nil
					}
					name := vs.Name
					for _, m := range vs.LabelMatchers {
						if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
							name = m.Value
						}
					}
					if name == "" {
						fmt.Fprintf(os.Stderr, "panel %q, query %s: a selector without a metric name (%s)\n", p.Title, t.RefID, vs)
						failed = true
						return nil
					}
					names[name] = true
					return nil
				})
			}
		}
	}
	walk(dash.Panels)
	if queries == 0 {
		fmt.Fprintf(os.Stderr, "%s: no queries\n", os.Args[1])
		failed = true
	}
	if failed {
		os.Exit(1)
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	fmt.Println(strings.Join(out, "\n"))
}
