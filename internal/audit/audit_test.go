package audit

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

func entry(i int) api.AuditEntry {
	return api.AuditEntry{Time: time.Now().UTC(), Actor: "cli:1000", Door: api.DoorCLI, Op: "start", Target: fmt.Sprintf("h%d", i), Outcome: "ok"}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestScenario_EntriesAreReadBackInOrderAcrossARestart: what is recorded
// is read back oldest first, private to the user, and still there when
// the log is opened again.
func TestScenario_EntriesAreReadBackInOrderAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		l.Record(entry(i))
	}
	es, err := l.Read(time.Time{})
	if err != nil || len(es) != 3 || es[0].Target != "h0" || es[2].Target != "h2" {
		t.Fatalf("read %+v, %v", es, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, File))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit.jsonl: %v %v", fi, err)
	}
	l, err = Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Record(entry(3))
	es, _ = l.Read(time.Time{})
	if len(es) != 4 || es[3].Target != "h3" {
		t.Fatalf("after reopening: %+v", es)
	}
	if es, _ := l.Read(time.Now().Add(time.Hour)); len(es) != 0 {
		t.Fatalf("since the future: %+v", es)
	}
}

// TestScenario_TheLogIsBoundedByRotation: past MaxFileBytes the file is
// rotated, and only KeepFiles rotated files stay.
func TestScenario_TheLogIsBoundedByRotation(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{MaxFileBytes: 1000, KeepFiles: 2, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 100 {
		l.Record(entry(i))
		l.Sync()
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	total := int64(0)
	for _, e := range ents {
		names = append(names, e.Name())
		fi, _ := e.Info()
		total += fi.Size()
	}
	if strings.Join(names, ",") != "audit.1.jsonl,audit.2.jsonl,audit.jsonl" || total > 3000 {
		t.Fatalf("files %v, %d bytes", names, total)
	}
	es, _ := l.Read(time.Time{})
	if len(es) == 0 || es[len(es)-1].Target != "h99" {
		t.Fatalf("the newest entry is not last: %+v", es[len(es)-1])
	}
}

// TestScenario_AFullQueueDropsAndCountsNeverBlocks: Record never waits for
// the writer; what does not fit is counted.
func TestScenario_AFullQueueDropsAndCountsNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Queue: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.mu.Lock() // the writer is stuck on the disk
	done := make(chan struct{})
	go func() {
		for i := range 50 {
			l.Record(entry(i))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked on a stuck writer")
	}
	l.mu.Unlock()
	if l.Dropped() < 40 {
		t.Fatalf("dropped %d of 50 with a queue of 1", l.Dropped())
	}
}
