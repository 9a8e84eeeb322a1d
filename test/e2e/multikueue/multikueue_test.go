package multikueue_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"

	"github.com/kube-nexus/kubenexus/controllers/multikueue"
	"github.com/kube-nexus/kubenexus/test/e2e/demo"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// TestMultiKueueDispatch: one manager cluster and two workers (each etcd,
// kube-apiserver, kube-controller-manager, kwok nodes, KubeNexus and Kueue v0.17's
// controller-manager), MultiKueue on. 40 gangs, two of them too big for any rack of
// the worker north, are submitted as Jobs to the manager cluster, once with Kueue's
// own dispatcher (AllAtOnce: every worker gets every Workload, the first to admit
// keeps it) and once with KubeNexus's. With KubeNexus's, every gang is admitted on a
// worker where it is bound whole in one rack, no worker admits a Workload that then
// runs elsewhere, and nothing is preempted.
func TestMultiKueueDispatch(t *testing.T) {
	root := testenv.RepoRoot()
	bin := filepath.Join(root, "bin")
	testenv.RequireBinaries(t, bin, "`make test-multikueue` (make build; hack/build-tools.sh etcd kube-apiserver kube-controller-manager kwok helm kueue)",
		"kubenexus-manager", "kubenexus-scheduler", "k8s/etcd", "k8s/kube-apiserver", "k8s/kube-controller-manager", "k8s/kwok", "k8s/helm", "k8s/kueue")
	const gangs, bigs = 40, 2
	var arms []*demo.MultiKueueArm
	for _, dispatcher := range []string{kueueconfig.MultiKueueDispatcherModeAllAtOnce, multikueue.DispatcherName} {
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
		dir := filepath.Join(testenv.LogDir(t), strings.ReplaceAll(dispatcher, "/", "_"))
		r, err := demo.RunMultiKueueArm(ctx, demo.Options{Root: root, Bin: bin, Dir: dir, Log: testenv.LogWriter{T: t}}, dispatcher, gangs, bigs, 3*time.Minute)
		cancel()
		arms = append(arms, r)
		if err != nil {
			var b strings.Builder
			demo.PrintMultiKueue(&b, arms...)
			t.Log("\n" + b.String())
			for _, c := range []string{"manager", "north", "south"} {
				t.Log(c + ":\n" + demo.LogTails(filepath.Join(dir, c), 2000, "kubenexus-manager", "kubenexus-scheduler", "kueue"))
			}
			t.Fatalf("%s: %v", dispatcher, err)
		}
	}
	var b strings.Builder
	demo.PrintMultiKueue(&b, arms...)
	t.Log("\n" + b.String())
	if out := os.Getenv("MULTIKUEUE_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	kn := arms[1]
	if kn.WholeIn != gangs || len(kn.Stuck) > 0 || len(kn.Unadmitted) > 0 {
		t.Errorf("KubeNexus's dispatch: %d of %d gangs bound whole on their worker; stuck %v; not admitted %v", kn.WholeIn, gangs, kn.Stuck, kn.Unadmitted)
	}
	if kn.Withdrawn != 0 || kn.Preempted != 0 {
		t.Errorf("KubeNexus's dispatch: %d admissions withdrawn, %d Workloads preempted; want none", kn.Withdrawn, kn.Preempted)
	}
	// The big gangs fit only on south.
	if kn.PerCluster["south"] < bigs {
		t.Errorf("KubeNexus's dispatch: %d gangs on south, want at least the %d big ones", kn.PerCluster["south"], bigs)
	}
}
