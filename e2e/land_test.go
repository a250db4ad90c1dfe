//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario_LandBringsEachBranchHomeOrRefusesChangingNothing, with
// real git and plain programs as agents: a harness whose work is
// uncommitted lands by fast-forward, one whose base moved on lands with a
// merge commit, one with commits of its own lands squashed; each is
// stopped (its process gone) and its worktree removed. A conflicting land
// is refused listing the file and leaves both checkouts byte for byte as
// they were; a dirty checkout and one off base are refused saying what to
// do.
func TestScenario_LandBringsEachBranchHomeOrRefusesChangingNothing(t *testing.T) {
	repo := newLandRepo(t)
	agent := func(script string) string {
		return fmt.Sprintf("cmd = \"sh\"\nargs = [\"-c\", %q]\nworktree = { repo = %q, base = \"main\" }\n%s\n", script+"; exec sleep 100000", repo, gitEnvTOML)
	}
	f := newFleet(t, "[harness.ff]\n"+agent("echo ff > ff.txt; touch ff.done")+
		"\n[harness.mc]\n"+agent("echo mc > mc.txt; touch mc.done")+
		"\n[harness.sq]\n"+agent("echo 1 > sq1.txt && git add sq1.txt && git commit -qm one && echo 2 > sq2.txt; touch sq.done")+
		"\n[harness.cf]\n"+agent("echo theirs > README; touch cf.done")+
		"\n[harness.kp]\n"+agent("echo kp > kp.txt; touch kp.done"))
	f.MustRun("start", "ff", "mc", "sq", "cf", "kp")
	for _, n := range []string{"ff", "mc", "sq", "cf", "kp"} {
		wt := f.worktree(n).Path
		f.WaitFor(n+" to do its work", 20*time.Second, func() bool { return landExists(filepath.Join(wt, n+".done")) })
	}
	// The agents leave their marker files; a real agent's are its work.
	pidOf := func(n string) int { return f.waitState(n, "running").PID }

	// Fast-forward: uncommitted work is committed with the trailers, base
	// moves to it, the harness is stopped and its worktree removed.
	wt, pid := f.worktree("ff").Path, pidOf("ff")
	var r landResult
	f.MustJSON(&r, "land", "ff", "--message", "ff: the work")
	if r.Mode != "fast-forward" || !r.Merged || !r.Removed || r.Base != "main" || r.Branch != "harness/ff" || r.Committed == "" {
		t.Fatalf("land ff: %+v", r)
	}
	if head := gitRun(t, repo, "rev-parse", "main"); head != r.Commit || head != r.Committed {
		t.Fatalf("main is %s, land says %s (committed %s)", head, r.Commit, r.Committed)
	}
	if msg := gitRun(t, repo, "log", "-1", "--format=%B"); !strings.HasPrefix(msg, "ff: the work") || !strings.Contains(msg, "Harness: ff") || !strings.Contains(msg, "Agent: generic") {
		t.Fatalf("commit message:\n%s", msg)
	}
	if landRead(t, filepath.Join(repo, "ff.txt")) != "ff\n" {
		t.Fatal("ff.txt is not in the checkout")
	}
	if landExists(wt) || f.worktree("ff").Created {
		t.Fatal("the worktree is still there")
	}
	waitGone(t, "ff's process", pid)
	f.waitState("ff", "stopped")

	// Base moved on (ff landed): mc lands with a merge commit, and says so.
	f.MustJSON(&r, "land", "mc")
	if r.Mode != "merge" || !r.Removed || len(r.Notes) == 0 || !strings.Contains(strings.Join(r.Notes, " "), "moved on") {
		t.Fatalf("land mc: %+v", r)
	}
	if parents := strings.Fields(gitRun(t, repo, "log", "-1", "--format=%P")); len(parents) != 2 {
		t.Fatalf("main's head has parents %v, want a merge", parents)
	}
	if landRead(t, filepath.Join(repo, "mc.txt")) != "mc\n" || landRead(t, filepath.Join(repo, "ff.txt")) != "ff\n" {
		t.Fatal("the merge lost a side")
	}
	if msg := gitRun(t, repo, "log", "-1", "--format=%B", "main^2"); !strings.HasPrefix(msg, "harness: mc") {
		t.Fatalf("mc's commit without a message of its own or an agent's answer:\n%s", msg)
	}

	// Squash: the agent's commit and what it left become one commit.
	before := gitRun(t, repo, "rev-parse", "main")
	f.MustJSON(&r, "land", "sq", "--squash", "--message", "sq: squashed")
	if r.Mode != "squash" || !r.Removed {
		t.Fatalf("land sq: %+v", r)
	}
	if parents := gitRun(t, repo, "log", "-1", "--format=%P"); parents != before {
		t.Fatalf("squash commit's parents %q, want %s", parents, before)
	}
	if msg := gitRun(t, repo, "log", "-1", "--format=%B"); !strings.HasPrefix(msg, "sq: squashed") || !strings.Contains(msg, "Harness: sq") {
		t.Fatalf("squash message:\n%s", msg)
	}
	if !landExists(filepath.Join(repo, "sq1.txt")) || !landExists(filepath.Join(repo, "sq2.txt")) {
		t.Fatal("the squash lost a file")
	}

	// --keep: landed, and the harness goes on in its worktree.
	kwt, kpid := f.worktree("kp").Path, pidOf("kp")
	f.MustJSON(&r, "land", "kp", "--keep")
	if r.Removed || !r.Merged || landRead(t, filepath.Join(repo, "kp.txt")) != "kp\n" || !landExists(kwt) || f.unit("kp").PID != kpid {
		t.Fatalf("land --keep: %+v", r)
	}

	// A conflict: both checkouts exactly as they were.
	landPut(t, filepath.Join(repo, "README"), "ours\n")
	gitRun(t, repo, "commit", "-q", "-am", "ours")
	cwt := f.worktree("cf").Path
	mainBefore, wtBefore := treeState(t, repo), treeState(t, cwt)
	out, errOut, code := f.Run("land", "cf")
	if code == 0 || !strings.Contains(errOut, "conflict") || !strings.Contains(errOut, "README") {
		t.Fatalf("conflicting land: exit %d\n%s%s", code, out, errOut)
	}
	if after := treeState(t, repo); !maps.Equal(after, mainBefore) {
		t.Fatalf("the refused land changed the checkout:\nbefore %v\nafter  %v", mainBefore, after)
	}
	if after := treeState(t, cwt); !maps.Equal(after, wtBefore) {
		t.Fatalf("the refused land changed the worktree:\nbefore %v\nafter  %v", wtBefore, after)
	}
	if f.unit("cf").State != "running" {
		t.Fatal("a refused land stopped the harness")
	}

	// A dirty checkout, then one off base: refused, saying what to do.
	landPut(t, filepath.Join(repo, "README"), "dirty\n")
	if _, errOut, code := f.Run("land", "cf"); code == 0 || !strings.Contains(errOut, "uncommitted changes") {
		t.Fatalf("land onto a dirty checkout: exit %d %s", code, errOut)
	}
	gitRun(t, repo, "checkout", "-q", "--", "README")
	gitRun(t, repo, "switch", "-q", "-c", "elsewhere")
	if _, errOut, code := f.Run("land", "cf"); code == 0 || !strings.Contains(errOut, "switch") || !strings.Contains(errOut, "main") {
		t.Fatalf("land onto a checkout off base: exit %d %s", code, errOut)
	}
	gitRun(t, repo, "switch", "-q", "main")
	if !slices.Contains(strings.Fields(gitRun(t, repo, "worktree", "list")), cwt) {
		t.Fatal("cf's worktree went")
	}
}
