package demo

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-nexus/kubenexus/test/util/testenv"
)

// serviceIP is the API server's address in the cluster (the first of envtest's
// service range, 10.0.0.0/24): what pods reach it at through kube-proxy.
const serviceIP = "10.0.0.1"

// UpNode starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a real node
// (StartNode) that runs images (tagged version), for KubeNexus installed as the README says:
// pods, from its images, started by the kubelet. The API server serves on this
// machine's address as well as loopback, with a certificate for the in-cluster
// names pods use, admits pods with their ServiceAccount's token, and calls webhooks
// at their endpoints (no cluster DNS here).
func UpNode(ctx context.Context, opts Options, version string, images []string) (_ *Cluster, err error) {
	c := &Cluster{opts: opts}
	defer func() {
		if err != nil {
			c.Down()
		}
	}()
	ip, err := c.prepareDir()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(opts.Dir, "apiserver")
	caPEM, err := writeAPIServerCertificates(certDir, ip)
	if err != nil {
		return nil, err
	}
	apiLog, err := os.Create(c.logPath("kube-apiserver"))
	if err != nil {
		return nil, err
	}
	defer apiLog.Close() // the API server holds its own descriptor
	if err := c.startControlPlane(func(env *envtest.Environment) error {
		api := env.ControlPlane.GetAPIServer()
		api.Out, api.Err = apiLog, apiLog
		// envtest keeps certificates it finds in its directory; its clients trust caPEM.
		api.CertDir = certDir
		api.CA = caPEM
		args := api.Configure()
		args.Set("bind-address", "0.0.0.0")
		args.Set("advertise-address", ip)
		args.Set("enable-aggregator-routing", "true")
		// The node's name does not resolve here: logs and exec go to its address.
		args.Set("kubelet-preferred-address-types", "InternalIP")
		// envtest turns the ServiceAccount admission plugin off; pods need it to get
		// their token.
		args.Disable("disable-admission-plugins")
		return nil
	}); err != nil {
		return nil, err
	}
	// ServiceAccounts in every namespace, the kube-root-ca.crt ConfigMaps, Deployments'
	// ReplicaSets and the garbage collector.
	if err := c.startControllerManager(true); err != nil {
		return nil, err
	}
	// The cluster's default scheduler, which places KubeNexus's own pods.
	if err := c.startDefaultScheduler(); err != nil {
		return nil, err
	}
	if _, err := c.StartNode(ctx, ip, version, images); err != nil {
		return nil, err
	}
	return c, nil
}

// startDefaultScheduler starts kube-scheduler (default-scheduler) as the cluster's
// own scheduler.
func (c *Cluster) startDefaultScheduler() error {
	c.logf("starting kube-scheduler")
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	return c.start("kube-scheduler", filepath.Join(c.opts.Bin, "k8s", "kube-scheduler"),
		"--kubeconfig="+c.Kubeconfig,
		"--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig,
		"--leader-elect=false",
		fmt.Sprintf("--secure-port=%d", port),
		"--bind-address=127.0.0.1",
	)
}

// writeAPIServerCertificates writes envtest's API server certificates into dir: a
// serving certificate for loopback, ip and the in-cluster names (apiserver.crt,
// .key), and the ServiceAccount token signing key (sa-signer.crt, .key). It returns
// the serving certificate's CA.
func writeAPIServerCertificates(dir, ip string) ([]byte, error) {
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(ip), net.ParseIP(serviceIP)}
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	caPEM, err := writeCertificates(dir, "apiserver", ips, dns)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa-signer.crt"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa-signer.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return nil, fmt.Errorf("writing the ServiceAccount signing key: %w", err)
	}
	return caPEM, nil
}
