package httpmcp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/harness-dev/harness/internal/mcp/mcptest"
	"github.com/harness-dev/harness/internal/mcp/session"
)

// metricsEnv serves the handler with a stand-in metrics handler.
func metricsEnv(t *testing.T) (addr string, auth *mcptest.Auth) {
	t.Helper()
	auth = mcptest.NewAuth()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := session.NewManager(mcptest.NewOps(), auth, nil, nil, logger, "test")
	t.Cleanup(m.Close)
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	h := NewHandler(Options{
		Sessions: m, OperatorToken: operatorToken, Logger: logger,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "harness_up 1\n")
		}),
	})
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return addr, auth
}

func get(t *testing.T, method, url, token, host string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := httpClient(t, "").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestMetricsNeedTheOperatorToken(t *testing.T) {
	addr, auth := metricsEnv(t)
	auth.Add("tok-web", "web", "read", "write")
	url := "http://" + addr + MetricsPath
	code, hdr, _ := get(t, http.MethodGet, url, "", "")
	if code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("no token: %d %v", code, hdr)
	}
	if code, _, _ := get(t, http.MethodGet, url, "wrong", ""); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	if code, _, _ := get(t, http.MethodGet, url, "tok-web", ""); code != http.StatusForbidden {
		t.Errorf("a harness token: %d, want 403", code)
	}
	if code, _, _ := get(t, http.MethodGet, url, operatorToken, "evil.example:80"); code != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", code)
	}
	if code, _, _ := get(t, http.MethodPost, url, operatorToken, ""); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", code)
	}
	if code, _, body := get(t, http.MethodGet, url, operatorToken, ""); code != http.StatusOK || body != "harness_up 1\n" {
		t.Errorf("operator: %d %q", code, body)
	}
}

func TestNoMetricsHandlerIs404(t *testing.T) {
	e := newEnv(t)
	if code, _, _ := get(t, http.MethodGet, "http://"+e.addr+MetricsPath, operatorToken, ""); code != http.StatusNotFound {
		t.Errorf("metrics off: %d, want 404", code)
	}
}
