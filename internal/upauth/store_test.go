package upauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/harness-dev/harness/internal/errcode"
)

// The store: one 0600 file per upstream in a 0700 directory, names that
// are one path element whatever the unit, and the reasons an upstream
// needs a login.
func TestScenario_TheStoreKeepsOneSignInPerUpstreamReadableByTheDaemonOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	s := NewStore(dir)
	if needs, why := s.NeedsLogin("proj/mcp.gh"); !needs || why != "not signed in" {
		t.Errorf("before a sign-in: %v %q", needs, why)
	}
	rec := &Record{ClientID: "c", TokenURL: "http://127.0.0.1/token",
		Token: &oauth2.Token{AccessToken: "access-0123456789", RefreshToken: "refresh-0123456789", Expiry: time.Now().Add(time.Hour)}}
	if err := s.Save("proj/mcp.gh", rec); err != nil {
		t.Fatal(err)
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 1 || files[0].Name() != "proj%2Fmcp.gh.json" {
		t.Fatalf("files: %v", files)
	}
	if fi, _ := os.Stat(filepath.Join(dir, files[0].Name())); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", fi.Mode())
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", fi.Mode())
	}
	if needs, _ := s.NeedsLogin("proj/mcp.gh"); needs {
		t.Error("needs a login with a token")
	}
	got, err := s.Load("proj/mcp.gh")
	if err != nil || got.Token.RefreshToken != "refresh-0123456789" {
		t.Fatalf("load: %+v %v", got, err)
	}

	got.Refused, got.Token = "invalid_grant at noon", nil
	if err := s.Save("proj/mcp.gh", got); err != nil {
		t.Fatal(err)
	}
	if needs, why := s.NeedsLogin("proj/mcp.gh"); !needs || !strings.Contains(why, "invalid_grant") {
		t.Errorf("after a refused refresh: %v %q", needs, why)
	}
	if err := s.Delete("proj/mcp.gh"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("proj/mcp.gh"); err != nil {
		t.Errorf("a second delete: %v", err)
	}
	if needs, why := s.NeedsLogin("proj/mcp.gh"); !needs || why != "not signed in" {
		t.Errorf("after logout: %v %q", needs, why)
	}
}

// A handler with no sign-in says to log in, as upstream_unavailable, and
// never reaches the network.
func TestScenario_NoSignInIsNeedsLoginWithTheCommandToRun(t *testing.T) {
	h := NewStore(t.TempDir()).Handler("mcp.gh", "gh", nil)
	ts, _ := h.TokenSource(t.Context())
	_, err := ts.Token()
	var le *LoginError
	if !errors.As(err, &le) || !errors.Is(err, ErrNeedsLogin) || errcode.Of(err) != errcode.UpstreamUnavailable {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "harness mcp login gh") {
		t.Errorf("err %q does not say what to run", err)
	}
}

// How early a token is refreshed: 30 s before it expires, or with a third
// of its life left when it lives less than 90 s.
func TestRefreshAheadFollowsTheTokensLife(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		life time.Duration
		want time.Duration
	}{{time.Hour, 30 * time.Second}, {90 * time.Second, 30 * time.Second}, {6 * time.Second, 2 * time.Second}} {
		r := &Record{Obtained: t0, Token: &oauth2.Token{Expiry: t0.Add(tt.life)}}
		if got := ahead(r); got != tt.want {
			t.Errorf("life %v: ahead %v, want %v", tt.life, got, tt.want)
		}
	}
	if got := ahead(&Record{Token: &oauth2.Token{Expiry: t0}}); got != refreshAhead {
		t.Errorf("unknown life: %v", got)
	}
}

// A stored token still fresh is handed out as it is, and remembered for
// hiding in answers.
func TestScenario_AFreshTokenIsUsedWithoutARefresh(t *testing.T) {
	s := NewStore(t.TempDir())
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	// The token URL is nowhere: a refresh would fail the test.
	if err := s.Save("mcp.gh", &Record{ClientID: "c", TokenURL: "http://127.0.0.1:1/token", Obtained: now,
		Token: &oauth2.Token{AccessToken: "access-0123456789", RefreshToken: "refresh-0123456789", Expiry: now.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	h := s.Handler("mcp.gh", "gh", nil)
	h.now = func() time.Time { return now.Add(59 * time.Minute) }
	tok, err := h.token(false)
	if err != nil || tok.AccessToken != "access-0123456789" {
		t.Fatalf("token: %v %v", tok, err)
	}
	if got := h.Tokens(); len(got) != 2 {
		t.Errorf("Tokens() = %d values", len(got))
	}
	// 29 s before it expires it is refreshed, and the refresh
	// fails on the unreachable server without giving up the sign-in.
	h.now = func() time.Time { return now.Add(time.Hour - 29*time.Second) }
	if _, err := h.token(false); err == nil || errors.Is(err, ErrNeedsLogin) || strings.Contains(err.Error(), "refresh-0123456789") {
		t.Errorf("refresh against nothing: %v", err)
	}
	if needs, _ := s.NeedsLogin("mcp.gh"); needs {
		t.Error("an unreachable server cost the sign-in")
	}
}

// A token endpoint that accepts the refresh and never answers does not
// hold the upstream: every request of its connections waits on the same
// refresh (under the handler's lock), so the refresh is bounded and says
// the server could not be reached, keeping the sign-in.
func TestScenario_ATokenEndpointThatNeverAnswersDoesNotHoldTheUpstream(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the handler
	defer func(d time.Duration) { refreshTimeout = d }(refreshTimeout)
	refreshTimeout = 200 * time.Millisecond

	s := NewStore(t.TempDir())
	now := time.Now()
	if err := s.Save("mcp.gh", &Record{ClientID: "c", TokenURL: srv.URL + "/token", Obtained: now.Add(-time.Hour),
		Token: &oauth2.Token{AccessToken: "access-0123456789", RefreshToken: "refresh-0123456789", Expiry: now.Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	h := s.Handler("mcp.gh", "gh", nil)
	done := make(chan error, 1)
	go func() { _, err := h.token(false); done <- err }()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, ErrNeedsLogin) || errcode.Of(err) != errcode.UpstreamUnavailable {
			t.Fatalf("a refresh nobody answers: %v; want upstream_unavailable, the sign-in kept", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the refresh still waits for a token endpoint that never answers")
	}
	if needs, _ := s.NeedsLogin("mcp.gh"); needs {
		t.Error("a silent token endpoint cost the sign-in")
	}
}
