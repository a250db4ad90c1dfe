package proctree

import (
	"sync"
	"testing"
)

// TestScenario_ManyReapsAtOnceShareAPassYetEachSeesItsProcess: a stop of
// many units has each unit's reap call Find and Kill at once. Concurrent
// callers share /proc passes (far fewer passes than calls), and still
// each caller sees a process that was started before it called, in every
// round, however the passes fall.
func TestScenario_ManyReapsAtOnceShareAPassYetEachSeesItsProcess(t *testing.T) {
	r := startReaper(t)
	const callers = 64
	for round := range 5 {
		marker := NewMarker(inst("shared"), "u", uint64(round))
		h := startHelper(t, r, "sleep", SysProcAttr(), MarkerEnv(marker))
		if _, err := h.out.ReadString('\n'); err != nil {
			t.Fatalf("helper not ready: %v", err)
		}
		pid := h.cmd.Process.Pid

		shared.mu.Lock()
		before := shared.begun
		shared.mu.Unlock()
		var wg sync.WaitGroup
		found := make([][]int, callers)
		gate := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-gate
				found[i] = Find(marker)
			})
		}
		close(gate)
		wg.Wait()
		shared.mu.Lock()
		passes := shared.begun - before
		shared.mu.Unlock()
		for i, f := range found {
			if len(f) != 1 || f[0] != pid {
				t.Fatalf("round %d caller %d: Find = %v, want [%d]", round, i, f, pid)
			}
		}
		if passes == 0 || passes > callers/4 {
			t.Fatalf("round %d: %d callers took %d /proc passes, want them shared (1..%d)", round, callers, passes, callers/4)
		}
		t.Logf("round %d: %d callers, %d passes", round, callers, passes)

		if n := Kill(pid, marker, 0, 9); n != 1 {
			t.Fatalf("Kill = %d, want 1", n)
		}
		h.wait(t)
	}
}
