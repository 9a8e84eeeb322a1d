package operator_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Webhook server TLS", func() {
	It("accepts TLS 1.2 and newer, and speaks HTTP/1.1 only even to a client that offers HTTP/2", func() {
		wio := &testEnv.WebhookInstallOptions
		addr := fmt.Sprintf("%s:%d", wio.LocalServingHost, wio.LocalServingPort)
		dial := func(cfg *tls.Config) (*tls.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
		}
		//nolint:gosec // probing the local test server's own settings
		conn, err := dial(&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.ConnectionState().NegotiatedProtocol).To(Equal("http/1.1"))
		Expect(conn.ConnectionState().Version).To(BeNumerically(">=", tls.VersionTLS12))
		Expect(conn.Close()).To(Succeed())

		//nolint:gosec // a client held to TLS 1.1 must be refused
		_, err = dial(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
		Expect(err).To(HaveOccurred())
	})
})
