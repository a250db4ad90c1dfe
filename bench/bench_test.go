package main

import (
	"bufio"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary serve the bench's hidden modes (relay,
// ticker, TUI child, daemon), as the bench program does (it re-executes
// os.Executable()).
func TestMain(m *testing.M) {
	serveMode(os.Args)
	os.Exit(m.Run())
}

// TestSampleCPUCountsDescendantsByRole: a busy child whose arguments name
// it an upstream is counted as upstream CPU, and nothing of it elsewhere.
func TestSampleCPUCountsDescendantsByRole(t *testing.T) {
	// The child spins in shell arithmetic (no forks, so its own CPU time),
	// says so, and sleeps until killed: it is sampled alive.
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo spun; sleep 60`, "sh", "demo-upstream")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so the sleep dies with it
	before := sampleCPU(0)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "spun\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	got := sampleCPU(0).sub(before)
	if got.Upstream < 50*time.Millisecond || got.Bridge != 0 || got.Daemon != 0 {
		t.Fatalf("CPU by role = %+v, want the child's time (>= 50ms) under upstream only", got)
	}
}
