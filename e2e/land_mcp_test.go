//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestScenario_AnMCPClientWithWriteLandsAHarness: harness_land does what
// `harness land` does, and a conflict is a tool error with code conflict.
func TestScenario_AnMCPClientWithWriteLandsAHarness(t *testing.T) {
	repo := newLandRepo(t)
	agent := func(script string) string {
		return fmt.Sprintf("cmd = \"sh\"\nargs = [\"-c\", %q]\nworktree = { repo = %q, base = \"main\" }\n", script+"; exec sleep 100000", repo)
	}
	f := newFleet(t, "[harness.m]\n"+agent("echo m > m.txt")+"\n[harness.c]\n"+agent("echo theirs > README"))
	f.MustRun("start", "m", "c")
	mwt, cwt := f.worktree("m").Path, f.worktree("c").Path
	f.WaitFor("the agents' work", 20*time.Second, func() bool {
		return landExists(filepath.Join(mwt, "m.txt")) && landRead(t, filepath.Join(cwt, "README")) == "theirs\n"
	})
	landPut(t, filepath.Join(repo, "README"), "ours\n")
	gitRun(t, repo, "commit", "-q", "-am", "ours")

	s := f.mcpSession("", true, nil)
	res := callTool(t, s, "harness_land", map[string]any{"name": "m", "message": "m: via MCP"})
	var r landResult
	resultJSON(t, res, &r)
	if res.IsError || r.Mode != "merge" || !r.Removed || landRead(t, filepath.Join(repo, "m.txt")) != "m\n" {
		t.Fatalf("harness_land m: %+v %+v", res, r)
	}
	head := gitRun(t, repo, "rev-parse", "HEAD")
	res = callTool(t, s, "harness_land", map[string]any{"name": "c"})
	if code := errorCode(t, res); code != "conflict" || gitRun(t, repo, "rev-parse", "HEAD") != head {
		t.Fatalf("harness_land c: code %q, result %+v", code, res)
	}
}
