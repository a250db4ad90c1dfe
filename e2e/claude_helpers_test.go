//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/testenv"
)

// The real Claude Code from npm (pinned in interop/tui/package-lock.json,
// installed by scripts/test) as a harness of a cmd/harness e2e test,
// against the scripted model API of internal/agent/modelapi on loopback
// (agents-offline.md): for the features that need a real agent on a real
// permission prompt (the dashboard's answer, the waiting notification).

// realClaude is one Claude Code harness of a test: its model server and
// its work directory (where an approved command makes its file).
type realClaude struct {
	name string
	api  *modelapi.Server
	work string
	home string
}

// claudeTable returns the harness table of a real Claude Code named name,
// trusted (its first-run dialogs answered), asking before every tool
// (--permission-mode default), enabled, with extra lines appended.
func claudeTable(t *testing.T, name, extra string) (string, *realClaude) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "interop", "tui", "node_modules", ".bin", "claude"))
	if err != nil {
		t.Fatal(err)
	}
	testenv.File(t, bin, "Claude Code from interop/tui's npm packages (npm ci in interop/tui)")
	srv, err := modelapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	rc := &realClaude{name: name, api: srv, home: filepath.Join(dir, "home"), work: filepath.Join(dir, "work-claude")}
	for _, d := range []string{rc.home, rc.work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env, err := srv.AgentEnv("claude-code", rc.home, rc.work, modelapi.AgentOptions{Trusted: true})
	if err != nil {
		t.Fatal(err)
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		kv = append(kv, fmt.Sprintf("%s = %q", k, env[k]))
	}
	// Cleanups run last-in first-out: this one runs after the daemon (whose
	// fleet a test makes after this table) has stopped.
	t.Cleanup(func() {
		if left := procsLeft(func(pid int) bool {
			b, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "environ"))
			return err == nil && strings.Contains(string(b), "HOME="+rc.home+"\x00")
		}); len(left) > 0 {
			t.Errorf("Claude Code processes left after the test: %v", left)
		}
	})
	return fmt.Sprintf(`
[harness.%s]
cmd = %q
args = ["--permission-mode", "default"]
workdir = %q
env = { %s }
enabled = true
stop_grace = 3
%s
`, name, bin, rc.work, strings.Join(kv, ", "), extra), rc
}

// agentRow is the agent part of `harness wait --state --json`.
type agentRow struct {
	TimedOut   bool     `json:"timed_out"`
	AgentState string   `json:"agent_state"`
	WaitingFor string   `json:"waiting_for"`
	Prompt     string   `json:"prompt"`
	Choices    []string `json:"choices"`
}

// waitAgent waits (harness wait --state) until the agent is in one of
// states, failing with its screen after two minutes.
func (f *fleet) waitAgent(name string, states ...string) agentRow {
	f.T.Helper()
	out, errOut, code := f.Run("wait", name, "--state", strings.Join(states, ","), "--timeout", "2m", "--json")
	var w agentRow
	if err := json.Unmarshal([]byte(out), &w); err != nil || code != 0 {
		log := strings.Split(f.Log(), "\n")
		f.T.Fatalf("wait %s --state %v: exit %d (%v): %s%s\nscreen:\n%s\nthe daemon's log, its end:\n%s", name, states, code, err, out, errOut,
			strings.Join(f.screenLines(name), "\n"), strings.Join(log[max(0, len(log)-40):], "\n"))
	}
	return w
}

// askForPermission scripts the model to ask Claude Code to run `touch
// file` (then to end its turn), types a prompt, and waits until Claude
// Code waits on the permission prompt.
func (rc *realClaude) askForPermission(f *fleet, file string) agentRow {
	f.T.Helper()
	f.waitAgent(rc.name, "ready")
	rc.api.Script(modelapi.Turn{Shell: "touch " + file}, modelapi.Turn{Text: "Made the file."})
	f.MustRun("send", rc.name, "Make the file")
	// Enter once the text shows; an Enter that arrives while the TUI still
	// takes the paste can be lost, so press it again (at most three times)
	// until the model server has the request.
	// (Not fatal when it never shows: the emulator once garbled Claude
	// Code's input row, a defect of its own; the request proves the
	// prompt.)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if slices.ContainsFunc(f.screenLines(rc.name), func(l string) bool { return strings.Contains(l, "Make the file") }) {
			break
		}
	}
	before := len(rc.api.Requests())
	for try := range 3 {
		f.MustRun("send", rc.name, "--key", "Enter")
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(10*(try+1))*time.Second)
		_, _, err := rc.api.WaitRequest(ctx, before, func(r modelapi.Request) bool { return r.Main })
		cancel()
		if err == nil {
			break
		}
	}
	// The hook's waiting state stands alone for HookWaitGrace when the
	// dialog is slow to draw (a loaded machine); the dialog's, with its
	// prompt and choices, follows.
	isPrompt := func(w agentRow) bool {
		return w.WaitingFor == "permission" && strings.Contains(w.Prompt, "touch "+file) && slices.Contains(w.Choices, "Yes")
	}
	w := f.waitAgent(rc.name, "waiting")
	if !isPrompt(w) {
		f.WaitFor("the dialog's own waiting state", 30*time.Second, func() bool {
			w = f.waitAgent(rc.name, "waiting")
			return isPrompt(w)
		})
	}
	if !isPrompt(w) {
		f.T.Fatalf("not a permission prompt for touch %s: %+v\nscreen:\n%s", file, w, strings.Join(f.screenLines(rc.name), "\n"))
	}
	return w
}
