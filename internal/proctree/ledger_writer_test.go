package proctree

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
