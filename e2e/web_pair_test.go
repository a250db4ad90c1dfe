//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/harness-dev/harness/internal/fleettest"
	"github.com/harness-dev/harness/internal/webtls"
)

// pairConfig is a fleet with the listener for people on loopback, with
// TLS as beyond it (so cookies are Secure and the fingerprint is real).
const pairConfig = `[web]
listen = "127.0.0.1:0"
tls = "auto"

[harness.echo]
description = "reads lines and answers them"
cmd = "sh"
args = ["-c", "while read l; do echo \"got: $l\"; done"]
enabled = true
`

// pairResult is `harness pair --json`.
type pairResult struct {
	URL         string    `json:"url"`
	Code        string    `json:"code"`
	Name        string    `json:"name"`
	Grant       []string  `json:"grant"`
	Expires     time.Time `json:"expires"`
	Fingerprint string    `json:"fingerprint"`
}

// deviceRow is a `harness devices --json` row.
type deviceRow struct {
	Name     string     `json:"name"`
	Grant    []string   `json:"grant"`
	Created  time.Time  `json:"created"`
	LastSeen *time.Time `json:"last_seen"`
	LastAddr string     `json:"last_addr"`
}

// pinnedClient is an HTTP client that trusts exactly the certificate
// whose SHA-256 is fingerprint (what a person checks on the phone), and
// follows no redirect.
func pinnedClient(fingerprint string) *http.Client {
	return &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // the pin below is the check
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) == 0 || webtls.Fingerprint(raw[0]) != fingerprint {
					return fmt.Errorf("certificate is not the one harness pair showed")
				}
				return nil
			},
		}},
	}
}

// TestScenario_APhoneIsPairedOnceAndRevokedAtOnce: `harness pair --json`
// gives a URL on the TLS listener for people whose certificate is the one
// of the fingerprint; a phone-sized Chromium opening it sees the fleet
// with a Secure, HttpOnly, SameSite=Strict device cookie; the same URL in
// a fresh browser answers 410 and signs nothing in; `harness devices`
// shows the phone with last_seen; `harness devices revoke` closes its open
// terminal within a second and its next request is 401.
func TestScenario_APhoneIsPairedOnceAndRevokedAtOnce(t *testing.T) {
	f := newFleet(t, pairConfig)
	f.waitState("echo", "running")

	var p pairResult
	f.MustJSON(&p, "pair", "--name", "phone", "--json")
	if p.Name != "phone" || strings.Join(p.Grant, ",") != "read,input" || !strings.HasPrefix(p.URL, "https://127.0.0.1:") ||
		!strings.Contains(p.URL, p.Code) || len(p.Fingerprint) != 95 || time.Until(p.Expires) < 9*time.Minute {
		t.Fatalf("pair --json = %+v", p)
	}
	for _, ttl := range []string{"1s", "48h"} {
		if out, _, code := f.Run("pair", "--ttl", ttl, "--json"); code == 0 || !strings.Contains(out, "invalid_argument") || !strings.Contains(out, "out of range") {
			t.Fatalf("pair --ttl %s: code %d, %s", ttl, code, out)
		}
	}
	// The listener's certificate is the one whose fingerprint pair showed.
	pinned := pinnedClient(p.Fingerprint)
	base := strings.SplitN(p.URL, "/pair", 2)[0]
	resp, err := pinned.Get(base + "/login")
	if err != nil {
		t.Fatalf("the listener's certificate is not the paired fingerprint: %v", err)
	}
	resp.Body.Close()
	// The MCP endpoint is never served there.
	if resp, err := pinned.Post(base+"/mcp", "application/json", strings.NewReader("{}")); err != nil || resp.StatusCode == http.StatusOK {
		t.Fatalf("POST /mcp on the listener for people: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// The phone opens the URL and sees the fleet.
	ctx := newBrowser(t, 390, 844, chromedp.Flag("ignore-certificate-errors", true))
	browse(t, ctx, "open the pairing URL on a phone",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(p.URL),
		chromedp.WaitVisible(chromedp.CSS(`tr.unit[data-name="echo"]`)),
	)
	if path := eval[string](t, ctx, `location.pathname + location.search`); path != "/" {
		t.Fatalf("after pairing the phone is at %q, want the fleet without the code", path)
	}
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	var dev *network.Cookie
	for _, c := range res.Cookies {
		if c.Name == "harness_device" {
			dev = c
		}
	}
	if dev == nil || !dev.HTTPOnly || !dev.Secure || dev.SameSite != network.CookieSameSiteStrict ||
		time.Until(time.Unix(int64(dev.Expires), 0)) < 89*24*time.Hour {
		t.Fatalf("device cookie = %+v, want HttpOnly, Secure, SameSite=Strict, 90 days", dev)
	}
	saveScreenshotOf(t, ctx, "paired-phone-fleet.png")

	// The same URL again, in a fresh browser: 410 with the reason, and
	// no sign-in.
	fresh := newBrowser(t, 390, 844, chromedp.Flag("ignore-certificate-errors", true))
	browse(t, fresh, "open the used URL in a fresh browser", chromedp.Navigate(p.URL), chromedp.WaitVisible(chromedp.CSS("#error")))
	if h := eval[string](t, fresh, `document.querySelector('h1').textContent`); h != "410" {
		t.Fatalf("a used pairing URL shows %q, want 410", h)
	}
	if msg := eval[string](t, fresh, `document.querySelector('#error').textContent`); !strings.Contains(msg, "used already") {
		t.Fatalf("a used pairing URL says %q", msg)
	}
	if st := eval[int](t, fresh, `fetch('/events').then(r => r.status)`); st != 401 {
		t.Fatalf("after a used code, /events = %d: something was signed in", st)
	}
	if resp, err := pinned.Get(p.URL); err != nil || resp.StatusCode != http.StatusGone {
		t.Fatalf("used code from a client: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// harness devices shows it, seen from loopback.
	var rows []deviceRow
	f.MustJSON(&rows, "devices", "--json")
	if len(rows) != 1 || rows[0].Name != "phone" || rows[0].LastSeen == nil || rows[0].LastAddr != "127.0.0.1" || strings.Join(rows[0].Grant, ",") != "read,input" {
		t.Fatalf("devices --json = %+v", rows)
	}

	// A terminal open on the phone closes within a second of revoke: the
	// page's, and one held by a client with the device's cookie alone (no
	// event stream to take the page away).
	browse(t, ctx, "open the echo terminal on the phone",
		chromedp.Navigate(base+"/h/echo"),
		chromedp.WaitVisible(chromedp.CSS(`#term[data-attached="1"]`)),
	)
	term := deviceTerminal(t, pinned, base, dev.Value, "echo")
	start := time.Now()
	f.MustRun("devices", "revoke", "phone")
	cli := time.Since(start)
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := term.Read(context.Background()); err != nil {
				closed <- err
				return
			}
		}
	}()
	select {
	case err := <-closed:
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("the device's terminal ended with %v, want its revocation", err)
		}
	case <-time.After(time.Second):
		t.Fatalf("the device's terminal was still open 1s after `harness devices revoke` returned (it took %v)", cli)
	}
	c1, cancel := context.WithTimeout(ctx, time.Second)
	err = chromedp.Do(c1, chromedp.WaitNotPresent(chromedp.CSS(`#term[data-attached="1"]`)))
	cancel()
	if err != nil {
		t.Fatalf("the phone's terminal was still open 1s after `harness devices revoke` returned (it took %v): %v", cli, err)
	}
	if st := eval[int](t, ctx, `fetch('/events').then(r => r.status)`); st != 401 {
		t.Fatalf("the revoked phone's next request = %d, want 401", st)
	}
	f.MustJSON(&rows, "devices", "--json")
	if len(rows) != 0 {
		t.Fatalf("devices after revoke = %+v", rows)
	}
	// An unknown device is not_found.
	if out, _, code := f.Run("devices", "revoke", "phone", "--json"); code == 0 || !strings.Contains(out, "not_found") {
		t.Fatalf("revoke of an unknown device: code %d, %s", code, out)
	}
}

// deviceTerminal attaches to name's terminal as a client with the device
// cookie alone would: a page for a session and its CSRF token, then the
// WebSocket and its hello, until the viewer is attached.
func deviceTerminal(t *testing.T, c *http.Client, base, deviceCookie, name string) *websocket.Conn {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/h/"+name, nil)
	req.AddCookie(&http.Cookie{Name: "harness_device", Value: deviceCookie})
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf-token" content="([0-9a-f]+)"`).FindSubmatch(body)
	var session string
	for _, ck := range resp.Cookies() {
		if ck.Name == "harness_session" {
			session = ck.Value
		}
	}
	if resp.StatusCode != http.StatusOK || m == nil || session == "" {
		t.Fatalf("GET /h/%s with the device cookie: %d, session %q\n%.300s", name, resp.StatusCode, session, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("Cookie", "harness_session="+session)
	h.Set("Origin", base)
	conn, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(base, "https")+"/h/"+name+"/attach", &websocket.DialOptions{HTTPClient: c, HTTPHeader: h})
	if err != nil {
		t.Fatalf("attach with the device's session: %v", err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	hello := fmt.Sprintf(`{"csrf":%q,"cols":80,"rows":24}`, m[1])
	if err := conn.Write(ctx, websocket.MessageText, []byte(hello)); err != nil {
		t.Fatal(err)
	}
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("attach: %v", err)
		}
		if typ == websocket.MessageText && strings.Contains(string(data), `"attached"`) {
			return conn
		}
	}
}

// TestScenario_APeopleListenerBeyondLoopbackWithoutTLSIsRefused: the
// daemon refuses to start on such a config and says which line and why.
func TestScenario_APeopleListenerBeyondLoopbackWithoutTLSIsRefused(t *testing.T) {
	f := &fleet{Fleet: fleettest.NewFleet(t, harnessBin, t.TempDir(), daemonEnv())}
	f.WriteConfig("[web]\nlisten = \"0.0.0.0:7443\"\n")
	cmd := f.daemonCmd()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("the daemon started on a non-loopback listen without TLS")
	}
	text := string(out) + f.Log()
	if _, ok := err.(*exec.ExitError); !ok || !strings.Contains(text, "harness.toml:2: web.listen:") || !strings.Contains(text, "needs TLS") {
		t.Fatalf("daemon: %v\n%s", err, text)
	}
}

// TestScenario_ABadCertificateStopsOnlyThePeopleListener: tls_cert files
// that do not load leave the daemon up (CLI and MCP answer), and
// daemon-info says which file and why.
func TestScenario_ABadCertificateStopsOnlyThePeopleListener(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for _, p := range []string{cert, key} {
		if err := os.WriteFile(p, []byte("not a certificate"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := newFleet(t, fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\n\n[web]\nlisten = \"0.0.0.0:0\"\ntls_cert = %q\ntls_key = %q\n\n"+
		"[harness.worker]\ncmd = \"sleep\"\nargs = [\"3600\"]\nenabled = true\n", cert, key))
	f.waitState("worker", "running")
	var info struct {
		MCPURL   string `json:"mcp_url"`
		WebURL   string `json:"web_url"`
		WebError string `json:"web_error"`
	}
	f.MustJSON(&info, "daemon-info", "--json")
	if info.WebURL != "" || !strings.Contains(info.WebError, cert) || info.MCPURL == "" {
		t.Fatalf("daemon-info: %+v", info)
	}
	// The MCP endpoint answers (a request without a token is refused by it,
	// not left unanswered).
	resp, err := http.Post(info.MCPURL, "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("MCP endpoint: %v %v", resp, err)
	}
	resp.Body.Close()
	if out, _, code := f.Run("pair", "--json"); code == 0 || !strings.Contains(out, "not serving") {
		t.Fatalf("pair without the listener: code %d, %s", code, out)
	}
	if !strings.Contains(f.Log(), "the listener for people is not served") {
		t.Fatalf("the log does not say why:\n%s", f.Log())
	}
}

// TestScenario_APairedDeviceOutlivesADaemonRestart: the auto certificate
// and the device record are kept in the state dir: after a restart the
// fingerprint is the same, the device's cookie still signs it in, and
// daemon-info shows the listener and its fingerprint.
func TestScenario_APairedDeviceOutlivesADaemonRestart(t *testing.T) {
	f := newFleet(t, pairConfig)
	var p pairResult
	f.MustJSON(&p, "pair", "--json")
	if p.Name != "device-1" {
		t.Fatalf("pair without --name named it %q", p.Name)
	}
	pinned := pinnedClient(p.Fingerprint)
	resp, err := pinned.Get(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var secret string
	for _, c := range resp.Cookies() {
		if c.Name == "harness_device" {
			secret = c.Value
		}
	}
	if resp.StatusCode != http.StatusSeeOther || secret == "" {
		t.Fatalf("pairing from a client: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if data, err := os.ReadFile(filepath.Join(f.State, "devices.json")); err != nil || strings.Contains(string(data), secret) {
		t.Fatalf("devices.json: %v (it must hold a hash, never the secret)", err)
	}

	f.Stop()
	f.start()
	var info struct {
		WebURL         string `json:"web_url"`
		WebFingerprint string `json:"web_fingerprint"`
		WebError       string `json:"web_error"`
	}
	f.MustJSON(&info, "daemon-info", "--json")
	if info.WebFingerprint != p.Fingerprint || info.WebError != "" || !strings.HasPrefix(info.WebURL, "https://127.0.0.1:") {
		t.Fatalf("daemon-info after a restart: %+v, want the fingerprint %s", info, p.Fingerprint)
	}
	req, _ := http.NewRequest(http.MethodGet, info.WebURL+"/", nil)
	req.AddCookie(&http.Cookie{Name: "harness_device", Value: secret})
	resp, err = pinnedClient(info.WebFingerprint).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the device after a restart: %d, want signed in", resp.StatusCode)
	}
	// Without --json: the URL, its QR code in half blocks, the fingerprint.
	out := f.MustRun("pair", "--name", "tablet")
	if !strings.Contains(out, info.WebURL+"/pair?code=") || !strings.Contains(out, "▄") || !strings.Contains(out, p.Fingerprint) ||
		!strings.Contains(out, "harness devices revoke tablet") {
		t.Fatalf("pair's output:\n%s", out)
	}
}
