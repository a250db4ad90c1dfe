package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestScenario_TheDashboardIsAnInstallableApp: the manifest (name,
// standalone, start_url and scope, icons 192 and 512), the icons (PNGs
// of their sizes) and the service worker are served without a sign-in,
// as a browser fetches them; the CSP lets the page load them; the
// signed-in page links the manifest and titles itself with the waiting
// count; /waiting needs a sign-in and counts the waiting agents.
func TestScenario_TheDashboardIsAnInstallableApp(t *testing.T) {
	r := newRig(t)
	get := func(c *http.Client, path string) (*http.Response, []byte) {
		t.Helper()
		resp, err := c.Get(r.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	anon := r.client()
	resp, body := get(anon, "/manifest.webmanifest")
	var m struct {
		Name      string `json:"name"`
		ShortName string `json:"short_name"`
		StartURL  string `json:"start_url"`
		Scope     string `json:"scope"`
		Display   string `json:"display"`
		Icons     []struct{ Src, Sizes, Type string }
	}
	json.Unmarshal(body, &m)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/manifest+json" || m.Name != "harness" || m.ShortName != "harness" ||
		m.StartURL != "/" || m.Scope != "/" || m.Display != "standalone" || len(m.Icons) != 2 {
		t.Fatalf("manifest: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	for _, ic := range m.Icons {
		resp, b := get(anon, ic.Src)
		img, err := png.Decode(bytes.NewReader(b))
		if resp.StatusCode != 200 || err != nil || ic.Type != "image/png" ||
			ic.Sizes != fmt.Sprintf("%[1]dx%[1]d", img.Bounds().Dx()) || img.Bounds().Dx() != img.Bounds().Dy() {
			t.Errorf("icon %+v: %d %v", ic, resp.StatusCode, err)
		}
	}
	resp, body = get(anon, "/sw.js")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(string(body), "caches.open") {
		t.Fatalf("sw.js: %d %v", resp.StatusCode, resp.Header)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "manifest-src 'self'") || !strings.Contains(csp, "worker-src 'self'") {
		t.Errorf("CSP: %s", csp)
	}
	if resp, _ := get(anon, "/waiting"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/waiting signed out: %d", resp.StatusCode)
	}

	c := r.client()
	r.signIn(c, operatorToken)
	_, page, _ := r.page(c, "/")
	if !strings.Contains(page, `<link rel="manifest" href="/manifest.webmanifest">`) || !strings.Contains(page, "<title>(1) Fleet · harness</title>") {
		t.Errorf("the fleet page: %s", page)
	}
	if resp, body := get(c, "/waiting"); resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"waiting":1}` {
		t.Errorf("/waiting: %d %s", resp.StatusCode, body)
	}
}
