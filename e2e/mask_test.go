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

// TestScenario_SecretsAreMaskedForReadersNotForTheAttachedPerson: a harness prints an env_file value, a GitHub
// token and a JWT; logs, screen --json, harness_screen, its trajectory (the
// answer and the file) and the call log (an argument holding them) show
// "[masked]" instead; `harness attach` still shows the person attached the
// program's own bytes.
func TestScenario_SecretsAreMaskedForReadersNotForTheAttachedPerson(t *testing.T) {
	dir := t.TempDir()
	envValue := fmt.Sprintf("env-value-%d", time.Now().UnixNano())
	ghp := "ghp_" + strings.Repeat("Ab3", 12)
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	envFile := filepath.Join(dir, "leaky.env")
	if err := os.WriteFile(envFile, []byte("LEAK="+envValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`printf 'env says %%s\n' "$LEAK"; echo 'token %s'; echo 'jwt %s'; echo done-printing; exec sleep 100000`, ghp, jwt)
	f := newFleet(t, fmt.Sprintf(`
[daemon]
call_log_args = true

[harness.leaky]
cmd = "sh"
args = ["-c", %q]
env_file = %q
harvest_trajectory = true
`, script, envFile))
	secrets := map[string]string{"env_file value": envValue, "ghp_ token": ghp, "JWT": jwt}
	clean := func(where, text string) {
		t.Helper()
		for name, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the %s: %s", where, name, text)
			}
		}
		if !strings.Contains(text, "[masked]") {
			t.Errorf("%s shows no [masked]: %s", where, text)
		}
	}

	f.MustRun("start", "leaky")
	var logsOut string
	f.WaitFor("leaky's output in logs", 20*time.Second, func() bool {
		logsOut = f.MustRun("logs", "leaky", "--json")
		return strings.Contains(logsOut, "done-printing")
	})
	clean("logs --json", logsOut)
	if n := strings.Count(logsOut, "[masked]"); n != 3 {
		t.Errorf("logs --json has %d [masked], want 3: %s", n, logsOut)
	}
	clean("logs (text)", f.MustRun("logs", "leaky"))
	clean("screen --json", f.MustRun("screen", "leaky", "--json"))
	clean("screen --ansi --json", f.MustRun("screen", "leaky", "--ansi", "--json"))

	s := f.mcpSession("", false, nil)
	res := callTool(t, s, "harness_screen", map[string]any{"name": "leaky"})
	if res.IsError {
		t.Fatalf("harness_screen: %+v", res)
	}
	b, _ := json.Marshal(res)
	clean("harness_screen", string(b))
	res = callTool(t, s, "harness_logs", map[string]any{"name": "leaky"})
	b, _ = json.Marshal(res)
	clean("harness_logs", string(b))

	// Trajectory: the answer, and every file the daemon keeps for it.
	var rows []trajRow
	f.WaitFor("leaky's transcript", 10*time.Second, func() bool {
		rows = listTraj(t, s, "leaky")
		return len(rows) == 1 && rows[0].Entries >= 4
	})
	p := getTraj(t, s, map[string]any{"name": "leaky", "run": rows[0].Run})
	b, _ = json.Marshal(p)
	clean("harness_get_trajectory", string(b))
	clean("trajectory files", dirText(t, filepath.Join(f.State, "trajectories")))

	// The call log: arguments that carry the secrets are kept masked.
	res = callTool(t, s, "harness_describe", map[string]any{"name": envValue + " " + ghp + " " + jwt})
	if !res.IsError {
		t.Fatalf("describe of a made-up name answered: %+v", res)
	}
	var calls callsAnswer
	f.MustJSON(&calls, "calls", "--tool", "harness_describe")
	b, _ = json.Marshal(calls)
	clean("calls --json", string(b))
	clean("call log files", f.callLogText())

	// The person attached sees the program's bytes as they are.
	x := newTmuxServer(t)
	x.window("watch")
	x.typeLine("watch", fmt.Sprintf("%s --socket %s attach --read-only leaky", harnessBin, f.Socket))
	for _, s := range []string{envValue, ghp, jwt} {
		x.waitText("watch", s)
	}
	f.MustRun("stop", "leaky")
}

// dirText is every file under dir, concatenated.
func dirText(t *testing.T, dir string) string {
	t.Helper()
	var sb strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		sb.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// TestScenario_ANotificationCarriesNoSecret: a job that prints an env_file
// value, a ghp_ token and a JWT and fails sends a job_failed message whose
// last lines show [masked] instead.
func TestScenario_ANotificationCarriesNoSecret(t *testing.T) {
	dir := t.TempDir()
	envValue := fmt.Sprintf("env-value-%d", time.Now().UnixNano())
	ghp := "ghp_" + strings.Repeat("Zx9", 12)
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqb2IifQ.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmU"
	envFile := filepath.Join(dir, "job.env")
	if err := os.WriteFile(envFile, []byte("LEAK="+envValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(dir, "message.json")
	script := fmt.Sprintf(`echo "value $LEAK"; echo 'token %s'; echo 'jwt %s'; exit 3`, ghp, jwt)
	f := newFleet(t, fmt.Sprintf(`
[harness.leakjob]
cmd = "sh"
args = [%q, %q]
env_file = %q
restart = "no"

[notify.file]
command = ["sh", "-c", "cat > %s.tmp && mv %s.tmp %s"]
on = ["job_failed"]
`, "-c", script, envFile, got, got, got))
	f.Run("trigger", "leakjob", "--wait", "--timeout", "20s")
	var msg string
	f.WaitFor("the job_failed message", 20*time.Second, func() bool {
		b, err := os.ReadFile(got)
		msg = string(b)
		return err == nil && strings.Contains(msg, "job_failed")
	})
	for name, s := range map[string]string{"env_file value": envValue, "ghp_ token": ghp, "JWT": jwt} {
		if strings.Contains(msg, s) {
			t.Errorf("the notification shows the %s: %s", name, msg)
		}
	}
	if strings.Count(msg, "[masked]") < 3 {
		t.Errorf("the notification's last lines are not masked: %s", msg)
	}
}
