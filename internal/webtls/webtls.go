// Package webtls holds the certificate of the listener for people
// (docs/design/web.md): a self-signed ECDSA P-256 certificate made once and
// kept in the state dir (tls = "auto"), or the operator's PEM files, read
// again when they change. Its SHA-256 fingerprint is what `harness pair`
// shows, so a phone's user can tell the certificate they are asked to
// trust is this one.
package webtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Names of the auto certificate and its key in the state dir.
const (
	AutoCertFile = "web-tls.crt"
	AutoKeyFile  = "web-tls.key"
)

// autoLifetime is how long an auto certificate is valid; one that
// expires within autoRenew is made again.
const (
	autoLifetime = 5 * 365 * 24 * time.Hour
	autoRenew    = 30 * 24 * time.Hour
)

// recheck bounds how often the files of a Files manager are looked at.
const recheck = time.Second

// Manager serves the listener's certificate.
type Manager struct {
	certPath, keyPath string
	files             bool // reload certPath/keyPath when they change
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]time.Time // mtimes of cert and key when loaded
	checked time.Time
	lastErr error
}

// Auto returns the self-signed certificate kept in stateDir, made (with
// hosts as its names and addresses) when there is none, it does not load,
// or it is about to expire; otherwise the one there is reused, so its
// fingerprint stays what a phone was told across restarts.
func Auto(stateDir string, hosts []string, now time.Time) (*Manager, error) {
	m := &Manager{certPath: filepath.Join(stateDir, AutoCertFile), keyPath: filepath.Join(stateDir, AutoKeyFile), now: time.Now}
	if c, err := load(m.certPath, m.keyPath); err == nil && now.Add(autoRenew).Before(c.Leaf.NotAfter) {
		m.cert = c
		return m, nil
	}
	certPEM, keyPEM, err := selfSigned(hosts, now)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("web tls: state dir: %w", err)
	}
	if err := writeFile(m.keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(m.certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	c, err := load(m.certPath, m.keyPath)
	if err != nil {
		return nil, err
	}
	m.cert = c
	return m, nil
}

// Files returns a manager of the operator's PEM files. A pair that does
// not load is an error naming the file and why; later, a change that does
// not load keeps the certificate in force (Err says why).
func Files(certPath, keyPath string) (*Manager, error) {
	m := &Manager{certPath: certPath, keyPath: keyPath, files: true, now: time.Now}
	st := m.mtimes()
	c, err := load(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	m.cert, m.stamp, m.checked = c, st, m.now()
	return m, nil
}

// TLSConfig is the listener's configuration: TLS 1.2 at least, the
// certificate from GetCertificate.
func (m *Manager) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return m.current(), nil
	}}
}

// Fingerprint is the SHA-256 of the certificate in force, as colon-separated
// upper-case hex pairs (the form browsers show).
func (m *Manager) Fingerprint() string { return Fingerprint(m.current().Leaf.Raw) }

// Err is why the files' latest change did not load; nil when the files in
// force are the ones on disk.
func (m *Manager) Err() error {
	m.current()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr
}

// current returns the certificate, first loading the files again when
// their mtimes changed (looked at once a second at most).
func (m *Manager) current() *tls.Certificate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.files || m.now().Sub(m.checked) < recheck {
		return m.cert
	}
	m.checked = m.now()
	st := m.mtimes()
	if st == m.stamp {
		return m.cert
	}
	c, err := load(m.certPath, m.keyPath)
	if err != nil {
		m.lastErr = err
		return m.cert
	}
	m.cert, m.stamp, m.lastErr = c, st, nil
	return m.cert
}

func (m *Manager) mtimes() [2]time.Time {
	var st [2]time.Time
	for i, p := range []string{m.certPath, m.keyPath} {
		if info, err := os.Stat(p); err == nil {
			st[i] = info.ModTime()
		}
	}
	return st
}

// Fingerprint formats the SHA-256 of a DER certificate.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// load reads a certificate and key pair, naming the file at fault.
func load(certPath, keyPath string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("tls_cert %s: %w", certPath, err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("tls_key %s: %w", keyPath, err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls_cert %s with tls_key %s: %w", certPath, keyPath, err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tls_cert %s: %w", certPath, err)
		}
	}
	return &c, nil
}

// selfSigned makes a certificate for hosts (names and addresses).
func selfSigned(hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("web tls: key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("web tls: serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "harness", Organization: []string{"harness"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(autoLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if h != "" && !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("web tls: certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("web tls: key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// writeFile replaces path with data through a temporary file.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("web tls: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		return fmt.Errorf("web tls: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("web tls: %w", err)
	}
	return nil
}

// Hosts lists the names and addresses an auto certificate names: the
// host name, localhost, every address of this machine's interfaces, and
// extra (the listen host, public_url's host) when they are specific.
func Hosts(extra ...string) []string {
	out := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" {
		out = append(out, h)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
				out = append(out, n.IP.String())
			}
		}
	}
	for _, e := range extra {
		if ip := net.ParseIP(e); e != "" && (ip == nil || !ip.IsUnspecified()) {
			out = append(out, e)
		}
	}
	return out
}
