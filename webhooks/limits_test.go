package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

const testPath = "/validate-test"

// review is an AdmissionReview of about size bytes.
func review(t *testing.T, size int) []byte {
	t.Helper()
	obj, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x", "namespace": "default"},
		"data":     map[string]string{"blob": strings.Repeat("x", max(size-400, 0))},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "u1", Operation: admissionv1.Create, Namespace: "default", Name: "x",
			Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Object: runtime.RawExtension{Raw: obj},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// allowing is a real controller-runtime admission webhook that allows everything
// and says how large the object was.
func allowing() http.Handler {
	return &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		return admission.Allowed("seen").WithWarnings("object bytes " + strconv.Itoa(len(req.Object.Raw)))
	})}
}

// unsized hides a reader's length so that the client sends it chunked.
type unsized struct{ io.Reader }

type result struct {
	code   int
	header http.Header
	review admissionv1.AdmissionReview
	raw    []byte
}

func post(t *testing.T, url string, body io.Reader) result {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := result{code: resp.StatusCode, header: resp.Header, raw: raw}
	if err := json.Unmarshal(raw, &r.review); err != nil {
		t.Fatalf("response is not an AdmissionReview: %v: %s", err, raw)
	}
	return r
}

func serve(t *testing.T, l Limits, h http.Handler) (*LimitedServer, string) {
	t.Helper()
	s := NewLimitedServer(webhook.NewServer(webhook.Options{}), l)
	mux := http.NewServeMux()
	mux.Handle(testPath, s.Wrap(testPath, h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv.URL + testPath
}

func expectRefusal(t *testing.T, r result, code int, parts ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d: %s", r.code, code, r.raw)
	}
	if r.review.Response == nil || r.review.Response.Allowed || r.review.Response.Result == nil {
		t.Fatalf("want a denying AdmissionReview, got %s", r.raw)
	}
	if r.review.Response.Result.Code != int32(code) {
		t.Errorf("result code %d, want %d", r.review.Response.Result.Code, code)
	}
	for _, p := range parts {
		if !strings.Contains(r.review.Response.Result.Message, p) {
			t.Errorf("message %q does not contain %q", r.review.Response.Result.Message, p)
		}
	}
}

func TestOversizedBodyRefused(t *testing.T) {
	called := false
	inner := admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		called = true
		return admission.Allowed("")
	})}
	_, url := serve(t, Limits{PathMaxBytes: map[string]int64{testPath: 64 << 10}}, &inner)
	body := review(t, 100<<10)

	t.Run("content-length", func(t *testing.T) {
		r := post(t, url, bytes.NewReader(body))
		expectRefusal(t, r, http.StatusRequestEntityTooLarge, "too large", "65536 bytes", testPath)
	})
	t.Run("chunked", func(t *testing.T) {
		r := post(t, url, unsized{bytes.NewReader(body)})
		expectRefusal(t, r, http.StatusRequestEntityTooLarge, "too large", "65536 bytes", testPath)
	})
	if called {
		t.Error("the handler admitted an oversized review")
	}
}

func TestDefaultLimitsPerPath(t *testing.T) {
	s := NewLimitedServer(webhook.NewServer(webhook.Options{}), Limits{})
	if got := s.MaxBytes("/mutate-v1-pod"); got != 3<<20 {
		t.Errorf("pod path limit %d, want pod.MaxRequestBytes", got)
	}
	if got := s.MaxBytes("/validate-scheduling-kubenexus-io-v1alpha1-podgroup"); got != ValidatingMaxRequestBytes {
		t.Errorf("validating path limit %d, want %d", got, ValidatingMaxRequestBytes)
	}
	if got := s.Limits().MaxInflightBytes; got != DefaultMaxInflightBytes {
		t.Errorf("budget %d, want %d", got, DefaultMaxInflightBytes)
	}
}

func TestWithinBudgetUnchanged(t *testing.T) {
	_, url := serve(t, Limits{}, allowing())
	direct := httptest.NewServer(allowing())
	defer direct.Close()
	body := review(t, 200<<10)
	for _, name := range []string{"content-length", "chunked"} {
		t.Run(name, func(t *testing.T) {
			var in, want io.Reader = bytes.NewReader(body), bytes.NewReader(body)
			if name == "chunked" {
				in, want = unsized{in}, unsized{want}
			}
			got, exp := post(t, url, in), post(t, direct.URL, want)
			if got.code != http.StatusOK || got.code != exp.code || !bytes.Equal(got.raw, exp.raw) {
				t.Fatalf("wrapped: %d %s\ndirect: %d %s", got.code, got.raw, exp.code, exp.raw)
			}
			if !got.review.Response.Allowed || got.review.Response.UID != "u1" {
				t.Fatalf("not allowed: %s", got.raw)
			}
		})
	}
}

// holding returns a handler that blocks until release is closed, and a channel
// that receives once per request that entered it.
func holding() (http.Handler, chan struct{}, chan struct{}) {
	entered, release := make(chan struct{}, 8), make(chan struct{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		allowing().ServeHTTP(w, r)
	}), entered, release
}

func TestBusyGets429(t *testing.T) {
	h, entered, release := holding()
	const budget = 64 << 10
	_, url := serve(t, Limits{MaxInflightBytes: budget, MaxWait: 300 * time.Millisecond}, h)
	first := make(chan result, 1)
	go func() { first <- post(t, url, bytes.NewReader(review(t, 60<<10))) }()
	<-entered // the first request holds 60 KiB of the 64 KiB budget

	start := time.Now()
	r := post(t, url, bytes.NewReader(review(t, 20<<10)))
	waited := time.Since(start)
	expectRefusal(t, r, http.StatusTooManyRequests, "busy", "65536-byte", "300ms")
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After header")
	}
	if waited < 300*time.Millisecond {
		t.Errorf("refused after %s, before the 300ms wait", waited)
	}
	close(release)
	if got := <-first; got.code != http.StatusOK {
		t.Fatalf("first request: %d %s", got.code, got.raw)
	}
}

func TestWaitCappedByRequestTimeout(t *testing.T) {
	h, entered, release := holding()
	defer close(release)
	_, url := serve(t, Limits{MaxInflightBytes: 64 << 10, MaxWait: time.Minute}, h)
	go func() { _, _ = http.Post(url, "application/json", bytes.NewReader(review(t, 60<<10))) }()
	<-entered
	start := time.Now()
	r := post(t, url+"?timeout=400ms", bytes.NewReader(review(t, 20<<10)))
	expectRefusal(t, r, http.StatusTooManyRequests, "busy", "200ms")
	if waited := time.Since(start); waited > 30*time.Second {
		t.Errorf("waited %s despite ?timeout=400ms", waited)
	}
}

func TestFreedBudgetAdmitsWaiter(t *testing.T) {
	h, entered, release := holding()
	_, url := serve(t, Limits{MaxInflightBytes: 64 << 10, MaxWait: time.Minute}, h)
	first := make(chan result, 1)
	go func() { first <- post(t, url, bytes.NewReader(review(t, 60<<10))) }()
	<-entered

	second := make(chan result, 1)
	go func() { second <- post(t, url, bytes.NewReader(review(t, 20<<10))) }()
	select {
	case <-entered:
		t.Fatal("the second request ran although the budget was taken")
	case r := <-second:
		t.Fatalf("the second request finished while the budget was taken: %d %s", r.code, r.raw)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	for _, c := range []chan result{first, second} {
		if r := <-c; r.code != http.StatusOK || !r.review.Response.Allowed {
			t.Fatalf("%d %s", r.code, r.raw)
		}
	}
}

func TestUnknownLengthWeighsPathMaximum(t *testing.T) {
	h, entered, release := holding()
	defer close(release)
	// A budget that holds one chunked request (weighing the 64 KiB path maximum).
	_, url := serve(t, Limits{MaxInflightBytes: 80 << 10, MaxWait: 200 * time.Millisecond,
		PathMaxBytes: map[string]int64{testPath: 64 << 10}}, h)
	go func() { _, _ = http.Post(url, "application/json", unsized{bytes.NewReader(review(t, 1<<10))}) }()
	<-entered
	// 16 KiB left: a 20 KiB review waits and is refused, a 1 KiB one (weighing the
	// 16 KiB floor) fits.
	expectRefusal(t, post(t, url, bytes.NewReader(review(t, 20<<10))), http.StatusTooManyRequests, "busy")
	small := make(chan result, 1)
	go func() { small <- post(t, url, bytes.NewReader(review(t, 1<<10))) }()
	select {
	case <-entered:
	case r := <-small:
		t.Fatalf("small request did not reach the handler: %d %s", r.code, r.raw)
	}
}

// recordingServer is a webhook.Server that records what is registered.
type recordingServer struct {
	webhook.Server
	hooks map[string]http.Handler
}

func (r *recordingServer) Register(path string, h http.Handler) { r.hooks[path] = h }

func TestRegisterWrapsEveryHandler(t *testing.T) {
	rec := &recordingServer{Server: webhook.NewServer(webhook.Options{}), hooks: map[string]http.Handler{}}
	s := NewLimitedServer(rec, Limits{DefaultMaxBytes: 1 << 10})
	s.Register(testPath, allowing())
	h, ok := rec.hooks[testPath]
	if !ok {
		t.Fatal("not registered on the wrapped server")
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	expectRefusal(t, post(t, srv.URL, bytes.NewReader(review(t, 4<<10))), http.StatusRequestEntityTooLarge, "1024 bytes")
}
