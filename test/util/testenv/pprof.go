package testenv

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// FetchCPUProfile saves a CPU profile of seconds of a scheduler serving on the local
// secure port (its --authorization-always-allow-paths must include
// /debug/pprof/profile), waiting up to 20 s for the port to open: a scheduler whose
// plugins take long to set up opens it late.
func FetchCPUProfile(port, seconds int, path string) error {
	hc := &http.Client{Timeout: time.Duration(seconds+30) * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local self-signed scheduler endpoint
	for range 200 {
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, seconds))
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		return os.WriteFile(path, b, 0o644)
	}
	return fmt.Errorf("no scheduler served a CPU profile on port %d in 20 s", port)
}
