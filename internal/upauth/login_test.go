package upauth

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/errcode"
)

// A sign-in that cannot start (the server is not there, or it asks for no
// token) is an error of Begin only: its text hides the URL's secrets, it
// keeps its code, and the finished callback, which takes nil for a
// sign-in that ended well, is never called.
func TestScenario_ASignInThatCannotStartSaysWhyWithoutTheURLsSecretAndIsNotTakenForASuccess(t *testing.T) {
	const secret = "qs-secret-0123456789"
	open := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer open.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name, base string
		code       errcode.Code
	}{
		{"unreachable", gone, errcode.UpstreamUnavailable},
		{"no 401", open.URL, errcode.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, err := endpoint.Resolve(tc.base+"/mcp?key="+secret, nil, func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			s := NewStore(filepath.Join(t.TempDir(), "oauth"))
			called := false
			l, err := s.Begin("mcp.up", "up", LoginConfig{URL: target.URL, Secrets: target.Secrets}, func(error) { called = true })
			if err == nil {
				t.Fatalf("Begin started a sign-in: %+v", l)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the URL's secret: %v", err)
			}
			if got := errcode.Of(err); got != tc.code {
				t.Errorf("code %s, want %s (%v)", got, tc.code, err)
			}
			if called {
				t.Error("finished was called for a sign-in that never started")
			}
			if s.Pending("mcp.up") != nil {
				t.Error("a sign-in is left pending")
			}
		})
	}
}
