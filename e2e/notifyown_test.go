//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestScenario_ANotifyCommandLeavesNothingBehindInEitherOwnershipMode: a
// notify command that starts a setsid'd sleeper (out of its process group)
// and then hangs past timeout_s leaves no process of its own once `harness
// notify test` has reported it, whether the daemon holds it by a cgroup
// leaf (when it can) or by its tree marker (--cgroup=off).
func TestScenario_ANotifyCommandLeavesNothingBehindInEitherOwnershipMode(t *testing.T) {
	for _, args := range [][]string{nil, {"--cgroup=off"}} {
		t.Run(fmt.Sprint("flags", args), func(t *testing.T) {
			tag := "notify-own-" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
			started := filepath.Join(t.TempDir(), "started")
			f := newFleetArgs(t, fmt.Sprintf(`
[notify.hang]
command = ["sh", "-c", "setsid sleep 100000 & echo $! >> \"$P\"; exec sleep 100000"]
env = { P = %q, TAG = %q }
timeout_s = 0.3
`, started, tag), args...)
			t.Logf("ownership %+v", f.ownership)
			if _, _, code := f.Run("notify", "test", "hang"); code == 0 {
				t.Fatal("notify test of a hanging command succeeded")
			}
			if b, _ := os.ReadFile(started); len(bytes.Fields(b)) == 0 {
				t.Fatal("the command never started its sleeper")
			}
			want := []byte("TAG=" + tag + "\x00")
			left := procsLeft(func(pid int) bool {
				env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
				return err == nil && bytes.Contains(env, want)
			})
			if len(left) > 0 {
				t.Errorf("processes of the notify command outlived it: %v", left)
				for _, pid := range left {
					if p, err := os.FindProcess(pid); err == nil {
						p.Kill()
					}
				}
			}
		})
	}
}
