package device

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestScenario_APairingCodeSignsInOnceBeforeItExpires: a code signs one
// device in with its grant; used again it says so, and a code past its
// ttl (on an injected clock) says it expired; neither signs anything in.
func TestScenario_APairingCodeSignsInOnceBeforeItExpires(t *testing.T) {
	dir := t.TempDir()
	c := &clock{time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	s, err := Open(dir, c.now)
	if err != nil {
		t.Fatal(err)
	}
	code, p, err := s.Pair("phone", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "phone" || strings.Join(p.Grant, ",") != "read,input" || !p.Expires.Equal(c.t.Add(10*time.Minute)) {
		t.Fatalf("pair %+v", p)
	}
	secret, d, err := s.Redeem(code, "192.0.2.9")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "phone" || !d.Grant.Allows(api.FacadeNamespace, api.Input) || d.Grant.Allows(api.FacadeNamespace, api.Write) {
		t.Fatalf("device %+v", d)
	}
	if _, _, err := s.Redeem(code, "192.0.2.10"); !errors.Is(err, ErrCodeUsed) {
		t.Fatalf("second use: %v", err)
	}
	if got, ok := s.Check(secret, "192.0.2.9"); !ok || got.Name != "phone" {
		t.Fatalf("check %v %v", got, ok)
	}
	// The file holds the hash, never the secret.
	data, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil || strings.Contains(string(data), secret) || !strings.Contains(string(data), hashOf(secret)) {
		t.Fatalf("devices.json: %v\n%s", err, data)
	}

	late, _, err := s.Pair("tablet", []string{"read"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(time.Minute)
	if _, _, err := s.Redeem(late, "192.0.2.9"); !errors.Is(err, ErrCodeExpired) {
		t.Fatalf("expired code: %v", err)
	}
	if len(s.List()) != 1 {
		t.Fatalf("an expired code paired a device: %+v", s.List())
	}
	// A daemon started again knows the device by its secret.
	again, err := Open(dir, c.now)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Check(secret, "192.0.2.9"); !ok {
		t.Fatal("the device was not kept")
	}
	for _, ttl := range []time.Duration{time.Second, 48 * time.Hour} {
		if _, _, err := s.Pair("x", nil, ttl); !errors.Is(err, errcode.ErrInvalidArgument) || !strings.Contains(err.Error(), "out of range") {
			t.Fatalf("ttl %s: %v", ttl, err)
		}
	}
	if _, _, err := s.Pair("phone", nil, 0); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Fatalf("a second phone: %v", err)
	}
}

// TestScenario_AFloodOfWrongCodesIsRefusedCheaply: past the burst of
// wrong codes every attempt is refused, the right code too, until the
// bucket refills.
func TestScenario_AFloodOfWrongCodesIsRefusedCheaply(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	s, err := Open(t.TempDir(), c.now)
	if err != nil {
		t.Fatal(err)
	}
	code, _, err := s.Pair("phone", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range wrongBurst {
		if _, _, err := s.Redeem("guess"+string(rune('a'+i)), "203.0.113.1"); !errors.Is(err, ErrCodeUnknown) {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	if _, _, err := s.Redeem(code, "192.0.2.9"); !errors.Is(err, ErrTooMany) {
		t.Fatalf("after the flood: %v", err)
	}
	c.t = c.t.Add(wrongRefill)
	if _, _, err := s.Redeem(code, "192.0.2.9"); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
}

// TestScenario_RevokingADeviceEndsItAtOnce: its secret checks no more,
// its Revoked channel is closed, and an unknown name is not_found naming
// the paired ones.
func TestScenario_RevokingADeviceEndsItAtOnce(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, n := range []string{"phone", "tablet"} {
		code, _, err := s.Pair(n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		sec, _, err := s.Redeem(code, "192.0.2.9")
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, sec)
	}
	d, _ := s.Check(secrets[0], "192.0.2.9")
	if _, err := s.Revoke("phone"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Revoked:
	default:
		t.Fatal("Revoked not closed")
	}
	if _, ok := s.Check(secrets[0], "192.0.2.9"); ok {
		t.Fatal("a revoked device still checks")
	}
	if _, err := s.Revoke("laptop"); !errors.Is(err, errcode.ErrNotFound) || !strings.Contains(err.Error(), "tablet") {
		t.Fatalf("unknown device: %v", err)
	}
}
