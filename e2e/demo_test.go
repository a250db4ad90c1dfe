//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// environHas lists live pids whose environment holds kv exactly.
func environHas(kv string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if string(v) == kv {
				var pid int
				for _, c := range e.Name() {
					pid = pid*10 + int(c-'0')
				}
				if alive(pid) {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

func TestDemo_ShowsTheFleetAndMCPThenLeavesNothingRunning(t *testing.T) {
	cmd := exec.Command(harnessBin, "demo")
	cmd.Env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=")
	var buf bytes.Buffer
	var mu sync.Mutex
	w := lockedWriter{&mu, &buf}
	cmd.Stdout, cmd.Stderr = w, w
	output := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sockRe := regexp.MustCompile(`export HARNESS_SOCKET=(\S+)`)
	var socket string
	deadline := time.Now().Add(30 * time.Second)
	for socket == "" {
		if m := sockRe.FindStringSubmatch(output()); m != nil {
			socket = m[1]
		} else if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("demo printed no socket:\n%s", output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// While it runs, the CLI reaches it like any daemon.
	list := exec.Command(harnessBin, "--socket", socket, "list")
	lo, err := list.CombinedOutput()
	if err != nil || !strings.Contains(string(lo), "ticker") || !strings.Contains(string(lo), "crashy") {
		t.Fatalf("list against the demo: %v\n%s", err, lo)
	}
	harnessPIDs := environHas("HARNESS_SOCKET=" + socket)
	if len(harnessPIDs) == 0 {
		t.Fatal("no demo harness processes found")
	}
	cmd.Process.Signal(syscall.SIGINT) // Ctrl-C
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo exit: %v\n%s", err, output())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("demo did not end on Ctrl-C:\n%s", output())
	}
	text := output()
	for _, want := range []string{"harness_list", "demo__echo", "hello through the broker", "not_permitted", "nothing left running"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	for _, pid := range harnessPIDs {
		waitGone(t, "demo harness", pid)
	}
	if left := environHas("HARNESS_SOCKET=" + socket); len(left) > 0 {
		t.Fatalf("demo processes left running: %v", left)
	}
	if _, err := os.Stat(filepath.Dir(socket)); err == nil {
		t.Fatalf("demo left its temp dir %s", filepath.Dir(socket))
	}
}
