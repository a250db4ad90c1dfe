//go:build e2e

package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestScenario_DaemonInfoAndTheLogNameTheDashboard: with mcp_http set,
// `daemon-info` (text and --json) and the daemon's log say where the web
// dashboard is, once, and that address serves its sign-in page; without
// mcp_http neither names one.
func TestScenario_DaemonInfoAndTheLogNameTheDashboard(t *testing.T) {
	f := newFleet(t, "[daemon]\nmcp_http = \"127.0.0.1:0\"\n\n[harness.idle]\ncmd = \"sleep\"\nargs = [\"3600\"]\n")
	var info struct {
		MCPURL       string `json:"mcp_url"`
		DashboardURL string `json:"dashboard_url"`
	}
	f.MustJSON(&info, "daemon-info")
	if want := strings.TrimSuffix(info.MCPURL, "mcp"); info.DashboardURL != want || !strings.HasPrefix(want, "http://127.0.0.1:") {
		t.Fatalf("daemon-info --json dashboard_url = %q, want %q (mcp_url %q)", info.DashboardURL, want, info.MCPURL)
	}
	if out := f.MustRun("daemon-info"); !strings.Contains(out, "\ndashboard: "+info.DashboardURL+"\n") {
		t.Fatalf("daemon-info does not name the dashboard %s:\n%s", info.DashboardURL, out)
	}
	f.WaitFor("the daemon to boot", 10*time.Second, func() bool { return strings.Contains(f.Log(), "daemon booted") })
	log := f.Log()
	if n := strings.Count(log, `msg="web dashboard serving"`); n != 1 || !strings.Contains(log, `msg="web dashboard serving" url=`+info.DashboardURL+"\n") {
		t.Fatalf("the log names the dashboard %d times, want once with url=%s:\n%s", n, info.DashboardURL, log)
	}
	resp, err := http.Get(info.DashboardURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login" {
		t.Fatalf("GET %s = %d at %s, want the sign-in page", info.DashboardURL, resp.StatusCode, resp.Request.URL)
	}

	plain := newFleet(t, "[harness.idle]\ncmd = \"sleep\"\nargs = [\"3600\"]\n")
	if out := plain.MustRun("daemon-info", "--json"); strings.Contains(out, "dashboard_url") {
		t.Fatalf("a daemon without mcp_http names a dashboard:\n%s", out)
	}
	if out := plain.MustRun("daemon-info"); strings.Contains(out, "dashboard:") {
		t.Fatalf("a daemon without mcp_http names a dashboard:\n%s", out)
	}
}
