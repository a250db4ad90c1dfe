//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/fleettest"
)

// harnessDFiles lists the files of the fleet's harness.d.
func (f *fleet) harnessDFiles() []string {
	f.T.Helper()
	ents, err := os.ReadDir(filepath.Join(filepath.Dir(f.Config), "harness.d"))
	if err != nil && !os.IsNotExist(err) {
		f.T.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// auditEntry is one line of `harness audit --json`.
type auditEntry struct {
	Actor   string `json:"actor"`
	Door    string `json:"door"`
	Op      string `json:"op"`
	Target  string `json:"target"`
	Outcome string `json:"outcome"`
}

func (f *fleet) audit() []auditEntry {
	f.T.Helper()
	var res struct {
		Entries []auditEntry `json:"entries"`
	}
	f.MustJSON(&res, "audit", "--json")
	return res.Entries
}

// hasAudit reports whether entries hold one of op on target through door by actor.
func hasAudit(es []auditEntry, op, target, door, actor string) bool {
	return slices.ContainsFunc(es, func(e auditEntry) bool {
		return e.Op == op && e.Target == target && e.Door == door && e.Actor == actor && e.Outcome == "ok"
	})
}

// repoWithOneCommit is a git repository with one commit on main.
func repoWithOneCommit(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "add", "README.md")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	return repo
}

// TestScenario_NewWritesAHarnessThatARestartStillRunsAndRmUndoesIt: `harness
// new` of a command and of the demo agent in a worktree write harness.d
// files, start them, and a daemon restart still runs them; the person's
// own file is byte-identical throughout. Bad input is refused with nothing
// written. rm refuses a dirty worktree naming the file, --force removes
// file, worktree and process; a harness of the person's file is refused.
func TestScenario_NewWritesAHarnessThatARestartStillRunsAndRmUndoesIt(t *testing.T) {
	own := "# my own file\n[harness.mine]\ncmd = \"sleep\"\nargs = [\"100000\"]\n"
	f := newFleet(t, own)
	repo := repoWithOneCommit(t)
	uid := "cli:" + strconv.Itoa(os.Getuid())

	f.MustRun("new", "w1", "--", "sh", "-c", "echo started; exec sleep 100000")
	f.MustRun("new", "a1", "--agent", "demo", "--repo", repo, "--worktree")
	if got := f.harnessDFiles(); !slices.Equal(got, []string{"a1.toml", "w1.toml"}) {
		t.Fatalf("harness.d holds %v", got)
	}
	fi, err := os.Stat(filepath.Join(filepath.Dir(f.Config), "harness.d", "a1.toml"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("a1.toml: %v %v", fi, err)
	}
	body, _ := os.ReadFile(filepath.Join(filepath.Dir(f.Config), "harness.d", "a1.toml"))
	if !strings.Contains(string(body), `agent = "demo"`) || !strings.Contains(string(body), "worktree = { repo = "+strconv.Quote(repo)) {
		t.Fatalf("a1.toml is not what a person would write:\n%s", body)
	}
	f.waitState("w1", "running")
	f.waitState("a1", "running")
	if wt := f.worktree("a1"); !wt.Created || wt.Branch != "harness/a1" {
		t.Fatalf("a1's worktree: %+v", wt)
	}

	// Bad input: each refused, nothing written.
	before := f.harnessDFiles()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"new", "../x", "--", "sleep", "1"}, "invalid harness name"},
		{[]string{"new", "a/b", "--", "sleep", "1"}, "invalid harness name"},
		{[]string{"new", "", "--", "sleep", "1"}, "name is required"},
		{[]string{"new", "w1", "--", "sleep", "1"}, "exists"},
		{[]string{"new", "mine", "--", "sleep", "1"}, "exists"},
		{[]string{"new", "b1", "--agent", "demo", "--repo", t.TempDir(), "--worktree"}, "not a git repository"},
		{[]string{"new", "b2", "--agent", "demo", "--repo", repo, "--worktree", "--base", "no-such-branch"}, "not a commit or branch"},
		{[]string{"new", "b3", "--agent", "nope"}, "unknown agent"},
		{[]string{"new", "b4", "--", "no-such-program-e2e"}, `program "no-such-program-e2e" is not on the daemon's PATH`},
		{[]string{"new", "b5", "--agent", "demo", "--approval", "auto"}, "approval"},
	} {
		_, errOut, code := f.Run(c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("harness %q: exit %d, stderr %q; want a refusal saying %q", c.args, code, errOut, c.want)
		}
	}
	if got := f.harnessDFiles(); !slices.Equal(got, before) {
		t.Fatalf("a refused new left harness.d with %v, was %v", got, before)
	}

	// A restart still loads and runs them.
	f.Stop()
	f.start()
	f.waitState("w1", "running")
	a1 := f.waitState("a1", "running")

	// rm of a dirty worktree is refused naming the file, and changes nothing.
	wt := f.worktree("a1")
	if err := os.WriteFile(filepath.Join(wt.Path, "notes.txt"), []byte("unlanded\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := f.Run("rm", "a1")
	if code == 0 || !strings.Contains(errOut, "notes.txt") {
		t.Fatalf("rm of a dirty worktree: exit %d, %q", code, errOut)
	}
	// Committed on its branch but not on its base: refused too.
	gitRun(t, wt.Path, "add", "notes.txt")
	gitRun(t, wt.Path, "commit", "-q", "-m", "notes")
	_, errOut, code = f.Run("rm", "a1")
	if code == 0 || !strings.Contains(errOut, "1 commit(s) not on HEAD") {
		t.Fatalf("rm of a worktree with an unlanded commit: exit %d, %q", code, errOut)
	}
	if f.unit("a1").State != "running" || !slices.Contains(f.harnessDFiles(), "a1.toml") {
		t.Fatal("a refused rm changed something")
	}
	f.MustRun("rm", "a1", "--force")
	if slices.Contains(f.harnessDFiles(), "a1.toml") {
		t.Fatal("rm --force left a1.toml")
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Fatalf("rm --force left the worktree %s: %v", wt.Path, err)
	}
	waitGone(t, "a1's agent", a1.PID)
	if _, _, code := f.Run("describe", "a1"); code == 0 {
		t.Fatal("a1 is still in the fleet after rm")
	}

	w1 := f.unit("w1")
	f.MustRun("rm", "w1")
	waitGone(t, "w1's process", w1.PID)
	if got := f.harnessDFiles(); len(got) != 0 {
		t.Fatalf("harness.d after rm of both: %v", got)
	}

	// A harness of the person's own file is theirs to remove.
	_, errOut, code = f.Run("rm", "mine")
	if code == 0 || !strings.Contains(errOut, "declared in") {
		t.Fatalf("rm of the person's harness: exit %d, %q", code, errOut)
	}
	if b, _ := os.ReadFile(f.Config); string(b) != own {
		t.Fatalf("the person's config file changed:\n%s", b)
	}
	es := f.audit()
	for _, want := range [][2]string{{"new", "w1"}, {"new", "a1"}, {"rm", "a1"}} {
		if !hasAudit(es, want[0], want[1], "cli", uid) {
			t.Errorf("audit has no %s of %s by %s: %+v", want[0], want[1], uid, es)
		}
	}
}

// TestScenario_AgentsListsTheDemoAgentAndAMissingProgram: with a PATH
// holding none of the agent CLIs, `harness agents --json` shows the demo
// agent found (it is this binary) and claude-code missing, and new of a
// missing agent is refused naming its program unless --no-start.
func TestScenario_AgentsListsTheDemoAgentAndAMissingProgram(t *testing.T) {
	f := newFleetOnEnv(t, "", "PATH="+t.TempDir())
	var as []struct {
		Agent   string `json:"agent"`
		Program string `json:"program"`
		Found   bool   `json:"found"`
		Version string `json:"version"`
	}
	f.MustJSON(&as, "agents", "--json")
	byName := map[string]int{}
	for i, a := range as {
		byName[a.Agent] = i
	}
	if i, ok := byName["demo"]; !ok || !as[i].Found || as[i].Version == "" {
		t.Fatalf("agents: no demo agent found with a version: %+v", as)
	}
	if i, ok := byName["claude-code"]; !ok || as[i].Found || as[i].Program != "claude" {
		t.Fatalf("agents: claude-code not shown missing: %+v", as)
	}
	_, errOut, code := f.Run("new", "c1", "--agent", "claude-code")
	if code == 0 || !strings.Contains(errOut, `"claude"`) {
		t.Fatalf("new of a missing agent: exit %d, %q", code, errOut)
	}
	var res struct {
		File    string `json:"file"`
		Started bool   `json:"started"`
	}
	f.MustJSON(&res, "new", "c1", "--agent", "claude-code", "--no-start", "--json")
	if res.Started || filepath.Base(res.File) != "c1.toml" {
		t.Fatalf("new --no-start: %+v", res)
	}
}

// newFleetOnEnv is newFleet with the daemon's environment extended (later
// entries win).
func newFleetOnEnv(t *testing.T, config string, env ...string) *fleet {
	t.Helper()
	f := &fleet{Fleet: fleettest.NewFleet(t, harnessBin, t.TempDir(), append(daemonEnv(), env...))}
	f.WriteConfig(config)
	f.start()
	t.Cleanup(f.checkCgroupGone)
	t.Cleanup(f.Stop)
	return f
}

// waitAudit waits until the audit log has the entry.
func (f *fleet) waitAudit(op, target, door, actor string) {
	f.T.Helper()
	var es []auditEntry
	f.WaitFor("the audit log to show "+op+" of "+target+" via "+door, 10*time.Second, func() bool {
		es = f.audit()
		return hasAudit(es, op, target, door, actor)
	})
}

// auditRaw is audit.jsonl as it is on disk.
func (f *fleet) auditRaw() string {
	f.T.Helper()
	b, err := os.ReadFile(filepath.Join(f.State, "audit.jsonl"))
	if err != nil {
		f.T.Fatal(err)
	}
	return string(b)
}

// TestScenario_NewOverMCPAndTheAuditLogNamesEachDoor: a harness granted
// write makes a harness with harness_new through a real MCP client, and
// starts another; the CLI starts one and types a secret-looking text.
// `harness audit --json` names each with its actor and door, and the text
// typed is nowhere in audit.jsonl.
func TestScenario_NewOverMCPAndTheAuditLogNamesEachDoor(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, sleeperConfig+tokenHarness("boss", dir, `mcp_allow = ["read", "write", "input"]`))
	uid := "cli:" + strconv.Itoa(os.Getuid())
	f.MustRun("start", "sleeper")
	f.waitState("sleeper", "running")
	f.waitAudit("start", "sleeper", "cli", uid)

	s := f.mcpSession(token(t, filepath.Join(dir, "boss.token")), false, nil)
	res := callTool(t, s, "harness_new", map[string]any{"name": "m1", "agent": "demo", "workdir": dir})
	if res.IsError {
		t.Fatalf("harness_new: %+v", res)
	}
	var made struct {
		File    string `json:"file"`
		Started bool   `json:"started"`
	}
	resultJSON(t, res, &made)
	if !made.Started || filepath.Base(made.File) != "m1.toml" {
		t.Fatalf("harness_new answered %+v", made)
	}
	f.waitState("m1", "running")
	if res := callTool(t, s, "harness_new", map[string]any{"name": "../m2", "agent": "demo"}); errorCode(t, res) != "invalid_argument" {
		t.Fatalf("harness_new of ../m2: %+v", res)
	}
	// Any program is more than write: a session makes known agents only.
	if res := callTool(t, s, "harness_new", map[string]any{"name": "m3", "cmd": "sh"}); !res.IsError {
		t.Fatalf("harness_new with a cmd: %+v", res)
	}
	if res := callTool(t, s, "harness_stop", map[string]any{"name": "sleeper"}); res.IsError {
		t.Fatalf("harness_stop: %+v", res)
	}
	if res := callTool(t, s, "harness_start", map[string]any{"name": "sleeper"}); res.IsError {
		t.Fatalf("harness_start: %+v", res)
	}
	f.waitAudit("new", "m1", "mcp", "harness:boss")
	f.waitAudit("start", "sleeper", "mcp", "harness:boss")

	const secret = "sk-ant-api03-NOTINTHEAUDITLOG0123456789abcdef"
	f.waitState("sleeper", "running")
	f.MustRun("send", "sleeper", secret, "--enter")
	f.waitAudit("send", "sleeper", "cli", uid)
	if raw := f.auditRaw(); strings.Contains(raw, "NOTINTHEAUDITLOG") {
		t.Fatalf("audit.jsonl holds the text sent:\n%s", raw)
	}
	// Reads are not audited.
	for _, e := range f.audit() {
		if e.Op == "list" || e.Op == "describe" || e.Op == "audit" {
			t.Fatalf("a read is in the audit log: %+v", e)
		}
	}
}
