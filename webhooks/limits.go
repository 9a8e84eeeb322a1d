package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kube-nexus/kubenexus/webhooks/pod"
)

const (
	// ValidatingMaxRequestBytes bounds an AdmissionReview on every path but the pod
	// webhook's: the validating webhooks see CREATE and UPDATE, and an UPDATE review
	// carries object and oldObject. A KubeNexus custom resource is stored in etcd as
	// JSON, which holds at most ~1.5 MiB per object (--max-request-bytes), so a
	// review of an object the API server can store is at most 2 × 1.5 MiB plus the
	// request envelope (user info, options: kilobytes); 4 MiB leaves room for that
	// and is well below controller-runtime's own 7 MiB.
	ValidatingMaxRequestBytes = 4 << 20
	// DefaultMaxInflightBytes is the default budget of AdmissionReview bytes being
	// read, decoded and handled at once, across all paths.
	DefaultMaxInflightBytes = 16 << 20
	// DefaultMinRequestWeight is the least a request counts against the budget, so
	// that many tiny requests cannot run unbounded in parallel either.
	DefaultMinRequestWeight = 16 << 10
	// DefaultMaxWait is the longest a request waits for its share of the budget.
	// The API server's webhook timeout is 10 s at most (5 s in our webhook
	// configurations); the wait is also capped at half the request's ?timeout=, so
	// that a refused request leaves the API server time to retry it.
	DefaultMaxWait = 5 * time.Second
)

// Limits bounds what the webhook server reads and decodes.
type Limits struct {
	// MaxInflightBytes is the budget of request bytes in flight across all paths.
	// A request holds its weight from before its body is read until its handler
	// returns, so decoding, handling and the response are covered too.
	MaxInflightBytes int64
	// MinRequestWeight is the least a request weighs against MaxInflightBytes.
	MinRequestWeight int64
	// MaxWait is the longest a request waits for its share before it is refused
	// with 429 (and never past its own context).
	MaxWait time.Duration
	// PathMaxBytes is the largest request body per path; DefaultMaxBytes applies
	// to every path not listed (the validating webhooks, any future one).
	PathMaxBytes    map[string]int64
	DefaultMaxBytes int64
}

// DefaultLimits are the limits the manager runs with unless flags change them.
func DefaultLimits() Limits {
	return Limits{
		MaxInflightBytes: DefaultMaxInflightBytes,
		MinRequestWeight: DefaultMinRequestWeight,
		MaxWait:          DefaultMaxWait,
		PathMaxBytes:     map[string]int64{pod.Path: pod.MaxRequestBytes},
		DefaultMaxBytes:  ValidatingMaxRequestBytes,
	}
}

// LimitedServer is a webhook.Server whose Register wraps every handler —
// including those ctrl.NewWebhookManagedBy registers — in the body and
// in-flight limits, so that the memory admission requests can take is bounded
// by MaxInflightBytes (times what decoding a byte costs), whatever arrives.
type LimitedServer struct {
	webhook.Server
	limits Limits
	sem    *semaphore.Weighted
}

var _ webhook.Server = &LimitedServer{}

// NewLimitedServer wraps s. Limits left zero take their defaults.
func NewLimitedServer(s webhook.Server, l Limits) *LimitedServer {
	d := DefaultLimits()
	if l.MaxInflightBytes <= 0 {
		l.MaxInflightBytes = d.MaxInflightBytes
	}
	if l.MinRequestWeight <= 0 {
		l.MinRequestWeight = d.MinRequestWeight
	}
	if l.MaxWait <= 0 {
		l.MaxWait = d.MaxWait
	}
	if l.DefaultMaxBytes <= 0 {
		l.DefaultMaxBytes = d.DefaultMaxBytes
	}
	if l.PathMaxBytes == nil {
		l.PathMaxBytes = d.PathMaxBytes
	}
	return &LimitedServer{Server: s, limits: l, sem: semaphore.NewWeighted(l.MaxInflightBytes)}
}

// Limits returns the limits in force.
func (s *LimitedServer) Limits() Limits { return s.limits }

// Register registers hook at path behind the limits.
func (s *LimitedServer) Register(path string, hook http.Handler) {
	s.Server.Register(path, s.Wrap(path, hook))
}

// MaxBytes is the largest request body accepted at path.
func (s *LimitedServer) MaxBytes(path string) int64 {
	if n, ok := s.limits.PathMaxBytes[path]; ok {
		return n
	}
	return s.limits.DefaultMaxBytes
}

// Wrap returns h behind the limits of path (Register uses it; exported for tests).
func (s *LimitedServer) Wrap(path string, h http.Handler) http.Handler {
	limit := s.MaxBytes(path)
	log := logf.Log.WithName("webhook-limits").WithValues("path", path)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// (a) The body bound, checked before anything is read.
		if r.ContentLength > limit {
			log.Info("Refused an oversized AdmissionReview", "bytes", r.ContentLength, "limit", limit)
			refuse(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
				fmt.Sprintf("AdmissionReview of %d bytes is too large: the limit of %s is %d bytes (%s)",
					r.ContentLength, path, limit, mib(limit)))
			return
		}

		// (b) The in-flight budget. A body of unknown length (chunked) weighs the
		// path's maximum, which is what it may grow to.
		weight := limit
		if r.ContentLength >= 0 {
			weight = max(r.ContentLength, s.limits.MinRequestWeight)
		}
		weight = min(weight, s.limits.MaxInflightBytes)
		wait := s.maxWait(r)
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		err := s.sem.Acquire(ctx, weight)
		cancel()
		if err != nil {
			log.Info("Webhook busy, refused a request", "bytes", r.ContentLength, "weight", weight, "waited", wait.String())
			w.Header().Set("Retry-After", "1")
			refuse(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
				fmt.Sprintf("the KubeNexus webhook is busy: this request (%d bytes) could not get its share of the %d-byte (%s) budget of AdmissionReviews in flight within %s; retry",
					weight, s.limits.MaxInflightBytes, mib(s.limits.MaxInflightBytes), wait))
			return
		}
		defer s.sem.Release(weight)

		// A chunked body is cut off past the limit; the handler's response is then
		// replaced by the same 413 a Content-Length above the limit gets.
		body := &watchedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit)}
		r.Body = body
		gw := &guardedWriter{ResponseWriter: w, body: body}
		h.ServeHTTP(gw, r)
		if gw.suppressed || (body.tooLarge.Load() && !gw.wrote) {
			log.Info("Refused an oversized AdmissionReview", "bytes", "unknown (chunked)", "limit", limit)
			refuse(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
				fmt.Sprintf("AdmissionReview is too large: the limit of %s is %d bytes (%s)", path, limit, mib(limit)))
		}
	})
}

// maxWait is MaxWait, capped at half the timeout the API server sends as
// ?timeout= so that after a 429 it has time left to retry.
func (s *LimitedServer) maxWait(r *http.Request) time.Duration {
	wait := s.limits.MaxWait
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 {
		wait = min(wait, t/2)
	}
	return wait
}

// refuse answers with code and an AdmissionReview whose response denies with
// the message: a direct caller reads the reason, the API server sees the code
// (and retries a 429, honouring Retry-After, within its webhook timeout).
func refuse(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: &admissionv1.AdmissionResponse{
			Allowed: false,
			Result:  &metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg},
		},
	}
	out, _ := json.Marshal(&review)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(code)
	_, _ = w.Write(out)
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// watchedBody records that the body went past its limit.
type watchedBody struct {
	io.ReadCloser
	tooLarge atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		b.tooLarge.Store(true)
	}
	return n, err
}

// guardedWriter drops what the handler writes once the body went past its
// limit (and before the handler wrote anything), so that the 413 can be sent.
type guardedWriter struct {
	http.ResponseWriter
	body       *watchedBody
	wrote      bool
	suppressed bool
}

func (g *guardedWriter) WriteHeader(code int) {
	if g.suppressed || (!g.wrote && g.body.tooLarge.Load()) {
		g.suppressed = true
		return
	}
	g.wrote = true
	g.ResponseWriter.WriteHeader(code)
}

func (g *guardedWriter) Write(p []byte) (int, error) {
	if g.suppressed || (!g.wrote && g.body.tooLarge.Load()) {
		g.suppressed = true
		return len(p), nil
	}
	g.wrote = true
	return g.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (g *guardedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }
