package proctree

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

const (
	stealIterations = 200
	stealWorkers    = 8 // concurrent spawners: more SIGCHLDs racing each Spawn
)

// Registered children that exit at once must keep their real status for
// cmd.Wait while the reaper is busy reaping adopted orphans produced in
// parallel.
func TestReaperNeverStealsRegisteredChild(t *testing.T) {
	r := startReaper(t)
	var (
		next    atomic.Int64 // next iteration to run
		orphans atomic.Int64
		wg      sync.WaitGroup
	)
	errc := make(chan error, stealWorkers+1)
	stop := make(chan struct{})
	go func() {
		errc <- produceOrphans(r, stop, &orphans)
	}()
	for range stealWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < stealIterations; i = next.Add(1) - 1 {
				if err := runRegisteredExit(r, int(i%7)); err != nil {
					errc <- fmt.Errorf("iteration %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if orphans.Load() == 0 {
		t.Fatal("no orphans were produced; the test did not exercise the reaper")
	}
	waitFor(t, 5*time.Second, "every adopted orphan reaped", func() bool { return len(ourZombies()) == 0 })
	t.Logf("%d adopted orphans reaped alongside %d registered children", orphans.Load(), stealIterations)
}

// runRegisteredExit spawns a helper that exits with code at once and checks
// that Wait still sees that code.
func runRegisteredExit(r *Reaper, code int) error {
	h, err := spawnHelper(r, "exit", nil, fmt.Sprintf("%s=%d", exitCodeEnv, code))
	if err != nil {
		return err
	}
	defer r.Release(h.cmd.Process.Pid)
	err = h.cmd.Wait()
	if h.cmd.ProcessState == nil {
		return fmt.Errorf("wait failed (reaper stole the child?): %w", err)
	}
	if got := h.cmd.ProcessState.ExitCode(); got != code {
		return fmt.Errorf("exit code %d, want %d (wait error %v)", got, code, err)
	}
	return nil
}

// produceOrphans runs "orphan" helpers until stop closes, each leaving a
// grandchild that exits after re-parenting to us: an unregistered zombie.
func produceOrphans(r *Reaper, stop <-chan struct{}, n *atomic.Int64) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		h, err := spawnHelper(r, "orphan", nil)
		if err != nil {
			return err
		}
		err = h.cmd.Wait()
		r.Release(h.cmd.Process.Pid)
		if err != nil {
			return fmt.Errorf("orphan helper: %w", err)
		}
		n.Add(1)
	}
}

func TestReaperStopWithoutStart(t *testing.T) {
	r := NewReaper(nil)
	r.Stop()
	r.Stop()
	pid, err := r.Spawn(func() (int, error) { return 0, syscall.EAGAIN })
	if !errors.Is(err, syscall.EAGAIN) || pid != 0 {
		t.Fatalf("Spawn returned %d, %v; want start's error", pid, err)
	}
}

// Spawns overlap, so one's fork can run while another waits for its
// child's exec, but no more than SpawnsAtOnce are in flight: each holds
// an OS thread, and a start --all of 1,000 must not make 1,000 threads.
func TestReaperRunsUpToSpawnsAtOnceTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewReaper(nil)
		limit := SpawnsAtOnce()
		var inFlight, most atomic.Int64
		release := make(chan struct{})
		var wg sync.WaitGroup
		for i := range limit + 2 {
			wg.Go(func() {
				pid, err := r.Spawn(func() (int, error) {
					most.Store(max(most.Load(), inFlight.Add(1)))
					<-release
					inFlight.Add(-1)
					return 1000 + i, nil
				})
				if err != nil || pid != 1000+i {
					t.Errorf("Spawn %d returned %d, %v", i, pid, err)
				}
			})
		}
		synctest.Wait() // every spawn is in its start or waiting for a slot
		if got := inFlight.Load(); got != int64(limit) {
			t.Fatalf("%d spawns in flight with %d asked for, want SpawnsAtOnce = %d", got, limit+2, limit)
		}
		close(release)
		wg.Wait()
		if got := most.Load(); got != int64(limit) {
			t.Errorf("at most %d spawns were in flight, want %d", got, limit)
		}
		r.mu.Lock()
		registered := len(r.owned)
		r.mu.Unlock()
		if registered != limit+2 {
			t.Errorf("%d pids registered, want %d", registered, limit+2)
		}
	})
}
