package web

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/device"
)

// pairRig is a dashboard with a device store, answering to box.lan too.
func pairRig(t *testing.T) (*rig, *device.Store) {
	t.Helper()
	r := &rig{t: t, b: newFake(), state: t.TempDir(), now: time.Now()}
	store, err := device.Open(r.state, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Backend: r.b, OperatorToken: operatorToken, StateDir: r.state, SessionTTL: time.Hour,
		Logger: slog.New(slog.DiscardHandler), Now: r.clock, Devices: store, Hosts: []string{"box.lan"}})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.ts = httptest.NewServer(srv)
	t.Cleanup(func() {
		r.ts.CloseClientConnections()
		r.ts.Close()
		srv.Close()
	})
	return r, store
}

// TestScenario_APairingURLSignsOneDeviceInForGood: a good code sets the
// device cookie and goes to the fleet; the cookie alone signs in again
// (a new session); the code used again, or a wrong one, is 410 with the
// reason and no cookie; after revoke the device is signed out.
func TestScenario_APairingURLSignsOneDeviceInForGood(t *testing.T) {
	r, store := pairRig(t)
	code, _, err := store.Pair("phone", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	phone := r.client()
	resp, err := phone.Get(r.ts.URL + "/pair?code=" + code)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var dev *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == deviceCookie {
			dev = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || dev == nil || !dev.HttpOnly ||
		dev.SameSite != http.SameSiteStrictMode || dev.MaxAge < 89*24*3600 {
		t.Fatalf("pairing = %d to %q, device cookie %+v", resp.StatusCode, resp.Header.Get("Location"), dev)
	}
	if st, body, _ := r.page(phone, "/"); st != http.StatusOK || !strings.Contains(body, "device phone") {
		t.Fatalf("the paired phone's fleet = %d", st)
	}
	// The device cookie alone (a browser restarted, its session gone).
	again := r.client()
	u, _ := url.Parse(r.ts.URL)
	again.Jar.SetCookies(u, []*http.Cookie{{Name: deviceCookie, Value: dev.Value}})
	if st, _, _ := r.page(again, "/"); st != http.StatusOK {
		t.Fatalf("the device cookie alone = %d, want signed in", st)
	}
	for _, c := range []string{code, "not-a-code"} {
		other := r.client()
		resp, err := other.Get(r.ts.URL + "/pair?code=" + c)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusGone || len(resp.Cookies()) != 0 {
			t.Fatalf("code %q again = %d, cookies %v: want 410 and nothing signed in", c, resp.StatusCode, resp.Cookies())
		}
	}
	if _, err := store.Revoke("phone"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*http.Client{phone, again} {
		if st, _ := r.location(c, "/events"); st != http.StatusUnauthorized {
			t.Fatalf("a revoked device's /events = %d, want 401", st)
		}
		if st, loc := r.location(c, "/"); st != http.StatusSeeOther || loc != "/login" {
			t.Fatalf("a revoked device's fleet = %d to %q", st, loc)
		}
	}
}

// TestScenario_AFloodOfWrongPairingCodesIs429: past the bucket of wrong
// codes, the pairing URL answers 429.
func TestScenario_AFloodOfWrongPairingCodesIs429(t *testing.T) {
	r, _ := pairRig(t)
	c := r.client()
	got := map[int]int{}
	for range 30 {
		resp, err := c.Get(r.ts.URL + "/pair?code=guess")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got[resp.StatusCode]++
	}
	if got[http.StatusGone] == 0 || got[http.StatusTooManyRequests] < 15 {
		t.Fatalf("30 wrong codes answered %v, want 410s then 429s", got)
	}
}

// TestScenario_TheListenersOwnNamesPassTheHostCheck: a name of the
// listener for people passes Host and Origin; another is refused.
func TestScenario_TheListenersOwnNamesPassTheHostCheck(t *testing.T) {
	r, _ := pairRig(t)
	for _, tt := range []struct {
		host, origin string
		want         int
	}{
		{"box.lan:7443", "", http.StatusOK},
		{"BOX.lan", "https://box.lan:7443", http.StatusOK},
		{"evil.example", "", http.StatusForbidden},
		{"box.lan", "https://evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodGet, r.ts.URL+"/login", nil)
		req.Host = tt.host
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Fatalf("Host %q Origin %q = %d, want %d", tt.host, tt.origin, resp.StatusCode, tt.want)
		}
	}
}
