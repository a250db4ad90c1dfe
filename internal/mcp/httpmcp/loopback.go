package httpmcp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/httpguard"
)

// OperatorTokenFile is the name of the operator token file in the state dir.
const OperatorTokenFile = "mcp-operator-token"

// CheckLoopback refuses any listen address whose host is not loopback:
// 127.0.0.0/8, ::1 or localhost. An empty host (all interfaces) is refused.
// The error carries errcode.ErrConfigInvalid.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return errcode.Errorf(errcode.ConfigInvalid, "mcp_http %q: want host:port (%v)", addr, err)
	}
	if !isLoopbackHost(host) {
		return errcode.Errorf(errcode.ConfigInvalid,
			"mcp_http %q: not a loopback address (use 127.0.0.1:PORT, [::1]:PORT or localhost:PORT)", addr)
	}
	return nil
}

// isLoopbackHost, loopbackRequest and loopbackOrigin are the checks of
// internal/httpguard, which the web dashboard on the same listener shares.
func isLoopbackHost(host string) bool { return httpguard.LoopbackName(host) }

func loopbackRequest(r *http.Request) bool { return httpguard.LoopbackRequest(r) }

func loopbackOrigin(origin string) bool { return httpguard.LoopbackOrigin(origin) }

// Listen checks that addr is loopback and listens on it (TCP).
func Listen(addr string) (net.Listener, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("httpmcp: listen %s: %w", addr, err)
	}
	return ln, nil
}

// LoadOrCreateOperatorToken returns the operator token kept in
// <stateDir>/mcp-operator-token, creating it (32 random bytes, hex) on first
// use with mode 0600 in a 0700 directory. Later calls return the same token;
// a token file readable by others is narrowed back to 0600.
func LoadOrCreateOperatorToken(stateDir string) (string, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", fmt.Errorf("httpmcp: operator token: state dir: %w", err)
	}
	path := filepath.Join(stateDir, OperatorTokenFile)
	tok, err := readOperatorToken(path)
	if err == nil {
		return tok, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}

	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("httpmcp: operator token: random: %w", err)
	}
	tok = hex.EncodeToString(raw[:])
	// Written to a temporary file and linked into place, so the token file is
	// never seen half-written and a concurrent creator's token wins intact.
	tmp, err := os.CreateTemp(stateDir, OperatorTokenFile+".tmp*")
	if err != nil {
		return "", fmt.Errorf("httpmcp: operator token: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := writeSynced(tmp, tok+"\n"); err != nil {
		return "", fmt.Errorf("httpmcp: operator token: write %s: %w", tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readOperatorToken(path)
		}
		return "", fmt.Errorf("httpmcp: operator token: %w", err)
	}
	return tok, nil
}

func writeSynced(f *os.File, s string) error {
	err := f.Chmod(0o600)
	if err == nil {
		_, err = f.WriteString(s)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readOperatorToken reads and validates an existing token file; a missing
// file is reported as fs.ErrNotExist.
// ReadOperatorToken returns the operator token a daemon keeps in
// stateDir, never creating one: what `harness mcp token` prints, from the
// state dir the daemon itself reports. A missing file is fs.ErrNotExist.
func ReadOperatorToken(stateDir string) (string, error) {
	return readOperatorToken(filepath.Join(stateDir, OperatorTokenFile))
}

func readOperatorToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("httpmcp: operator token: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if b, err := hex.DecodeString(tok); err != nil || len(b) != 32 {
		return "", fmt.Errorf("httpmcp: operator token: %s is malformed (delete it to generate a new one)", path)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("httpmcp: operator token: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return "", fmt.Errorf("httpmcp: operator token: narrowing %s to 0600: %w", path, err)
		}
	}
	return tok, nil
}
