package proctree

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// ledgerGate holds every write until open is closed; in is closed by the
// first.
type ledgerGate struct {
	in, open chan struct{}
	once     sync.Once
}

func (g *ledgerGate) wrap(w io.Writer) io.Writer {
	return ledgerWriterFunc(func(p []byte) (int, error) {
		g.once.Do(func() { close(g.in) })
		<-g.open
		return w.Write(p)
	})
}

type ledgerWriterFunc func([]byte) (int, error)

func (f ledgerWriterFunc) Write(p []byte) (int, error) { return f(p) }

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
	g := &ledgerGate{in: make(chan struct{}), open: make(chan struct{})}
	l.wrap = g.wrap
	if err := l.Add(LedgerEntry{Unit: "first", PID: 1, Marker: "i:first:1"}); err != nil {
		t.Fatal(err)
	}
	<-g.in // the writer is stuck in the disk
	done := make(chan error, 1)
	go func() {
		for i := range 1000 {
			m := fmt.Sprintf("i:u:%d", i)
			if err := l.Add(LedgerEntry{Unit: "u", PID: 100 + i, Marker: m}); err != nil {
				done <- err
				return
			}
			if i%2 == 0 {
				if err := l.Remove(m); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		close(g.open)
		t.Fatal("the ledger waited for the disk")
	}
	close(g.open)
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
	var mu sync.Mutex
	broken := true
	l.wrap = func(w io.Writer) io.Writer {
		return ledgerWriterFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			if broken {
				return 0, errors.New("no space left on device")
			}
			return w.Write(p)
		})
	}
	if err := l.Add(LedgerEntry{Unit: "a", PID: 7, Marker: "i:a:1"}); err != nil {
		t.Fatalf("Add on a full disk: %v", err)
	}
	l.Flush()
	if l.WriteFailures() == 0 || len(l.Entries()) != 1 {
		t.Fatalf("failures %d, entries %v", l.WriteFailures(), l.Entries())
	}
	mu.Lock()
	broken = false
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for len(readLedger(t, path).Entries) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the ledger was not written after the disk recovered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.Flush()
}
