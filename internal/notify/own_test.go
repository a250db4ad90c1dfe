//go:build linux

package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/config"
)

// tagged lists the live processes whose environment carries tag.
func tagged(tag string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(tag)) {
			continue
		}
		if running(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestScenario_ANotifyCommandsSetsidChildDoesNotOutliveItsTimeout: a
// command that starts a setsid'd sleeper (a session and group of its own)
// and then hangs past timeout_s leaves no process behind once the
// delivery has failed: every process with the command's environment is
// gone.
func TestScenario_ANotifyCommandsSetsidChildDoesNotOutliveItsTimeout(t *testing.T) {
	b := make([]byte, 8)
	rand.Read(b)
	tag := "NOTIFY_TEST_TAG=" + hex.EncodeToString(b)
	dir := t.TempDir()
	hang := &config.Notify{Name: "hang", Command: []string{"sh", "-c", `setsid sleep 1000 & echo $! > "$P"; exec sleep 1000`},
		Env: map[string]string{"P": filepath.Join(dir, "pid"), "NOTIFY_TEST_TAG": tag[len("NOTIFY_TEST_TAG="):]},
		On:  config.NotifyEvents, Timeout: 300 * time.Millisecond}
	n := newTestNotifier(t, hang)
	if _, err := n.Test(context.Background(), "hang"); err == nil {
		t.Fatal("the hanging command was not reported")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "pid")); len(b) == 0 {
		t.Fatal("the command never started its sleeper")
	}
	if left := tagged(tag); len(left) > 0 {
		t.Errorf("processes of the notify command outlived it: %v", left)
		for _, pid := range left {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}
}
