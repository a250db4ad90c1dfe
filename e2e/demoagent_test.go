//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScenario_TheDemoAgentAsksBeforeItEditsAndIsAnsweredLikeARealAgent:
// `harness demo-agent` in a harness's PTY, with agent = "demo", reads as
// ready; its prompt, typed by harness once it is ready, sets it working;
// it then waits for permission with numbered choices; `harness answer No`
// leaves the file alone and a second task answered Yes edits it, each time
// back to ready.
func TestScenario_TheDemoAgentAsksBeforeItEditsAndIsAnsweredLikeARealAgent(t *testing.T) {
	work := t.TempDir()
	readme := filepath.Join(work, "README.md")
	if err := os.WriteFile(readme, []byte("# before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[harness.demo]
cmd = %q
args = ["demo-agent", "--step", "300ms"]
agent = "demo"
workdir = %q
prompt = "Edit the README"
enabled = true
`, harnessBin, work))
	w := f.waitAgent("demo", "waiting")
	if w.WaitingFor != "permission" || w.Prompt != "Allow edit to README.md?" || !slices.Equal(w.Choices, []string{"Yes", "No"}) {
		t.Fatalf("waiting: %+v", w)
	}
	if !slices.ContainsFunc(f.screenLines("demo"), func(l string) bool { return strings.Contains(l, "> Edit the README") }) {
		t.Fatalf("the typed prompt is not on the screen:\n%s", strings.Join(f.screenLines("demo"), "\n"))
	}
	if out := f.MustRun("answer", "demo", "No"); !strings.Contains(out, "answered demo: 2. No") {
		t.Fatalf("answer No: %s", out)
	}
	f.waitAgent("demo", "ready")
	if b, _ := os.ReadFile(readme); string(b) != "# before\n" {
		t.Fatalf("the agent edited after No:\n%s", b)
	}

	f.MustRun("send", "demo", "Edit it after all", "--enter")
	f.waitAgent("demo", "waiting")
	if out := f.MustRun("answer", "demo", "1"); !strings.Contains(out, "answered demo: 1. Yes") {
		t.Fatalf("answer 1: %s", out)
	}
	f.waitAgent("demo", "ready")
	b, _ := os.ReadFile(readme)
	if !strings.HasPrefix(string(b), "# before\n") || !strings.Contains(string(b), "written by the harness demo agent") {
		t.Fatalf("README after Yes:\n%s", b)
	}
	if !slices.ContainsFunc(f.screenLines("demo"), func(l string) bool { return strings.Contains(l, "Edited README.md") }) {
		t.Fatalf("the agent does not say it edited:\n%s", strings.Join(f.screenLines("demo"), "\n"))
	}
}
