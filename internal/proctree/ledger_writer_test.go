package proctree

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/harness-dev/harness/internal/disktest"
)

func readLedger(t *testing.T, path string) ledgerFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f ledgerFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestScenario_SlowDiskNeverDelaysASpawnOrAnExit: with the ledger's
// writer stuck in the disk, the adds and removes of a thousand runs (made
// on unit actors) return at once; once the disk answers, the file holds
// the newest state.
func TestScenario_SlowDiskNeverDelaysASpawnOrAnExit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AddInstance("i"); err != nil {
		t.Fatal(err)
	}
	g := disktest.NewGate()
	l.wrap = g.Wrap
	if err := l.Add(LedgerEntry{Unit: "first", PID: 1, Marker: "i:first:1"}); err != nil {
		t.Fatal(err)
	}
	<-g.Stuck() // the writer is stuck in the disk
	disktest.NeverWaits(t, g, 20*time.Second, "the ledger", func() error {
		for i := range 1000 {
			m := fmt.Sprintf("i:u:%d", i)
			if err := l.Add(LedgerEntry{Unit: "u", PID: 100 + i, Marker: m}); err != nil {
				return err
			}
			if i%2 == 0 {
				if err := l.Remove(m); err != nil {
					return err
				}
			}
		}
		return nil
	})
	l.Flush()
	f := readLedger(t, path)
	if len(f.Entries) != 501 || f.Entries[0].Marker != "i:first:1" || f.Entries[500].PID != 1099 || len(f.Instances) != 1 {
		t.Fatalf("file holds %d entries (%v), want 501 ending with pid 1099", len(f.Entries), f.Instances)
	}
}

// TestScenario_AFullDiskNeverFailsASpawnAndTheLedgerCatchesUp: a failing
// write is counted and retried; once the disk takes writes again the file
// holds the newest state without any further change.
func TestScenario_AFullDiskNeverFailsASpawnAndTheLedgerCatchesUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.json")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	disk := disktest.NewFull(true)
	l.wrap = disk.Wrap
	if err := l.Add(LedgerEntry{Unit: "a", PID: 7, Marker: "i:a:1"}); err != nil {
		t.Fatalf("Add on a full disk: %v", err)
	}
	l.Flush()
	if l.WriteFailures() == 0 || len(l.Entries()) != 1 {
		t.Fatalf("failures %d, entries %v", l.WriteFailures(), l.Entries())
	}
	disk.Set(false)
	deadline := time.Now().Add(10 * time.Second)
	for len(readLedger(t, path).Entries) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the ledger was not written after the disk recovered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.Flush()
}

// countingDisk counts the ledger's file writes.
type countingDisk struct{ n atomic.Int64 }

func (d *countingDisk) Wrap(w io.Writer) io.Writer { d.n.Add(1); return w }

// TestScenario_AThousandRemovalsAreAFewWrites: stop --all of 1,000
// units removes their 1,000 entries one by one; the writer gathers them
// for removeGap instead of rewriting the file after each. An entry added
// meanwhile is on disk at once, and the file ends with the newest state.
func TestScenario_AThousandRemovalsAreAFewWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.json")
		l, err := OpenLedger(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			if err := l.Add(LedgerEntry{Unit: "u", PID: 100 + i, Marker: fmt.Sprintf("i:u:%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		l.Flush()
		var disk countingDisk
		l.wrap = disk.Wrap
		start := time.Now()
		for i := range 999 {
			if err := l.Remove(fmt.Sprintf("i:u:%d", i)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the writer has written or waits for the gap
		}
		if n := disk.n.Load(); n > 2 {
			t.Fatalf("%d writes for 999 removals made one by one, want the first and one after the gap", n)
		}
		// An addition does not wait for the gap, and takes the pending
		// removals along.
		if err := l.Add(LedgerEntry{Unit: "v", PID: 7, Marker: "i:v:1"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if f := readLedger(t, path); len(f.Entries) != 2 || f.Entries[1].Marker != "i:v:1" {
			t.Fatalf("after an addition the file holds %d entries, want the last one left and the new one", len(f.Entries))
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the addition was written after %v, want at once", waited)
		}
		if err := l.Remove("i:v:1"); err != nil {
			t.Fatal(err)
		}
		l.Flush()
		if f := readLedger(t, path); len(f.Entries) != 1 || f.Entries[0].Marker != "i:u:999" {
			t.Fatalf("after Flush the file holds %+v, want i:u:999 alone", f.Entries)
		}
	})
}

// TestScenario_ABurstOfAdditionsIsWrittenEveryGap: start --all of 1,000
// units adds an entry every millisecond or so. The first is on disk at
// once; the rest are written at most every addGap, not after each, and
// the file ends with every entry.
func TestScenario_ABurstOfAdditionsIsWrittenEveryGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.json")
		l, err := OpenLedger(path)
		if err != nil {
			t.Fatal(err)
		}
		var disk countingDisk
		l.wrap = disk.Wrap
		const n = 1000
		start := time.Now()
		for i := range n {
			if err := l.Add(LedgerEntry{Unit: "u", PID: 100 + i, Marker: fmt.Sprintf("i:u:%d", i)}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the writer has written or waits for the gap
			if i == 0 {
				if f := readLedger(t, path); len(f.Entries) != 1 {
					t.Fatalf("after the first addition the file holds %d entries, want it at once", len(f.Entries))
				}
			}
			time.Sleep(time.Millisecond)
		}
		l.Flush()
		took := time.Since(start)
		if f := readLedger(t, path); len(f.Entries) != n {
			t.Fatalf("after Flush the file holds %d entries, want %d", len(f.Entries), n)
		}
		// One write per addGap: 42 here. Written after each addition, it
		// was a write per millisecond.
		if w, most := disk.n.Load(), int64(took/addGap)+2; w > most || w > n/10 {
			t.Errorf("%d writes for %d additions over %v, want at most %d (one per %v)", w, n, took, min(most, n/10), addGap)
		}
		t.Logf("%d writes for %d additions over %v", disk.n.Load(), n, took)
	})
}
