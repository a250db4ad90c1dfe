package runs

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/disktest"
)

// TestScenario_SlowDiskNeverDelaysARun: with the writer stuck in the disk,
// a thousand runs begin, get their pid and end without waiting (they run on
// unit actors); once the disk answers, the file holds every one of them.
func TestScenario_SlowDiskNeverDelaysARun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	g := disktest.NewGate()
	s, err := openWith(path, 2000, g.Wrap)
	if err != nil {
		t.Fatal(err)
	}
	first := begin(t, s, "a", api.CauseManual)
	<-g.Stuck() // the writer is stuck in the disk
	const n = 1000
	disktest.NeverWaits(t, g, 20*time.Second, "runs", func() error {
		for i := range n {
			r, err := s.Begin("a", api.CauseRestart)
			if err == nil {
				err = s.SetPID(r.ID, 1000+i)
			}
			if err == nil {
				err = s.End(r.ID, intp(0), "")
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openT(t, path, 2000)
	got := again.List("a", 0)
	if len(got) != n+1 || got[0].ID != first.ID || !got[n].Ended() || got[n].PID != 1000+n-1 {
		t.Fatalf("after reopen: %d runs, last %s", len(got), runText(got[len(got)-1]))
	}
}

// TestScenario_AFullDiskNeverFailsARunAndTheHistoryRecovers: while every
// write fails, runs still begin and end (memory is the truth), failures are
// counted, and once the disk takes writes again the file is rewritten with
// every run, the ones queued while it failed included.
func TestScenario_AFullDiskNeverFailsARunAndTheHistoryRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	fw := disktest.NewFull(false)
	s, err := openWith(path, 0, fw.Wrap)
	if err != nil {
		t.Fatal(err)
	}
	kept := begin(t, s, "a", api.CauseManual)
	s.Flush()
	fw.Set(true)
	var ids []uint64
	for range 5 {
		r := begin(t, s, "a", api.CauseRestart)
		if err := s.End(r.ID, intp(1), ""); err != nil {
			t.Fatalf("End on a full disk: %v", err)
		}
		ids = append(ids, r.ID)
	}
	s.Flush()
	if s.WriteFailures() == 0 {
		t.Fatal("no failure counted")
	}
	fw.Set(false)
	s.Flush() // the retry (or this flush) rewrites the file from memory
	if err := s.Close(); err != nil {
		t.Fatalf("close after recovery: %v", err)
	}
	again := openT(t, path, 0)
	got := again.List("a", 0)
	if len(got) != 6 || got[0].ID != kept.ID || got[5].ID != ids[4] || !got[5].Ended() {
		t.Fatalf("after recovery: %s", runsText(got))
	}
}

// TestCloseReportsAHistoryItCouldNotWrite: a store closed while the disk
// still refuses says so.
func TestCloseReportsAHistoryItCouldNotWrite(t *testing.T) {
	fw := disktest.NewFull(true)
	s, err := openWith(filepath.Join(t.TempDir(), "runs.jsonl"), 0, fw.Wrap)
	if err != nil {
		t.Fatal(err)
	}
	begin(t, s, "a", api.CauseManual)
	if err := s.Close(); err == nil {
		t.Fatal("Close hid an unwritten history")
	}
}
