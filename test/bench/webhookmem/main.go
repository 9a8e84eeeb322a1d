// Command webhookmem measures the peak memory of the real kubenexus-manager binary
// while its webhook server receives many maximum-size AdmissionReviews at once.
//
// It starts envtest's etcd and kube-apiserver (with the KubeNexus CRDs), runs
// bin/kubenexus-manager as a separate process with a self-signed serving
// certificate, and POSTs -concurrency AdmissionReviews at once straight to the
// webhook port over HTTPS, one wave per phase:
//
//	pod:        CREATE reviews of pod.MaxRequestBytes to the pod path (in scope: mutated)
//	podgroup:   UPDATE reviews (object + oldObject) of the validating limit to the PodGroup path
//	oversized:  7 MiB reviews (controller-runtime's own limit) to the PodGroup path
//
// For each phase it prints the response codes, the highest VmRSS sampled during the
// phase, the process's VmHWM so far and VmRSS a few seconds after the phase. The
// figures are printed, never asserted: they depend on the machine. With -compare
// the same phases run against a second manager whose in-flight budget is
// effectively unbounded (1 TiB), to show what the budget buys.
//
// Run it with `make bench-webhook`.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-nexus/kubenexus/api/v1alpha1"
	"github.com/kube-nexus/kubenexus/controllers"
	"github.com/kube-nexus/kubenexus/test/util/adminkube"
	"github.com/kube-nexus/kubenexus/test/util/testenv"
	"github.com/kube-nexus/kubenexus/webhooks"
	"github.com/kube-nexus/kubenexus/webhooks/pod"
)

const (
	namespace    = "kubenexus-system"
	benchNS      = "webhookmem"
	podGroupPath = "/validate-scheduling-kubenexus-io-v1alpha1-podgroup"
	// oversizedBytes is controller-runtime's own request limit, the size of the
	// reviews that took an unbounded manager to 795 MiB.
	oversizedBytes = 7 << 20
)

func main() {
	binDir := flag.String("bin", "bin", "directory holding kubenexus-manager")
	concurrency := flag.Int("concurrency", 64, "AdmissionReviews sent at once in each phase")
	inflight := flag.Int64("inflight", webhooks.DefaultMaxInflightBytes, "--webhook-max-inflight-bytes of the manager under test")
	timeout := flag.Duration("timeout", 5*time.Second, "?timeout= sent with each review, as the API server does (the webhook configurations say 5s)")
	compare := flag.Bool("compare", true, "also run the phases against a manager with an effectively unbounded budget (1 TiB)")
	settle := flag.Duration("settle", 5*time.Second, "idle time after each phase before RSS is read again")
	flag.Parse()
	if err := run(*binDir, *concurrency, *inflight, *timeout, *compare, *settle); err != nil {
		fmt.Fprintln(os.Stderr, "bench-webhook:", err)
		os.Exit(1)
	}
}

type phase struct {
	name, path string
	body       []byte
}

type phaseResult struct {
	name                  string
	bytes                 int
	codes                 map[int]int
	errs                  int
	wall                  time.Duration
	maxRSS, hwm, rssAfter int // KiB
	sampleMsg             string
}

func run(binDir string, concurrency int, inflight int64, timeout time.Duration, compare bool, settle time.Duration) error {
	ctx := context.Background()
	if err := testenv.RequireAssets(); err != nil {
		return err
	}
	manager, err := filepath.Abs(filepath.Join(binDir, "kubenexus-manager"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(manager); err != nil {
		return fmt.Errorf("%w (build it with `go build -o %s ./cmd/manager`)", err, manager)
	}
	plane, err := adminkube.Start([]string{testenv.CRDPath()}, "kubenexus-webhookmem-", "bench")
	if err != nil {
		return err
	}
	defer plane.Stop()
	cfg, dir, kcPath := plane.Config, plane.Dir, plane.Kubeconfig
	certDir := filepath.Join(dir, "certs")
	if err := writeSelfSigned(certDir); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		return err
	}
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		{ObjectMeta: metav1.ObjectMeta{Name: benchNS, Labels: map[string]string{v1alpha1.LabelNamespaceEnabled: "true"}}},
	} {
		if err := c.Create(ctx, ns); err != nil {
			return err
		}
	}

	validatingMax := int64(webhooks.ValidatingMaxRequestBytes)
	podBody, err := podReview(pod.MaxRequestBytes - 1024)
	if err != nil {
		return err
	}
	pgBody, err := podGroupReview(int(validatingMax) - 1024)
	if err != nil {
		return err
	}
	bigBody, err := podGroupReview(oversizedBytes)
	if err != nil {
		return err
	}
	phases := []phase{
		{"pod (CREATE, at the pod limit)", pod.Path, podBody},
		{"podgroup (UPDATE, at the validating limit)", podGroupPath, pgBody},
		{"oversized (7 MiB to the podgroup path)", podGroupPath, bigBody},
	}

	fmt.Printf("kubenexus-manager webhook memory: %d concurrent AdmissionReviews per phase, HTTP/1.1, ?timeout=%s\n", concurrency, timeout)
	fmt.Printf("limits: pod path %d bytes, validating paths %d bytes; wait for a share at most %s (capped at half of ?timeout=)\n\n",
		pod.MaxRequestBytes, validatingMax, webhooks.DefaultMaxWait)
	budgets := []int64{inflight}
	if compare {
		budgets = append(budgets, 1<<40)
	}
	for _, b := range budgets {
		if err := runManager(manager, kcPath, certDir, dir, b, concurrency, timeout, settle, phases); err != nil {
			return err
		}
	}
	return nil
}

func runManager(bin, kcPath, certDir, dir string, budget int64, concurrency int, timeout, settle time.Duration, phases []phase) error {
	ports, err := testenv.FreePorts(2)
	if err != nil {
		return err
	}
	webhookPort, probePort := ports[0], ports[1]
	logPath := filepath.Join(dir, fmt.Sprintf("manager-%d.log", budget))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(bin,
		"--kubeconfig", kcPath,
		"--cert-rotation=false", "--webhook-cert-dir", certDir,
		"--namespace", namespace, "--scheduler-image", "x",
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probePort),
		"--webhook-port", strconv.Itoa(webhookPort),
		"--webhook-max-inflight-bytes", strconv.FormatInt(budget, 10),
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited: //nolint:errcheck // it stopped: how is not the bench's concern
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited //nolint:errcheck // killed: its exit error says nothing
		}
	}()
	pid := cmd.Process.Pid

	label := fmt.Sprintf("budget %d bytes (%s)", budget, human(budget))
	if budget >= 1<<40 {
		label = "budget 1 TiB (effectively unbounded; body limits still apply)"
	}
	fmt.Printf("== manager pid %d, --webhook-max-inflight-bytes=%d: %s\n", pid, budget, label)

	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},                  //nolint:gosec // local bench against a self-signed certificate
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1: one connection per request
		MaxIdleConnsPerHost: concurrency,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	base := fmt.Sprintf("https://127.0.0.1:%d", webhookPort)
	if err := waitReady(hc, probePort, base, exited, logPath); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // caches synced, start-up garbage collected
	idle := readStatus(pid)
	fmt.Printf("idle (baseline):   VmRSS %s, VmHWM %s\n", kib(idle["VmRSS:"]), kib(idle["VmHWM:"]))

	for _, p := range phases {
		r := runPhase(hc, pid, base, p, concurrency, timeout)
		time.Sleep(settle)
		r.rssAfter = readStatus(pid)["VmRSS:"]
		fmt.Printf("%-44s %s\n", r.name+":", r.String(settle))
	}
	final := readStatus(pid)
	fmt.Printf("peak for this manager: VmHWM %s (idle baseline VmHWM %s, VmRSS %s); VmRSS at the end %s\n\n",
		kib(final["VmHWM:"]), kib(idle["VmHWM:"]), kib(idle["VmRSS:"]), kib(final["VmRSS:"]))
	select {
	case err := <-exited:
		return fmt.Errorf("manager exited during the bench: %v (log: %s)", err, logPath)
	default:
	}
	return nil
}

func (r phaseResult) String(settle time.Duration) string {
	codes := make([]int, 0, len(r.codes))
	for c := range r.codes {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", r.codes[c], c))
	}
	if r.errs > 0 {
		parts = append(parts, fmt.Sprintf("%d transport errors", r.errs))
	}
	s := fmt.Sprintf("%s bodies; responses %s in %s; max VmRSS sampled %s, VmHWM %s, VmRSS %s later %s",
		human(int64(r.bytes)), strings.Join(parts, " "), r.wall.Round(10*time.Millisecond),
		kib(r.maxRSS), kib(r.hwm), settle, kib(r.rssAfter))
	if r.sampleMsg != "" {
		s += "\n    e.g. " + r.sampleMsg
	}
	return s
}

func runPhase(hc *http.Client, pid int, base string, p phase, concurrency int, timeout time.Duration) phaseResult {
	r := phaseResult{name: p.name, bytes: len(p.body), codes: map[int]int{}}
	var maxRSS atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if v := int64(readStatus(pid)["VmRSS:"]); v > maxRSS.Load() {
				maxRSS.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	url := fmt.Sprintf("%s%s?timeout=%s", base, p.path, timeout)
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, msg, err := post(hc, url, p.body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.errs++
				return
			}
			r.codes[code]++
			if code != http.StatusOK && r.sampleMsg == "" {
				r.sampleMsg = fmt.Sprintf("%d: %s", code, msg)
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	r.wall = time.Since(t0)
	close(stop)
	<-sampled
	r.maxRSS = int(maxRSS.Load())
	r.hwm = readStatus(pid)["VmHWM:"]
	return r
}

// post sends one review and returns the HTTP code and the review's message.
func post(hc *http.Client, url string, body []byte) (int, string, error) {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var out admissionv1.AdmissionReview
	msg := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &out) == nil && out.Response != nil && out.Response.Result != nil {
		msg = out.Response.Result.Message
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return resp.StatusCode, msg, nil
}

// waitReady waits for /readyz and for the webhook paths to be registered.
func waitReady(hc *http.Client, probePort int, base string, exited <-chan error, logPath string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("manager exited: %v (log: %s)", err, logPath)
		default:
		}
		if ready(hc, fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)) {
			okPaths := 0
			for _, p := range []string{pod.Path, podGroupPath} {
				if code, _, err := post(hc, base+p, []byte("{}")); err == nil && code != http.StatusNotFound {
					okPaths++
				}
			}
			if okPaths == 2 {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("manager not ready after 60s (log: %s)", logPath)
}

func ready(hc *http.Client, url string) bool {
	resp, err := hc.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// readStatus returns the KiB figures of /proc/<pid>/status (VmRSS:, VmHWM:, ...).
func readStatus(pid int) map[string]int {
	out := map[string]int{}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) == 3 && fields[2] == "kB" {
			out[fields[0]], _ = strconv.Atoi(fields[1])
		}
	}
	return out
}

// podReview is a CREATE review of a pod in the bench namespace (in KubeNexus
// scope, so the webhook decodes, mutates and diffs it) of about size bytes.
func podReview(size int) ([]byte, error) {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: benchNS},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	return sized(size, func(blob string) (*admissionv1.AdmissionRequest, error) {
		p.Annotations = map[string]string{"blob": blob}
		raw, err := json.Marshal(p)
		return &admissionv1.AdmissionRequest{
			UID: "bench", Operation: admissionv1.Create, Namespace: benchNS, Name: p.Name,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Object:   runtime.RawExtension{Raw: raw},
		}, err
	})
}

// podGroupReview is an UPDATE review of a PodGroup (object and oldObject, each
// about half of size) of about size bytes.
func podGroupReview(size int) ([]byte, error) {
	pg := &v1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: benchNS},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 2},
	}
	return sized(size, func(blob string) (*admissionv1.AdmissionRequest, error) {
		half := blob[:len(blob)/2]
		pg.Annotations = map[string]string{"blob": half}
		raw, err := json.Marshal(pg)
		if err != nil {
			return nil, err
		}
		old := pg.DeepCopy()
		old.Spec.MinMember = 1
		oldRaw, err := json.Marshal(old)
		return &admissionv1.AdmissionRequest{
			UID: "bench", Operation: admissionv1.Update, Namespace: benchNS, Name: pg.Name,
			Kind:      metav1.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "PodGroup"},
			Resource:  metav1.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "podgroups"},
			Object:    runtime.RawExtension{Raw: raw},
			OldObject: runtime.RawExtension{Raw: oldRaw},
		}, err
	})
}

// sized builds a review whose JSON is size bytes (give or take a few).
func sized(size int, req func(blob string) (*admissionv1.AdmissionRequest, error)) ([]byte, error) {
	encode := func(n int) ([]byte, error) {
		r, err := req(strings.Repeat("x", max(n, 0)))
		if err != nil {
			return nil, err
		}
		return json.Marshal(&admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  r,
		})
	}
	empty, err := encode(0)
	if err != nil {
		return nil, err
	}
	out, err := encode(size - len(empty))
	if err != nil {
		return nil, err
	}
	if len(out) > size+16 {
		return nil, errors.New("review larger than asked for")
	}
	return out, nil
}

func writeSelfSigned(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kubenexus-webhookmem"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

func kib(k int) string { return fmt.Sprintf("%.0f MiB", float64(k)/1024) }

func human(b int64) string {
	if b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
}
