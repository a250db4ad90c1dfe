package httpmcp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/internal/errcode"
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

// isLoopbackHost reports whether host (without port or brackets) is
// localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return false
	}
	return ip.Unmap().IsLoopback()
}

// loopbackHostHeader reports whether a Host header value names a loopback
// host: localhost, 127.0.0.0/8 or ::1, bracketed or not, with or without a
// port. The port is not compared with the one served: an SSH tunnel
// (`ssh -L 9000:127.0.0.1:7330`) or a loopback reverse proxy forwards
// "localhost:9000", and the name alone is what DNS rebinding forges.
func loopbackHostHeader(hostport string) bool {
	host := hostport
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = h
	} else if len(host) > 2 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	return isLoopbackHost(host)
}

// loopbackOrigin reports whether an Origin header value is an http or https
// origin on a loopback host (any port). "null" and every other scheme are
// refused.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Opaque != "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return false
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return false
	}
	return u.Host != "" && loopbackHostHeader(u.Host)
}

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
