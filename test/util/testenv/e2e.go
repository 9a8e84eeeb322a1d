package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RequireBinaries fails the test when a binary under bin is missing, naming the
// command that builds it.
func RequireBinaries(t testing.TB, bin, build string, names ...string) {
	t.Helper()
	for _, b := range names {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s is missing: %s builds it", b, build)
		}
	}
}

// LogDir is where an e2e run keeps its processes' logs, kubeconfig and
// certificates: E2E_LOG_DIR (kept after the run) when set, else a directory the
// test removes.
func LogDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("E2E_LOG_DIR")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// LogWriter writes each Write to the test's log (progress lines of an e2e), without
// its final newline.
type LogWriter struct{ T testing.TB }

func (w LogWriter) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
