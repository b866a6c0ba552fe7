package redistest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ratelab/ratelab/harness/localredis"
	"github.com/ratelab/ratelab/harness/server"
	"github.com/redis/go-redis/v9"
)

// Cluster is a local 3-master Redis Cluster started for a test package
// (localredis.StartCluster, as `--redis cluster`). Its data is the tests' own.
type Cluster struct {
	*server.Redis
}

// StartCluster starts a local Redis Cluster from redis-server on PATH. Like
// Start it exits the process with a message when it cannot: the cluster
// tests are never skipped. Call Close when the package's tests end.
func StartCluster() *Cluster {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server.QuietLogs()
	r, err := localredis.StartCluster(ctx, localredis.StartTimeout, 10*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "redistest: these tests need a local Redis Cluster: %v\n(run `make test`, which installs redis-server)\n", err)
		os.Exit(2)
	}
	return &Cluster{Redis: r}
}

// Client is the cluster's client.
func (c *Cluster) Client() *redis.ClusterClient { return c.Redis.Client.(*redis.ClusterClient) }

// Certs are PEM files of a test certificate authority and a server
// certificate it signed, in one directory.
type Certs struct {
	// CAFile is the CA's certificate; CertFile and KeyFile the server's.
	CAFile, CertFile, KeyFile string
	// Pool holds the CA, for a client's tls.Config RootCAs.
	Pool *x509.CertPool
}

// NewCerts writes a fresh CA and a server certificate valid for names (DNS
// names, or IP addresses in text form) to dir. The keys are ECDSA P-256;
// the certificates are valid from an hour ago for a day.
func NewCerts(dir string, names ...string) (*Certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ratelab test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &Certs{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "server.pem"),
		KeyFile:  filepath.Join(dir, "server-key.pem"),
		Pool:     x509.NewCertPool(),
	}
	c.Pool.AddCert(caCert)
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{c.CAFile, "CERTIFICATE", caDER}, {c.CertFile, "CERTIFICATE", der}, {c.KeyFile, "EC PRIVATE KEY", keyDER}} {
		b := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := os.WriteFile(f.path, b, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// TLSServer is a redis-server that speaks only TLS, on a free loopback
// port, with a certificate valid for the name "localhost" only (not for
// 127.0.0.1: connecting by address is a name mismatch).
type TLSServer struct {
	// Port is the TLS port on 127.0.0.1.
	Port  int
	Certs *Certs
	cmd   *exec.Cmd
}

// StartTLS starts a TLS-only redis-server (Debian's is built with TLS),
// with certificates generated into dir. Clients need no certificate of
// their own (tls-auth-clients no). Close stops it.
func StartTLS(dir string) (*TLSServer, error) {
	certs, err := NewCerts(dir, "localhost")
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close() // only its port was wanted, for the redis-server started next
		s := &TLSServer{Port: port, Certs: certs}
		s.cmd = exec.Command("redis-server",
			"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--tls-cert-file", certs.CertFile, "--tls-key-file", certs.KeyFile,
			"--tls-ca-cert-file", certs.CAFile, "--tls-auth-clients", "no",
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning", "--logfile", "")
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		var out strings.Builder
		s.cmd.Stdout, s.cmd.Stderr = &out, &out
		if err := s.cmd.Start(); err != nil {
			return nil, err
		}
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), TLSConfig: &tls.Config{RootCAs: certs.Pool, ServerName: "localhost"}, MaxRetries: -1})
		deadline := time.Now().Add(5 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err = c.Ping(ctx).Err()
			cancel()
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = c.Close() // the readiness probe's client: err is its answer
		if err == nil {
			return s, nil
		}
		s.Close()
		lastErr = fmt.Errorf("TLS redis-server on port %d did not answer: %w (%s)", port, err, strings.TrimSpace(out.String()))
	}
	return nil, lastErr
}

// Addr is "127.0.0.1:<port>".
func (s *TLSServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// URL is the rediss:// URL of the server by host name ("localhost", which
// its certificate names, or "127.0.0.1", which it does not).
func (s *TLSServer) URL(host string) string {
	return "rediss://" + net.JoinHostPort(host, strconv.Itoa(s.Port))
}

// Close stops the server.
func (s *TLSServer) Close() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		_ = s.cmd.Wait()
	}
}

// SetACLUser creates (or resets) ACL user on c with password, allowed on
// keys under server.KeyPrefix and only the given commands (ACL SETUSER
// spelling: "evalsha", "memory|usage").
func SetACLUser(ctx context.Context, c redis.UniversalClient, user, password string, commands []string) error {
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + password, "~" + server.KeyPrefix + "*", "-@all"}
	for _, cmd := range commands {
		args = append(args, "+"+cmd)
	}
	return c.Do(ctx, args...).Err()
}

// Without returns list without the element drop.
func Without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// KeysByNode counts the keys under prefix on every master of c (SCAN per
// master), keyed by the master's address; a single server gives one entry.
func KeysByNode(ctx context.Context, c redis.UniversalClient, prefix string) (map[string]int64, error) {
	switch cc := c.(type) {
	case *redis.Client:
		keys, err := server.ScanKeys(ctx, cc, prefix)
		return map[string]int64{cc.Options().Addr: int64(len(keys))}, err
	case *redis.ClusterClient:
		var mu sync.Mutex
		out := map[string]int64{}
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			keys, err := server.ScanKeys(ctx, node, prefix)
			mu.Lock()
			out[node.Options().Addr] = int64(len(keys))
			mu.Unlock()
			return err
		})
		return out, err
	}
	return nil, fmt.Errorf("KeysByNode: unsupported client %T", c)
}
