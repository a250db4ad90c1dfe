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

// scratchConfig has one configured harness, whose name a scratch harness
// may not take.
const scratchConfig = `
[harness.svc]
cmd = "sleep"
args = ["1000"]
restart = "always"
enabled = true
`

// listed reports whether list shows a unit named name, and its row.
func (f *fleet) listed(name string) (unitInfo, bool) {
	f.T.Helper()
	var us []unitInfo
	f.MustJSON(&us, "list")
	for _, u := range us {
		if u.Name == name {
			return u, true
		}
	}
	return unitInfo{}, false
}

// runJSON runs `harness run --detach --json ARGS` (--json before the
// program's arguments, which are all the program's) and decodes it.
func (f *fleet) runJSON(v any, args ...string) {
	f.T.Helper()
	out, stderr, code := f.Run(append([]string{"run", "--detach", "--json"}, args...)...)
	if code != 0 {
		f.T.Fatalf("harness run %v: exit %d: %s", args, code, stderr)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		f.T.Fatalf("harness run %v: %v: %q", args, err, out)
	}
}

// TestScenario_AnAttachedScratchHarnessEndsWithItsProgram drives `harness
// run -- CMD` in a real terminal (tmux): the program runs in the caller's
// directory, attached; it shows in list while it lives and survives a
// reload; what is typed reaches it; when it exits the verb exits with its
// exit code, the harness is forgotten and its process is gone (/proc).
func TestScenario_AnAttachedScratchHarnessEndsWithItsProgram(t *testing.T) {
	f := newFleet(t, scratchConfig)
	f.waitState("svc", "running")
	x := newTmuxServer(t)
	dir := t.TempDir()
	x.window("w")
	script := `echo $$ > pid; pwd > here; echo hello-scratch; read x; echo got:$x; exit 7`
	x.typeLine("w", fmt.Sprintf("cd %s && %s --socket %s run -- sh -c '%s'; echo code=$?", dir, harnessBin, f.Socket, script))
	x.waitText("w", "hello-scratch")
	pid := readPID(t, filepath.Join(dir, "pid"))
	if b, err := os.ReadFile(filepath.Join(dir, "here")); err != nil || strings.TrimSpace(string(b)) != dir {
		t.Fatalf("the program did not run in the caller's directory %s: %q %v", dir, b, err)
	}
	u, ok := f.listed("sh")
	if !ok || u.State != "running" || u.PID != pid {
		t.Fatalf("list while it lives: %+v (listed %v), pid %d", u, ok, pid)
	}
	// A reload while it lives keeps it: it is in no config file.
	f.MustRun("reload")
	if u, ok := f.listed("sh"); !ok || u.PID != pid {
		t.Fatalf("a reload dropped or restarted the scratch harness: %+v (listed %v)", u, ok)
	}
	// A configured harness's name is refused.
	if _, stderr, code := f.Run("run", "--detach", "--name", "svc", "--", "true"); code == 0 || !strings.Contains(stderr, "config file") {
		t.Fatalf("run --name svc: exit %d, %q", code, stderr)
	}

	x.typeLine("w", "abc")
	x.waitText("w", "got:abc")
	x.waitText("w", "code=7")
	waitGone(t, "the scratch program", pid)
	f.WaitFor("the scratch harness to be forgotten", 10*time.Second, func() bool {
		_, ok := f.listed("sh")
		return !ok
	})
	if _, _, code := f.Run("describe", "sh"); code == 0 {
		t.Fatal("describe still knows the ended scratch harness")
	}
	// Its run stays in the history, with the exit code.
	var rs []struct {
		ExitCode *int `json:"exit_code"`
	}
	f.MustJSON(&rs, "runs", "sh")
	if len(rs) != 1 || rs[0].ExitCode == nil || *rs[0].ExitCode != 7 {
		t.Fatalf("runs sh: %+v", rs)
	}
	// Never brought back: not after a reload, not by a daemon restart.
	f.MustRun("reload")
	f.Stop()
	f.start()
	if _, ok := f.listed("sh"); ok {
		t.Fatal("a new daemon brought the scratch harness back")
	}
}

// TestScenario_ADetachedScratchHarnessLivesUntilStopped: `harness run
// --detach` returns with the harness running and listed; names default to
// the command's and are unique; a scratch harness is never restarted;
// `harness stop` ends it and it is forgotten, its process gone (/proc); a
// daemon that stops ends it too and the next one does not bring it back.
func TestScenario_ADetachedScratchHarnessLivesUntilStopped(t *testing.T) {
	f := newFleet(t, scratchConfig)
	f.waitState("svc", "running")
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	var res struct {
		Name  string `json:"name"`
		RunID uint64 `json:"run_id"`
		PID   int    `json:"pid"`
	}
	f.runJSON(&res, "--name", "bg", "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 1000")
	if res.Name != "bg" || res.PID == 0 {
		t.Fatalf("run --detach: %+v", res)
	}
	pid := readPID(t, pidFile)
	if u, ok := f.listed("bg"); !ok || u.State != "running" || u.PID != pid || !strings.Contains(u.Description, "scratch") {
		t.Fatalf("list: %+v (listed %v), pid %d", u, ok, pid)
	}
	if _, stderr, code := f.Run("run", "--detach", "--name", "bg", "--", "true"); code == 0 || !strings.Contains(stderr, "running") {
		t.Fatalf("a second scratch harness named bg: exit %d, %q", code, stderr)
	}
	if out, stderr, code := f.Run("restart", "bg"); code == 0 || !strings.Contains(out+stderr, "never restarted") {
		t.Fatalf("restart of a scratch harness: exit %d, %q %q", code, out, stderr)
	}
	if !alive(pid) {
		t.Fatal("the refused restart ended the program")
	}

	// Default names: the command's, made unique.
	var a, b struct {
		Name string `json:"name"`
		PID  int    `json:"pid"`
	}
	f.runJSON(&a, "--", "sleep", "1000")
	f.runJSON(&b, "--", "/bin/sleep", "1000")
	if a.Name != "sleep" || b.Name != "sleep-2" {
		t.Fatalf("default names %q, %q; want sleep, sleep-2", a.Name, b.Name)
	}

	f.MustRun("stop", "bg")
	waitGone(t, "the stopped scratch program", pid)
	f.WaitFor("bg to be forgotten", 10*time.Second, func() bool {
		_, ok := f.listed("bg")
		return !ok
	})
	if _, ok := f.listed("sleep"); !ok {
		t.Fatal("stopping bg took another scratch harness along")
	}
	// The name is free again.
	f.runJSON(&res, "--name", "bg", "--", "sleep", "1000")

	// A daemon that stops ends them; the next one does not bring them back.
	f.Stop()
	for _, p := range []int{a.PID, b.PID, res.PID} {
		waitGone(t, "a scratch program after the daemon stopped", p)
	}
	f.start()
	for _, n := range []string{"bg", "sleep", "sleep-2"} {
		if _, ok := f.listed(n); ok {
			t.Fatalf("a new daemon brought scratch harness %s back", n)
		}
	}
	f.waitState("svc", "running")
}
