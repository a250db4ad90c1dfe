//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenario_AWorktreeWorksOnItsFirstRun: the repository's ignored files
// named in .worktreeinclude (.env, mode kept) are copied into a new
// worktree, an included file git does not ignore is not; setup runs once
// in it before the first run with its output in the harness's log; two
// harnesses with ports get different ones, in their env, and keep them
// across a daemon restart; teardown runs before `worktree remove`. A
// failing setup fails the start with setup_failed and its last lines.
func TestScenario_AWorktreeWorksOnItsFirstRun(t *testing.T) {
	repo := newLandRepo(t)
	landPut(t, filepath.Join(repo, ".env"), "SECRET_URL=x\n")
	os.Chmod(filepath.Join(repo, ".env"), 0o600)
	landPut(t, filepath.Join(repo, "notes.txt"), "untracked, not ignored\n")
	landPut(t, filepath.Join(repo, ".worktreeinclude"), ".env\nnotes.txt\n")
	out := t.TempDir()
	agent := `cmd = "sh"
args = ["-c", "echo \"$HARNESS_PORT $HARNESS_PORTS\" > ports.txt; exec sleep 100000"]
ports = 2
setup = ["sh", "-c", "echo ran >> setup.count; echo installing deps for $HARNESS_NAME on $HARNESS_PORT"]
`
	f := newFleet(t, fmt.Sprintf(`
[harness.a]
%s
worktree = { repo = %[2]q, base = "main" }
teardown = ["sh", "-c", "echo $HARNESS_NAME > %[3]s/teardown-$HARNESS_NAME"]

[harness.b]
%[1]s
worktree = { repo = %[2]q, base = "main" }

[harness.broken]
cmd = "sleep"
args = ["100000"]
worktree = { repo = %[2]q, base = "main" }
setup = ["sh", "-c", "echo step one; echo it went wrong here >&2; exit 3"]
`, agent, repo, out))
	f.MustRun("start", "a", "b")
	wa, wb := f.worktree("a").Path, f.worktree("b").Path
	ports := func(wt string) []string {
		var s string
		f.WaitFor("ports.txt in "+wt, 20*time.Second, func() bool {
			b, err := os.ReadFile(filepath.Join(wt, "ports.txt"))
			s = strings.TrimSpace(string(b))
			return err == nil && s != ""
		})
		return strings.Fields(s)
	}
	pa, pb := ports(wa), ports(wb)
	if len(pa) != 2 || len(pb) != 2 || !strings.HasPrefix(pa[1], pa[0]+",") || pa[0] == pb[0] || strings.Contains(pb[1], pa[0]) {
		t.Fatalf("ports: a %q, b %q", pa, pb)
	}

	// .worktreeinclude: the ignored .env with its mode, not notes.txt.
	fi, err := os.Stat(filepath.Join(wa, ".env"))
	if err != nil || fi.Mode().Perm() != 0o600 || landRead(t, filepath.Join(wa, ".env")) != "SECRET_URL=x\n" {
		t.Fatalf(".env in the worktree: %v %v", fi, err)
	}
	if landExists(filepath.Join(wa, "notes.txt")) {
		t.Fatal("a file git does not ignore was copied")
	}

	// Setup ran once, before the first run, into the log.
	if got := landRead(t, filepath.Join(wa, "setup.count")); got != "ran\n" {
		t.Fatalf("setup.count: %q", got)
	}
	if logs := f.MustRun("logs", "a"); !strings.Contains(logs, "installing deps for a on "+pa[0]) {
		t.Fatalf("setup's output is not in the log:\n%s", logs)
	}

	// A daemon restart: the same ports, no second setup.
	f.MustRun("stop", "a", "b")
	os.Remove(filepath.Join(wa, "ports.txt"))
	f.Stop()
	f.start()
	f.MustRun("start", "a")
	if again := ports(wa); strings.Join(again, " ") != strings.Join(pa, " ") {
		t.Fatalf("ports after a restart %q, before %q", again, pa)
	}
	if got := landRead(t, filepath.Join(wa, "setup.count")); got != "ran\n" {
		t.Fatalf("setup ran again: %q", got)
	}

	// Teardown before the worktree goes.
	f.MustRun("stop", "a")
	f.waitState("a", "stopped")
	f.MustRun("worktree", "remove", "a", "--force")
	if got := landRead(t, filepath.Join(out, "teardown-a")); got != "a\n" {
		t.Fatalf("teardown wrote %q", got)
	}

	// A failing setup: the start fails, saying so with its last lines, and
	// the run history has it.
	o, errOut, code := f.Run("start", "broken")
	if code == 0 || !strings.Contains(errOut, "setup_failed") || !strings.Contains(errOut, "it went wrong here") {
		t.Fatalf("start with a failing setup: exit %d\n%s%s", code, o, errOut)
	}
	if st := f.unit("broken").State; st == "running" {
		t.Fatal("broken runs after its setup failed")
	}
	var runs []struct {
		Outcome string `json:"outcome"`
		Note    string `json:"note"`
	}
	if err := json.Unmarshal([]byte(f.MustRun("runs", "broken", "--json")), &runs); err != nil || len(runs) == 0 ||
		runs[0].Outcome != "setup_failed" || !strings.Contains(runs[0].Note, "it went wrong here") {
		t.Fatalf("runs of broken: %+v %v", runs, err)
	}
	var desc struct {
		Config struct {
			Ports []int `json:"ports"`
		} `json:"config"`
	}
	f.MustJSON(&desc, "describe", "b")
	if fmt.Sprint(desc.Config.Ports) != "["+strings.ReplaceAll(pb[1], ",", " ")+"]" {
		t.Fatalf("describe b shows ports %v, its env %s", desc.Config.Ports, pb[1])
	}
	if d := f.MustRun("describe", "broken"); !strings.Contains(d, "setup_failed") {
		t.Fatalf("describe does not show the failed setup:\n%s", d)
	}
}
