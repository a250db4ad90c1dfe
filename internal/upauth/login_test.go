package upauth

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// A sign-in that is over before `harness mcp login` asks to wait for it
// (the browser came back first: the CLI prints the URL, then sends its
// wait) is still there to be waited for, with how it ended; it is not
// "no sign-in in progress".
func TestScenario_ASignInOverBeforeTheWaitStillAnswersIt(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource":
			fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, srv.URL+"/mcp", srv.URL)
		case "/.well-known/oauth-authorization-server":
			fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}`,
				srv.URL, srv.URL+"/authorize", srv.URL+"/token")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s := NewStore(filepath.Join(t.TempDir(), "oauth"))
	defer s.Close()
	l, err := s.Begin("mcp.up", "up", LoginConfig{URL: srv.URL + "/mcp", ClientID: "harness-test"}, nil)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The person refuses in the browser, which comes back at once.
	resp, err := http.Get(l.Redirect + "?error=access_denied&state=" + url.QueryEscape(u.Query().Get("state")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-l.Done()
	p := s.Pending("mcp.up")
	if p == nil {
		t.Fatal("the sign-in that just ended is gone: a wait sent now is told there is none")
	}
	if err := p.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("waiting for the ended sign-in: %v; want its refusal", err)
	}
}
