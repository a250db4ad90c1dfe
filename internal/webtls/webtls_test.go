package webtls

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario_AutoCertificateIsKeptAcrossRestarts: the self-signed
// certificate is made once, with the hosts as SANs and its key 0600, and
// a daemon started again serves the same one (same fingerprint).
func TestScenario_AutoCertificateIsKeptAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	m, err := Auto(dir, []string{"localhost", "box.lan", "192.0.2.7", "0.0.0.0"}, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf := m.current().Leaf
	if !slices.Contains(leaf.DNSNames, "box.lan") || len(leaf.IPAddresses) == 0 || leaf.IPAddresses[0].String() != "192.0.2.7" {
		t.Fatalf("SANs %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if info, err := os.Stat(filepath.Join(dir, AutoKeyFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	fp := m.Fingerprint()
	if len(fp) != 95 || strings.Count(fp, ":") != 31 {
		t.Fatalf("fingerprint %q", fp)
	}
	again, err := Auto(dir, []string{"other"}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if again.Fingerprint() != fp {
		t.Fatalf("restart made a new certificate: %s != %s", again.Fingerprint(), fp)
	}
	// One about to expire is made again.
	renewed, err := Auto(dir, []string{"localhost"}, now.Add(autoLifetime-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Fingerprint() == fp {
		t.Fatal("an expiring certificate was reused")
	}
}

// TestScenario_CertificateFilesAreReadAgainWhenTheyChange: the operator's
// files are served; replaced files are served from the next handshake
// (after the once-a-second look); a broken replacement keeps the one in
// force and says why; a pair that never loads is an error naming the file.
func TestScenario_CertificateFilesAreReadAgainWhenTheyChange(t *testing.T) {
	src, dir := t.TempDir(), t.TempDir()
	cert, key := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	a, err := Auto(filepath.Join(src, "a"), []string{"a.example"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Auto(filepath.Join(src, "b"), []string{"b.example"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	copyPair := func(from *Manager, at time.Time) {
		for _, p := range [][2]string{{from.certPath, cert}, {from.keyPath, key}} {
			data, err := os.ReadFile(p[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p[1], data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p[1], at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	copyPair(a, start.Add(-time.Hour))
	m, err := Files(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	clock := start
	m.now = func() time.Time { return clock }
	serve := func() string {
		c, err := m.TLSConfig().GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return Fingerprint(c.Certificate[0])
	}
	if serve() != a.Fingerprint() {
		t.Fatal("not serving the files")
	}
	copyPair(b, start.Add(-time.Minute))
	clock = clock.Add(2 * time.Second)
	if serve() != b.Fingerprint() || m.Err() != nil {
		t.Fatalf("changed files not served: err %v", m.Err())
	}
	if err := os.WriteFile(cert, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(cert, start, start); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * time.Second)
	if serve() != b.Fingerprint() {
		t.Fatal("a broken replacement displaced the certificate in force")
	}
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), cert) {
		t.Fatalf("Err = %v, want the file named", err)
	}
	if _, err := Files(cert, key); err == nil || !strings.Contains(err.Error(), "c.pem") {
		t.Fatalf("Files on a broken pair = %v", err)
	}
	if _, err := Files(filepath.Join(dir, "missing.pem"), key); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Fatalf("Files on a missing file = %v", err)
	}
}
