package runs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

func openT(t *testing.T, path string, retain int) *Store {
	t.Helper()
	s, err := Open(path, retain)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func intp(i int) *int { return &i }

func begin(t *testing.T, s *Store, unit string, cause Cause) Run {
	t.Helper()
	r, err := s.Begin(unit, cause)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fileLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPersistAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "runs.jsonl")
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.SetClock(func() time.Time { return clock })
	a := begin(t, s, "p/a", api.CauseManual)
	if err := s.SetPID(a.ID, 42); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Minute)
	if err := s.End(a.ID, intp(3), ""); err != nil {
		t.Fatal(err)
	}
	b := begin(t, s, "b", api.CauseSchedule)
	if err := s.SetPID(b.ID, 43); err != nil {
		t.Fatal(err)
	}
	if err := s.End(b.ID, nil, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	before := s.List("", 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}

	s2 := openT(t, path, 0)
	after := s2.List("", 0)
	if fmt.Sprint(runsText(after)) != fmt.Sprint(runsText(before)) || len(after) != 2 {
		t.Fatalf("after reopen %v, want %v", runsText(after), runsText(before))
	}
	got, ok := s2.Get(a.ID)
	if !ok || got.PID != 42 || got.Cause != api.CauseManual || got.Harness != "p/a" ||
		*got.ExitCode != 3 || !got.StartedAt.Equal(clock.Add(-time.Minute)) || !got.EndedAt.Equal(clock) {
		t.Fatalf("run a after reopen: %s", runText(got))
	}
	c := begin(t, s2, "p/a", api.CauseRestart)
	if c.ID <= b.ID {
		t.Fatalf("id after reopen %d, not above %d", c.ID, b.ID)
	}
}

func runText(r Run) string {
	end, code := "nil", "nil"
	if r.EndedAt != nil {
		end = r.EndedAt.Format(time.RFC3339Nano)
	}
	if r.ExitCode != nil {
		code = fmt.Sprint(*r.ExitCode)
	}
	return fmt.Sprintf("%d %s %s pid=%d start=%s end=%s code=%s sig=%q",
		r.ID, r.Harness, r.Cause, r.PID, r.StartedAt.Format(time.RFC3339Nano), end, code, r.Signal)
}

func runsText(rs []Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, runText(r))
	}
	return out
}

func TestRetentionAndCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	s := openT(t, path, 3)
	var last Run
	for i := range 200 {
		last = begin(t, s, "a", api.CauseRestart)
		if err := s.SetPID(last.ID, 1000+i); err != nil {
			t.Fatal(err)
		}
		if err := s.End(last.ID, intp(i), ""); err != nil {
			t.Fatal(err)
		}
	}
	b := begin(t, s, "b", api.CauseManual)
	got := s.List("a", 0)
	if len(got) != 3 || got[2].ID != last.ID || got[0].ID != last.ID-2 {
		t.Fatalf("retained %v", runsText(got))
	}
	if l := s.List("a", 2); len(l) != 2 || l[1].ID != last.ID {
		t.Fatalf("List limit 2: %v", runsText(l))
	}
	if all := s.List("", 0); len(all) != 4 || all[3].ID != b.ID {
		t.Fatalf("List all: %v", runsText(all))
	}
	if _, ok := s.Get(last.ID - 3); ok {
		t.Fatal("a run beyond retention is still there")
	}
	// 600 changes were appended; compaction keeps the file near 2x retained.
	if n := fileLines(t, path); n > 2*4+compactSlack+1 {
		t.Fatalf("file holds %d records for 4 retained runs", n)
	}
}

func TestRetentionKeepsUnendedRuns(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "runs.jsonl"), 2)
	open := begin(t, s, "a", api.CauseManual)
	for range 5 {
		r := begin(t, s, "a", api.CauseRestart)
		if err := s.End(r.ID, intp(0), ""); err != nil {
			t.Fatal(err)
		}
	}
	got := s.List("a", 0)
	if len(got) != 2 || got[0].ID != open.ID {
		t.Fatalf("retained %v, want the open run and the newest", runsText(got))
	}
}

func TestReopenAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	s, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := begin(t, s, "a", api.CauseManual)
	if err := s.End(done.ID, intp(0), ""); err != nil {
		t.Fatal(err)
	}
	open := begin(t, s, "a", api.CauseRestart)
	// Crash: no Close, and a record torn half-way.
	crash(s)
	if _, err := s.f.WriteString(`{"id":99,"harness":"a","cau`); err != nil {
		t.Fatal(err)
	}
	if err := s.f.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openT(t, path, 0)
	r, ok := s2.Get(open.ID)
	if !ok || r.Ended() {
		t.Fatalf("dangling run after reopen: %v %v", ok, runText(r))
	}
	if _, ok := s2.Get(99); ok {
		t.Fatal("torn record was read")
	}
	if n := s2.CloseDangling("daemon-exit"); n != 1 {
		t.Fatalf("CloseDangling = %d, want 1", n)
	}
	r, _ = s2.Get(open.ID)
	if !r.Ended() || r.Signal != "daemon-exit" || r.ExitCode != nil {
		t.Fatalf("after CloseDangling: %s", runText(r))
	}
	if n := s2.CloseDangling("daemon-exit"); n != 0 {
		t.Fatalf("second CloseDangling = %d", n)
	}
	next := begin(t, s2, "a", api.CauseManual)
	if next.ID <= open.ID {
		t.Fatalf("id %d not above %d", next.ID, open.ID)
	}
	// The torn line was rewritten away: the file reads back cleanly.
	s2.Flush()
	s3, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if got, _ := s3.Get(next.ID); got.ID != next.ID {
		t.Fatalf("record appended after repair lost: %v", runsText(s3.List("", 0)))
	}
	if r, _ := s3.Get(open.ID); !r.Ended() {
		t.Fatal("CloseDangling was not persisted")
	}
}

func TestWaitWakesOnEnd(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "runs.jsonl"), 0)
	r := begin(t, s, "a", api.CauseTrigger)
	type res struct {
		run Run
		err error
	}
	got := make(chan res, 2)
	for range 2 {
		go func() {
			run, err := s.Wait(context.Background(), r.ID)
			got <- res{run, err}
		}()
	}
	// End may come before or after the waiters block; both must work.
	if err := s.End(r.ID, intp(7), ""); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		g := <-got
		if g.err != nil || !g.run.Ended() || *g.run.ExitCode != 7 {
			t.Fatalf("Wait = %s, %v", runText(g.run), g.err)
		}
	}
	// An ended run returns at once.
	if run, err := s.Wait(context.Background(), r.ID); err != nil || *run.ExitCode != 7 {
		t.Fatalf("Wait on ended run = %s, %v", runText(run), err)
	}
	if err := s.End(r.ID, intp(1), ""); err == nil {
		t.Fatal("second End succeeded")
	}
	if _, err := s.Wait(context.Background(), 12345); !errors.Is(err, ErrUnknownRun) {
		t.Fatalf("Wait on unknown run: %v", err)
	}
}

func TestWaitHonoursContextAndClose(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "runs.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := begin(t, s, "a", api.CauseManual)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Wait(ctx, r.ID)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel: %v", err)
	}
	go func() {
		_, err := s.Wait(context.Background(), r.ID)
		errc <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	if _, err := s.Begin("a", api.CauseManual); !errors.Is(err, ErrClosed) {
		t.Fatalf("Begin after Close: %v", err)
	}
}

func TestConcurrentBeginEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	s := openT(t, path, 10)
	var wg sync.WaitGroup
	ids := make(chan uint64, 8*50)
	for w := range 8 {
		wg.Go(func() {
			// One unit per worker: its run is trimmed only by its own next
			// Begin, after the Wait below has returned.
			unit := fmt.Sprintf("u%d", w)
			for i := range 50 {
				r, err := s.Begin(unit, api.CauseRestart)
				if err != nil {
					t.Error(err)
					return
				}
				ids <- r.ID
				wctx, cancel := context.WithCancel(context.Background())
				waited := make(chan error, 1)
				go func() {
					_, err := s.Wait(wctx, r.ID)
					waited <- err
				}()
				if err := s.SetPID(r.ID, i); err != nil {
					t.Error(err)
				}
				if err := s.End(r.ID, intp(i), ""); err != nil {
					t.Error(err)
				}
				if err := <-waited; err != nil {
					t.Error(err)
				}
				cancel()
				s.List(unit, 5)
				s.List("", 0)
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[uint64]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
	}
	for u := range 8 {
		if n := len(s.List(fmt.Sprintf("u%d", u), 0)); n != 10 {
			t.Fatalf("unit u%d retains %d runs, want 10", u, n)
		}
	}
}

// A reopen that failed after a compaction (disk full) is retried by the
// next write instead of failing every spawn until a restart.
func TestLostHandleIsReopenedOnTheNextWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	s := openT(t, path, 0)
	a := begin(t, s, "a", api.CauseManual)
	s.Flush() // the writer is idle: the handle may be taken from it
	if err := s.f.Close(); err != nil {
		t.Fatal(err)
	}
	s.f = nil // what a failed reopen in compact leaves
	b := begin(t, s, "a", api.CauseRestart)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openT(t, path, 0)
	if got := again.List("a", 0); len(got) != 2 || got[0].ID != a.ID || got[1].ID != b.ID {
		t.Fatalf("after reopen: %v", runsText(got))
	}
}

// crash stops the writer as a dying process would: what was written stays,
// nothing else happens (no Close).
func crash(s *Store) {
	s.Flush()
	close(s.w.stop)
	<-s.w.done
}
