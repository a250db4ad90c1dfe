//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// TestScenario_DescribeShowsAWorktreesPathAndBranch: plain `describe`
// (not only --json) says where a harness's worktree is and on which
// branch, and that it is made at the first start until then.
func TestScenario_DescribeShowsAWorktreesPathAndBranch(t *testing.T) {
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "add", "README")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	f := newFleet(t, fmt.Sprintf("[harness.coder]\ncmd = \"sleep\"\nargs = [\"100000\"]\nworktree = { repo = %q, base = \"main\" }\n", repo))

	wt := f.worktree("coder")
	want := fmt.Sprintf("\nworktree:       %s (branch harness/coder from main, repo %s)", wt.Path, repo)
	if out := f.MustRun("describe", "coder"); !strings.Contains(out, want+", made at the first start\n") {
		t.Fatalf("describe of a harness not started yet lacks %q:\n%s", want, out)
	}
	f.MustRun("start", "coder")
	f.waitState("coder", "running")
	if wt = f.worktree("coder"); !wt.Created || wt.Branch != "harness/coder" {
		t.Fatalf("worktree after start = %+v", wt)
	}
	if out := f.MustRun("describe", "coder"); !strings.Contains(out, want+"\n") {
		t.Fatalf("describe lacks the worktree's path and branch %q:\n%s", want, out)
	}
	f.MustRun("stop", "coder")
	f.waitState("coder", "stopped")
}
