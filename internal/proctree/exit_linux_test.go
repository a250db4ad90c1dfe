package proctree

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threads is this process's OS thread count.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestScenario_WaitingForManyUnitsHoldsNoThreadEach: the supervisor waits
// for every running unit's main process with WaitExit. A blocking waitid
// held an OS thread per unit (1,000 threads at 1,000 units); on a pidfd
// the waits sit in the runtime's poller ("IO wait"), and each still
// returns at its child's exit with the child left a zombie.
func TestScenario_WaitingForManyUnitsHoldsNoThreadEach(t *testing.T) {
	const n = 200
	base := threads(t)
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = SysProcAttr()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = c
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	done := make(chan error, n)
	for _, c := range cmds {
		go func() { done <- WaitExit(c.Process.Pid) }()
	}
	// Every wait has started once n goroutines sit in WaitExit in the
	// poller; a blocking waitid shows as "syscall" instead, never this.
	waitFor(t, 10*time.Second, "every WaitExit waiting in the poller", func() bool {
		buf := make([]byte, 8<<20)
		buf = buf[:runtime.Stack(buf, true)]
		waiting := 0
		for _, g := range bytes.Split(buf, []byte("\n\n")) {
			if bytes.Contains(g, []byte("[IO wait")) && bytes.Contains(g, []byte("proctree.WaitExit")) {
				waiting++
			}
		}
		return waiting == n
	})
	if got := threads(t); got > base+n/4 {
		t.Fatalf("%d threads while waiting for %d children (%d before): a thread per wait", got, n, base)
	}
	for _, c := range cmds {
		if err := c.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a WaitExit did not return after its child was killed")
		}
	}
	for _, c := range cmds {
		if st := mustStat(t, c.Process.Pid); st.state != 'Z' {
			t.Fatalf("after WaitExit child %d is in state %c, want a zombie (not reaped)", c.Process.Pid, st.state)
		}
	}
}
