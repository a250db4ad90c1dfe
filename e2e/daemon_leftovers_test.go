//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// treeConfig runs a harness whose grandchild calls setsid, writing both
// pids to files so the test can look for them in /proc.
func treeConfig(dir string) string {
	return fmt.Sprintf(`
[harness.tree]
cmd = "sh"
args = ["-c", "echo $$ > %[1]s/child.pid; setsid sh -c 'echo $$ > %[1]s/grandchild.pid; exec sleep 100000' & exec sleep 100000"]
enabled = true
stop_grace = 2
`, dir)
}

func TestCLI_SIGTERMLeavesNothingRunning(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, treeConfig(dir))
	child := readPID(t, filepath.Join(dir, "child.pid"))
	grandchild := readPID(t, filepath.Join(dir, "grandchild.pid"))
	f.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-f.Exited:
	case <-time.After(20 * time.Second):
		t.Fatal("daemon did not exit on SIGTERM")
	}
	waitGone(t, "child", child)
	waitGone(t, "setsid grandchild", grandchild)
}

func TestCLI_SIGKILLedDaemonsLeftoversEndedAtNextStart(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, treeConfig(dir))
	child := readPID(t, filepath.Join(dir, "child.pid"))
	grandchild := readPID(t, filepath.Join(dir, "grandchild.pid"))
	f.Cmd.Process.Signal(syscall.SIGKILL)
	<-f.Exited
	waitGone(t, "direct child (parent-death signal)", child)
	if !alive(grandchild) {
		t.Log("grandchild already gone before restart; the ledger path is not exercised")
	}
	os.Remove(filepath.Join(dir, "child.pid"))
	os.Remove(filepath.Join(dir, "grandchild.pid"))
	f.start()
	waitGone(t, "escaped grandchild of the killed daemon", grandchild)
	// The new daemon autostarts the harness afresh.
	newChild := readPID(t, filepath.Join(dir, "child.pid"))
	if newChild == child {
		t.Fatal("no new child")
	}
}

func TestCLI_EnvFileSecretsNeverWritten(t *testing.T) {
	dir := t.TempDir()
	const secret = "s3cr3t-Value-7f1c2e"
	envFile := filepath.Join(dir, "secret.env")
	if err := os.WriteFile(envFile, []byte("# a secret\nexport API_TOKEN=\""+secret+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[harness.holder]
cmd = "sh"
args = ["-c", "test \"$API_TOKEN\" = '%s' && echo token-present; exec sleep 100000"]
env_file = %q
enabled = true
`, secret, envFile))
	f.WaitFor("the child to see its secret", 20*time.Second, func() bool {
		return strings.Contains(f.MustRun("logs", "holder"), "token-present")
	})
	f.MustRun("describe", "holder", "--json")
	f.MustRun("restart", "holder")
	f.waitState("holder", "running")
	f.Stop()
	assertNoSecret(t, secret, f.State, f.LogPath)
}

// assertNoSecret greps every file under the given paths for secret.
func assertNoSecret(t *testing.T, secret string, paths ...string) {
	t.Helper()
	files := 0
	for _, root := range paths {
		filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return nil
			}
			files++
			b, rerr := os.ReadFile(p)
			if rerr != nil {
				t.Errorf("read %s: %v", p, rerr)
				return nil
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("%s contains the env_file secret", p)
			}
			return nil
		})
	}
	if files < 3 {
		t.Fatalf("only %d files checked: the daemon wrote less than expected", files)
	}
}
