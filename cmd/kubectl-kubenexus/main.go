// Command kubectl-kubenexus is the kubectl plugin of KubeNexus: `kubectl kubenexus
// explain` says, layer by layer, why a workload waits and when it could start;
// `kubectl kubenexus whatif -f job.yaml` says whether a job would be placed now,
// where, or when, without creating anything. It needs only read access.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/kueuecompat"
	v1alpha1 "github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/cmd/internal/version"
	"github.com/kube-nexus/kubenexus/cmd/kubectl-kubenexus/explain"
)

func main() {
	if err := command(os.Stdout).Execute(); err != nil {
		os.Exit(1)
	}
}

func command(out io.Writer) *cobra.Command {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{}
	root := &cobra.Command{
		Use:           "kubectl-kubenexus",
		Short:         "Why a workload waits under KubeNexus, and when it could run",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.PersistentFlags().StringVar(&loading.ExplicitPath, "kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	root.PersistentFlags().StringVar(&overrides.CurrentContext, "context", "", "the kubeconfig context to use")
	root.PersistentFlags().StringVarP(&overrides.Context.Namespace, "namespace", "n", "", "the namespace (default: the context's)")
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, overrides)

	newExplainer := func() (*explain.Explainer, string, error) {
		rest, err := cfg.ClientConfig()
		if err != nil {
			return nil, "", err
		}
		ns, _, err := cfg.Namespace()
		if err != nil {
			return nil, "", err
		}
		c, err := client.New(rest, client.Options{Scheme: scheme()})
		if err != nil {
			return nil, "", err
		}
		// Kueue's objects in the version the cluster serves (v1beta1 before Kueue 0.15).
		served, _ := kueuecompat.Served(c.RESTMapper())
		return &explain.Explainer{Client: kueuecompat.Client(c, served)}, ns, nil
	}

	root.AddCommand(&cobra.Command{
		Use:   "explain KIND/NAME | KIND NAME",
		Short: "Say, layer by layer, why a pod, PodGroup, framework job or Kueue Workload waits, and when it could start",
		Long: "explain reads the cluster (list access only) and prints one line per layer a workload passes —\n" +
			"admission, queue, gang, tier, topology, capacity, preemption, start — with its verdict and, where one exists,\n" +
			"what would unblock it. KIND is pod, podgroup, workload (Kueue), job, pytorchjob, tfjob, mpijob,\n" +
			"xgboostjob, jobset, raycluster, rayjob, leaderworkerset, sparkapplication, trainjob, deployment or statefulset.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := target(args)
			if err != nil {
				return err
			}
			e, ns, err := newExplainer()
			if err != nil {
				return err
			}
			r, err := e.Explain(cmd.Context(), ns, kind, name)
			if err != nil {
				return err
			}
			return r.Write(out)
		},
	})

	root.AddCommand(whatifCommand(out, newExplainer))

	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		Run:   func(*cobra.Command, []string) { fmt.Fprintln(out, version.String("kubectl-kubenexus")) },
	})
	root.SetContext(context.Background())
	return root
}

// target reads "kind/name" or "kind name".
func target(args []string) (kind, name string, err error) {
	if len(args) == 2 {
		return args[0], args[1], nil
	}
	kind, name, ok := strings.Cut(args[0], "/")
	if !ok || kind == "" || name == "" {
		return "", "", fmt.Errorf("%q: name the object as KIND/NAME or KIND NAME, e.g. pytorchjob/llama", args[0])
	}
	return kind, name, nil
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(kueuecompat.AddToScheme(s))
	utilruntime.Must(nrtv1alpha2.AddToScheme(s))
	return s
}

// whatifCommand is the whatif subcommand; newExplainer reads the kubeconfig.
func whatifCommand(out io.Writer, newExplainer func() (*explain.Explainer, string, error)) *cobra.Command {
	var file string
	whatif := &cobra.Command{
		Use:   "whatif -f FILE",
		Short: "Say whether the jobs in FILE would be placed now, where, or the earliest time they could start; nothing is created",
		Long: "whatif reads the objects of FILE (YAML or JSON, - for standard input) and, for each, answers whether all\n" +
			"its pods would be placed now, all together, in the topology domain they require, on nodes their tier allows;\n" +
			"if not, why, and the earliest time they could start if running pods end at their runtime bounds\n" +
			"(activeDeadlineSeconds, kueue.x-k8s.io/max-exec-time-seconds), or unknown. A job for a Kueue LocalQueue is checked\n" +
			"against its ClusterQueue's quota (nominal less reserved, flavor by flavor; borrowing in a cohort is not counted).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("-f FILE is required (- for standard input)")
			}
			var in io.Reader = os.Stdin
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			objs, err := explain.Decode(in)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			e, ns, err := newExplainer()
			if err != nil {
				return err
			}
			r, err := e.WhatIf(cmd.Context(), ns, objs)
			if err != nil {
				return err
			}
			return r.Write(out)
		},
	}
	whatif.Flags().StringVarP(&file, "filename", "f", "", "the objects to try (YAML or JSON; - for standard input)")
	return whatif
}
