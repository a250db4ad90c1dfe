package httpmcp

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/harness-dev/harness/internal/errcode"
)

func TestCheckLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.1:8765", "127.1.2.3:1", "[::1]:0", "localhost:0", "LocalHost:1"} {
		if err := CheckLoopback(addr); err != nil {
			t.Errorf("%s refused: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:1", "192.168.1.1:1", ":8765", "[::]:1", "example.com:1", "[::ffff:192.168.1.1]:1", "[fe80::1%lo]:1", "127.0.0.1", "localhost"} {
		err := CheckLoopback(addr)
		if err == nil {
			t.Errorf("%s accepted", addr)
			continue
		}
		if !errors.Is(err, errcode.ErrConfigInvalid) {
			t.Errorf("%s: %v does not carry config_invalid", addr, err)
		}
	}
}

func TestListen(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := Listen(addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if err := CheckLoopback(ln.Addr().String()); err != nil {
			t.Errorf("%s listened on %s: %v", addr, ln.Addr(), err)
		}
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if ln, err := Listen("0.0.0.0:0"); err == nil {
		_ = ln.Close()
		t.Fatal("listened on all interfaces")
	}
}

func TestOperatorTokenIsCreatedOnceWith0600(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	tok, err := LoadOrCreateOperatorToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 64 {
		t.Fatalf("token %q: want 64 hex characters", tok)
	}
	path := filepath.Join(dir, OperatorTokenFile)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", info.Mode().Perm())
	}
	if dinfo, err := os.Stat(dir); err != nil || dinfo.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %v (%v), want 0700", dinfo.Mode().Perm(), err)
	}
	again, err := LoadOrCreateOperatorToken(dir)
	if err != nil || again != tok {
		t.Fatalf("second load %q, %v; want %q", again, err, tok)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("state dir holds %v (%v), want only the token file", entries, err)
	}

	// A file others can read is narrowed back.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if again, err := LoadOrCreateOperatorToken(dir); err != nil || again != tok {
		t.Fatalf("load after chmod: %q, %v", again, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode after load %v (%v), want 0600", info.Mode().Perm(), err)
	}

	// A damaged file is an error, never silently replaced.
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateOperatorToken(dir); err == nil {
		t.Fatal("a malformed token file was accepted")
	}
}

func TestOperatorTokenConcurrentCreatorsAgree(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	toks := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tok, err := LoadOrCreateOperatorToken(dir)
			if err != nil {
				t.Errorf("creator %d: %v", i, err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	for i := range toks {
		if toks[i] != toks[0] {
			t.Fatalf("creators disagree: %q vs %q", toks[i], toks[0])
		}
	}
}
