//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// serviceReport is the shape `harness service … --json` prints, as a
// script reading it would decode it.
type serviceReport struct {
	Path    string `json:"path"`
	Outcome string `json:"outcome"`
	Ours    *bool  `json:"written_by_harness"`
	Current *bool  `json:"current"`
	Manager []struct {
		Command string `json:"command"`
		OK      bool   `json:"ok"`
		Output  string `json:"output"`
	} `json:"manager"`
}

// serviceRun runs `harness service …` with home as HOME and manager as
// the service manager's program.
func serviceRun(t *testing.T, home, manager string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c := exec.Command(harnessBin, args...)
	c.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=", "HARNESS_SERVICE_MANAGER="+manager)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	if err := c.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return o.String(), e.String(), code
}

func TestScenario_ServiceInstallWritesAUnitSystemdAccepts(t *testing.T) {
	home := t.TempDir()
	// No systemd runs in this container (pid 1 is not systemd), so a
	// stand-in records what systemctl would have been asked.
	calls := filepath.Join(home, "systemctl.calls")
	fake := filepath.Join(home, "systemctl")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\necho active\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(home, "cfg", "harness.toml")
	unit := filepath.Join(home, ".config", "systemd", "user", "harness.service")

	out, errOut, code := serviceRun(t, home, fake, "--config", config, "service", "install", "--now", "--json")
	var r serviceReport
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Outcome != "written" || r.Path != unit {
		t.Fatalf("install: exit %d: %s%s", code, out, errOut)
	}
	text, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Delegate=yes", "ExecStart=" + harnessBin + " daemon --config " + config, "WantedBy=default.target"} {
		if !strings.Contains(string(text), want) {
			t.Fatalf("unit lacks %q:\n%s", want, text)
		}
	}
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		verify := exec.Command("systemd-analyze", "verify", unit)
		if vout, err := verify.CombinedOutput(); err != nil || strings.Contains(string(vout), unit) {
			t.Fatalf("systemd-analyze verify: %v: %s", err, vout)
		}
	}
	got, _ := os.ReadFile(calls)
	if want := "--user daemon-reload\n--user enable harness.service\n--user start harness.service\n"; string(got) != want {
		t.Fatalf("systemctl was asked:\n%s\nwant:\n%s", got, want)
	}

	// Twice: nothing changes.
	out, errOut, code = serviceRun(t, home, fake, "--config", config, "service", "install", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Outcome != "unchanged" {
		t.Fatalf("second install: exit %d: %s%s", code, out, errOut)
	}
	if again, _ := os.ReadFile(unit); !bytes.Equal(again, text) {
		t.Fatalf("second install changed the unit")
	}
	out, _, code = serviceRun(t, home, fake, "--config", config, "service", "status", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Ours == nil || !*r.Ours || r.Current == nil || !*r.Current {
		t.Fatalf("status: exit %d: %s", code, out)
	}

	// Without a working service manager the file is written and the
	// refusal says so.
	_, errOut, code = serviceRun(t, t.TempDir(), "/nonexistent/systemctl", "service", "install")
	if code == 0 || !strings.Contains(errOut, "service manager refused") {
		t.Fatalf("install without systemctl: exit %d: %s", code, errOut)
	}

	// Uninstall removes what it wrote.
	os.Remove(calls)
	out, errOut, code = serviceRun(t, home, fake, "service", "uninstall", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Outcome != "removed" {
		t.Fatalf("uninstall: exit %d: %s%s", code, out, errOut)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Fatalf("unit still there after uninstall: %v", err)
	}
	got, _ = os.ReadFile(calls)
	if want := "--user disable harness.service\n--user stop harness.service\n--user daemon-reload\n"; string(got) != want {
		t.Fatalf("uninstall asked systemctl:\n%s\nwant:\n%s", got, want)
	}

	// A unit someone else wrote is never overwritten or removed.
	foreign := []byte("[Service]\nExecStart=/usr/bin/true\n")
	if err := os.WriteFile(unit, foreign, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"install", "uninstall"} {
		out, errOut, code = serviceRun(t, home, fake, "service", verb, "--json")
		if code == 0 || !strings.Contains(out, "not_permitted") {
			t.Fatalf("%s over a foreign unit: exit %d: %s%s", verb, code, out, errOut)
		}
		if have, _ := os.ReadFile(unit); !bytes.Equal(have, foreign) {
			t.Fatalf("%s touched a unit harness did not write", verb)
		}
	}
}
