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

	"github.com/harness-dev/harness/internal/kaudit"
	"github.com/harness-dev/harness/internal/kaudit/kaudittest"
	"github.com/harness-dev/harness/internal/sandbox"
	"github.com/harness-dev/harness/internal/testenv"
)

// needAuditedLandlock: the kernel logs a domain's denials after the
// program's exec from Landlock ABI 7.
func needAuditedLandlock(t *testing.T) {
	t.Helper()
	needSandbox(t, false)
	if abi, _ := sandbox.ABI(); abi < 7 {
		testenv.Missing(t, "Landlock ABI 7", "it tells audit of denials after the program's exec")
	}
}

// refusingHarness is a sandboxed harness that reads the fake HOME's SSH
// key, then appends to a file outside its workdir, and stays up; and a
// json notifier for sandbox_denied appending each message as a line to
// notes.
func refusingHarness(b sandboxBox, outsideFile, notes string) string {
	script := strings.Join([]string{
		`cat $HOME/.ssh/id_ed25519 >/dev/null 2>&1 && echo read-ssh-ok >> result`,
		`(echo x >> ` + outsideFile + `) 2>/dev/null && echo write-outside-ok >> result`,
		`touch done`,
		`exec sleep 600`,
	}, "\n")
	return fmt.Sprintf(`[harness.boxed]
cmd = "sh"
args = ["-c", %q]
workdir = %q
env = { HOME = %q }
stop_grace = 1
sandbox = { fs = "workdir" }

[notify.file]
command = ["sh", "-c", "cat >> \"$NOTES\"; echo >> \"$NOTES\""]
env = { NOTES = %q }
on = ["sandbox_denied"]
cooldown_s = 0
`, script, b.work, b.home, notes)
}

// waitRefused waits for refusingHarness's probe to be done, and checks
// that it was let through nowhere.
func waitRefused(f *fleet, b sandboxBox) {
	f.T.Helper()
	f.WaitFor("the probe to finish", 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(b.work, "done"))
		return err == nil
	})
	if got, err := os.ReadFile(filepath.Join(b.work, "result")); err == nil {
		f.T.Fatalf("the sandboxed probe was let through: %q", got)
	}
}

// A sandboxed harness is refused a read of ~/.ssh/id_ed25519 and a write
// outside its workdir; with the kernel's audit on, describe counts both
// with the last path, and each refusal reaches a notifier with its path,
// never the file's content.
func TestScenario_SandboxedHarnessFileRefusalsAreCountedFromAudit(t *testing.T) {
	needAuditedLandlock(t)
	kaudittest.Set(t, true)
	dir := testenv.DirOutsideTmp(t, "he-")
	b := newSandboxBoxIn(t, filepath.Join(dir, "box"))
	outsideFile := filepath.Join(b.outside, "notes.txt")
	if err := os.WriteFile(outsideFile, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notifications.jsonl")
	f := newFleetIn(t, filepath.Join(dir, "d"), refusingHarness(b, outsideFile, notes))
	f.MustRun("start", "boxed")
	waitRefused(f, b)
	key := filepath.Join(b.home, ".ssh", "id_ed25519")

	var sb = describeSandbox(f, "boxed")
	f.WaitFor("describe to count two file refusals", 15*time.Second, func() bool {
		sb = describeSandbox(f, "boxed")
		return sb != nil && sb.FilesDeniedCount != nil && *sb.FilesDeniedCount >= 2
	})
	if *sb.FilesDeniedCount != 2 || sb.LastFileDenied != outsideFile || sb.FilesDenied != "" || sb.Denied != 0 {
		t.Fatalf("describe's sandbox: %+v (count %d), want 2 file refusals, the last %s", sb, *sb.FilesDeniedCount, outsideFile)
	}
	if out := f.MustRun("describe", "boxed"); !strings.Contains(out, "2 file refusals (last "+outsideFile+")") {
		t.Errorf("describe's text does not count the file refusals:\n%s", out)
	}

	type message struct {
		Event, Harness, Reason string
	}
	var msgs []message
	f.WaitFor("two sandbox_denied notifications", 15*time.Second, func() bool {
		data, _ := os.ReadFile(notes)
		msgs = msgs[:0]
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m message
			if json.Unmarshal([]byte(line), &m) == nil {
				msgs = append(msgs, m)
			}
		}
		return len(msgs) >= 2
	})
	want := []string{"sandbox refused " + key + ": fs.read_file", "sandbox refused " + outsideFile + ": fs.write_file"}
	for i, m := range msgs {
		if m.Event != "sandbox_denied" || m.Harness != "boxed" || m.Reason != want[i] {
			t.Errorf("notification %d: %+v, want reason %q", i, m, want[i])
		}
	}
	data, _ := os.ReadFile(notes)
	if strings.Contains(string(data), "PRIVATE KEY") || strings.Contains(f.Log(), "PRIVATE KEY") {
		t.Error("the key's content left the sandbox")
	}
}

// With the kernel's audit off, describe says file refusals are not
// counted, and how an operator turns audit on, rather than a false 0.
func TestScenario_SandboxedHarnessSaysWhyFileRefusalsAreNotCounted(t *testing.T) {
	needAuditedLandlock(t)
	kaudittest.Set(t, false)
	dir := testenv.DirOutsideTmp(t, "he-")
	b := newSandboxBoxIn(t, filepath.Join(dir, "box"))
	outsideFile := filepath.Join(b.outside, "notes.txt")
	f := newFleetIn(t, filepath.Join(dir, "d"), refusingHarness(b, outsideFile, filepath.Join(dir, "notes")))
	f.MustRun("start", "boxed")
	waitRefused(f, b)
	sb := describeSandbox(f, "boxed")
	if sb == nil || sb.FilesDenied != kaudit.WhyAuditOff || sb.FilesDeniedCount != nil || sb.LastFileDenied != "" {
		t.Fatalf("describe's sandbox with audit off: %+v", sb)
	}
	if !strings.Contains(sb.FilesDenied, "auditctl -e 1") {
		t.Errorf("files_denied does not say how to turn audit on: %q", sb.FilesDenied)
	}
}
