// Command docscheck fails when a Markdown file of the repository names something
// that does not exist: a relative link (file, or a heading of a Markdown file), a
// make target, a repository path in code, a chart values key, or a command-line
// flag of the binaries and programs the repository builds. `make verify` runs it,
// so that the docs keep describing what is there.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/yaml"
)

func main() {
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	c, err := load(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docscheck:", err)
		os.Exit(2)
	}
	problems, err := c.run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "docscheck:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "docscheck: %d reference(s) to things that do not exist\n", len(problems))
		os.Exit(1)
	}
	fmt.Println("docscheck: every link, make target, path, values key and flag named in the docs exists")
}

// checker holds what the docs may name.
type checker struct {
	root    string
	docs    []string
	targets map[string]bool
	values  map[string]any
	flags   map[string]bool
}

// topDirs are the repository's top-level folders: a code span starting with one of
// them is a path.
var topDirs = []string{"api/", "bundle/", "charts/", "cmd/", "config/", "controllers/", "hack/", "scheduler/", "test/", "webhooks/", ".ci/"}

// valuesRoots are the chart values' top-level keys.
func (c *checker) valuesRoot(key string) bool {
	_, ok := c.values[key]
	return ok
}

func load(root string) (*checker, error) {
	c := &checker{root: root, targets: map[string]bool{}, flags: map[string]bool{}}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") && name != ".ci" || name == "bin" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			c.docs = append(c.docs, path)
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range flagDef.FindAllStringSubmatch(string(src), -1) {
				c.flags[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(c.docs)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	for _, m := range makeTarget.FindAllStringSubmatch(string(mk), -1) {
		c.targets[m[1]] = true
	}
	raw, err := os.ReadFile(filepath.Join(root, "charts", "kubenexus", "values.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(raw, &c.values); err != nil {
		return nil, fmt.Errorf("charts/kubenexus/values.yaml: %w", err)
	}
	// kubenexus-scheduler is kube-scheduler's command: its flags are upstream's.
	cmd := app.NewSchedulerCommand()
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.PersistentFlags()} {
		fs.VisitAll(func(f *pflag.Flag) { c.flags[f.Name] = true })
	}
	// The manager's logging flags (controller-runtime's zap options), and the flags
	// of the other programs the docs tell how KubeNexus is run beside.
	for _, f := range []string{"zap-devel", "zap-encoder", "zap-log-level", "zap-stacktrace-level", "zap-time-encoding"} {
		c.flags[f] = true
	}
	for f := range foreignFlags {
		c.flags[f] = true
	}
	// The scripts' options, and what they pass to the programs they run.
	scripts, _ := filepath.Glob(filepath.Join(root, "hack", "*.sh"))
	for _, s := range scripts {
		src, err := os.ReadFile(s)
		if err != nil {
			return nil, err
		}
		for _, m := range scriptFlag.FindAllStringSubmatch(string(src), -1) {
			c.flags[m[1]] = true
		}
	}
	return c, nil
}

// foreignFlags are flags of programs KubeNexus runs beside, named in the docs, with
// the program that defines each.
var foreignFlags = map[string]string{
	"gang-scheduler-name":       "Kubeflow training-operator",
	"runtime-config":            "kube-apiserver",
	"enable-aggregator-routing": "kube-apiserver",
	"unsafe-no-fsync":           "etcd",
	"physcpubind":               "numactl",
}

var (
	// flagDef finds flag names defined with the flag or pflag packages.
	flagDef    = regexp.MustCompile(`\.(?:String|Bool|Int|Int32|Int64|Uint|Float64|Duration|StringSlice|StringArray|Func|Var|TextVar)(?:Var|VarP|P)?\((?:[^,()"]+,\s*)?"([a-z][a-z0-9-]*)"`)
	makeTarget = regexp.MustCompile(`(?m)^([a-zA-Z0-9][a-zA-Z0-9_-]*):(?:[^=]|$)`)
	link       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan   = regexp.MustCompile("`([^`\n]+)`")
	makeCall   = regexp.MustCompile(`(?:^|\s|\$\(MAKE\)\s)make\s+([a-z][a-z0-9-]*)`)
	flagUse    = regexp.MustCompile(`^--([a-z][a-z0-9-]+)`)
	scriptFlag = regexp.MustCompile(`(?:^|[\s="'\[(])--([a-z][a-z0-9-]+)`)
	goIdent    = regexp.MustCompile(`^(.+)\.([A-Z][A-Za-z0-9_]*)$`)
	valuesKey  = regexp.MustCompile(`^[a-zA-Z]+(\.[a-zA-Z][a-zA-Z0-9]*)+$`)
	heading    = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

func (c *checker) run() ([]string, error) {
	var problems []string
	for _, doc := range c.docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(c.root, doc)
		report := func(line int, format string, args ...any) {
			problems = append(problems, fmt.Sprintf("%s:%d: %s", rel, line, fmt.Sprintf(format, args...)))
		}
		inFence := false
		for i, line := range strings.Split(string(raw), "\n") {
			n := i + 1
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			var code []string
			if inFence {
				code = []string{line}
			} else {
				for _, m := range link.FindAllStringSubmatch(line, -1) {
					if why := c.checkLink(doc, m[1]); why != "" {
						report(n, "link %s: %s", m[1], why)
					}
				}
				for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
					code = append(code, m[1])
				}
			}
			for _, span := range code {
				for _, m := range makeCall.FindAllStringSubmatch(span, -1) {
					if !c.targets[m[1]] {
						report(n, "make target %q is not in the Makefile", m[1])
					}
				}
				if inFence {
					continue
				}
				// A code span that is a flag (`--reservation-resync`, `--v=2`).
				for _, m := range flagUse.FindAllStringSubmatch(span, -1) {
					if !c.flags[m[1]] {
						report(n, "flag --%s is defined by no binary, program or script of the repository", m[1])
					}
				}
				if why := c.checkPath(span); why != "" {
					report(n, "path %s: %s", span, why)
				}
				if filepath.Base(doc) == "README.md" && strings.HasSuffix(filepath.Dir(doc), filepath.Join("charts", "kubenexus")) {
					if why := c.checkValuesKey(span); why != "" {
						report(n, "values key %s: %s", span, why)
					}
				}
			}
		}
	}
	return problems, nil
}

// checkLink says why a relative link does not resolve ("" when it does).
func (c *checker) checkLink(doc, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := doc
	if path != "" {
		file = filepath.Join(filepath.Dir(doc), path)
		if _, err := os.Stat(file); err != nil {
			return "no such file or directory"
		}
	}
	if anchor == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(raw))[anchor] {
		return fmt.Sprintf("no heading #%s in %s", anchor, filepath.Base(file))
	}
	return ""
}

// anchors are the heading anchors GitHub gives a Markdown file.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if k := seen[s]; k > 0 {
			out[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped, spaces as
// hyphens.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkPath says why a code span naming a repository path does not exist.
func (c *checker) checkPath(span string) string {
	p := strings.TrimSpace(span)
	matched := false
	for _, d := range topDirs {
		matched = matched || strings.HasPrefix(p, d)
	}
	if !matched || strings.ContainsAny(p, " <>*{}$…|,()[]'\"=") {
		return ""
	}
	p = strings.TrimSuffix(strings.SplitN(p, ":", 2)[0], "/")
	p = strings.SplitN(p, "#", 2)[0]
	if m := goIdent.FindStringSubmatch(p); m != nil {
		// A Go identifier in a package of the repository: api/workload.Classify.
		return c.checkIdent(m[1], m[2])
	}
	if _, err := os.Stat(filepath.Join(c.root, p)); err != nil {
		return "does not exist"
	}
	return ""
}

// checkIdent says why a package directory does not declare ident.
func (c *checker) checkIdent(dir, ident string) string {
	files, _ := filepath.Glob(filepath.Join(c.root, dir, "*.go"))
	if len(files) == 0 {
		return "no Go package " + dir
	}
	decl := regexp.MustCompile(`(?m)^(?:func(?:\s*\([^)]*\))?|type|var|const)\s+` + ident + `\b|^\s+` + ident + `\s+(?:=|[A-Za-z*\[])`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err == nil && decl.Match(src) {
			return ""
		}
	}
	return fmt.Sprintf("package %s declares no %s", dir, ident)
}

// checkValuesKey says why a code span that looks like a chart values key
// (manager.replicas) is not one.
func (c *checker) checkValuesKey(span string) string {
	if !valuesKey.MatchString(span) {
		return ""
	}
	parts := strings.Split(span, ".")
	if !c.valuesRoot(parts[0]) {
		return ""
	}
	var cur any = c.values
	for i, k := range parts {
		m, ok := cur.(map[string]any)
		if !ok || len(m) == 0 {
			// A key under a free-form map (nodeSelector: {}, resources) or a list.
			return ""
		}
		next, ok := m[k]
		if !ok {
			return fmt.Sprintf("charts/kubenexus/values.yaml has no %s", strings.Join(parts[:i+1], "."))
		}
		cur = next
	}
	return ""
}
