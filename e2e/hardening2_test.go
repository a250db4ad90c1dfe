//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenario_AnUnknownNameIsAnsweredWithTheNamesThereAre: a mistyped
// name gets unknown_harness with up to ten of the names there are (harnesses
// and upstreams, in order) and how many more, or that there are none; no
// error message repeats its code.
func TestScenario_AnUnknownNameIsAnsweredWithTheNamesThereAre(t *testing.T) {
	var cfg strings.Builder
	for i := range 12 {
		fmt.Fprintf(&cfg, "[harness.h%02d]\ncmd = \"sleep\"\nargs = [\"1000\"]\n", i)
	}
	f := newFleet(t, cfg.String())
	b := f.jsonError("describe", "nope")
	code, msg := string(b.Code), b.Message
	want := `no harness named "nope" (harnesses: h00, h01, h02, h03, h04, h05, h06, h07, h08, h09 and 2 more)`
	if code != "unknown_harness" || !strings.Contains(msg, want) {
		t.Errorf("describe nope: %s %q, want unknown_harness %q", code, msg, want)
	}
	// The code is in its field, not repeated in the message; a person
	// reads it once, after the message.
	for _, args := range [][]string{{"describe", "nope"}, {"start"}, {"trigger", "h01"}, {"send", "h01", "--key", "NoSuchKey"}} {
		b := f.jsonError(args...)
		if b.Code == "" || strings.Contains(b.Message, string(b.Code)) {
			t.Errorf("harness %s --json: message %q repeats its code %s", strings.Join(args, " "), b.Message, b.Code)
		}
	}
	_, errOut, _ := f.Run("stop", "h0")
	if !strings.Contains(errOut, "h00, h01") || !strings.HasSuffix(strings.TrimSpace(errOut), "more) (unknown_harness)") {
		t.Errorf("stop h0: %q", errOut)
	}

	e := newFleet(t, "")
	if b := e.jsonError("describe", "nope"); b.Code != "unknown_harness" || !strings.Contains(b.Message, "there are no harnesses") {
		t.Errorf("an empty fleet: %+v", b)
	}
}

// TestScenario_AnEnvFileChangedSinceTheConfigIsMaskedFromTheNextSpawn: an
// env_file edited while the daemon runs (no reload) is read again at the
// next spawn, and its new value is masked in logs and screen from the
// program's first line on (the masker follows spawns, not only
// reloads).
func TestScenario_AnEnvFileChangedSinceTheConfigIsMaskedFromTheNextSpawn(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "rotating.env")
	write := func(v string) {
		if err := os.WriteFile(envFile, []byte("TOKEN="+v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	first, second := fmt.Sprintf("first-%d", time.Now().UnixNano()), fmt.Sprintf("rotated-%d", time.Now().UnixNano())
	write(first)
	f := newFleet(t, fmt.Sprintf(`
[harness.rot]
cmd = "sh"
args = ["-c", "printf 'token is %%s\\n' \"$TOKEN\"; echo printed-$$; exec sleep 100000"]
env_file = %q
stop_grace = 2
`, envFile))
	f.MustRun("start", "rot")
	f.WaitFor("the first run's line", 20*time.Second, func() bool { return strings.Contains(f.MustRun("logs", "rot", "--json"), "printed-") })
	write(second) // rotated: no reload
	f.MustRun("restart", "rot")
	f.WaitFor("the second run's line", 20*time.Second, func() bool {
		return strings.Count(f.MustRun("logs", "rot", "--json"), "printed-") == 2
	})
	for _, args := range [][]string{{"logs", "rot", "--json"}, {"logs", "rot"}, {"screen", "rot", "--json"}} {
		out := f.MustRun(args...)
		for _, s := range []string{first, second} {
			if strings.Contains(out, s) {
				t.Errorf("%s shows %q:\n%s", strings.Join(args, " "), s, out)
			}
		}
	}
	if n := strings.Count(f.MustRun("logs", "rot", "--json"), "token is [masked]"); n != 2 {
		t.Errorf("logs: %d masked token lines, want 2", n)
	}
}
