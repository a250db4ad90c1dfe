package kaudit

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// The status follows the records: audit turned off says so at once, and
// a Landlock record shows it is on; other records change nothing.
func TestWatcher_RecordsMoveTheStatus(t *testing.T) {
	w := &Watcher{t: newTracker(time.Now), logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w.setStatus(Status{Counting: true})
	w.handle(datagram(1300, recSyscall))
	if s := w.Status(); !s.Counting {
		t.Fatalf("a syscall record changed the status: %+v", s)
	}
	w.handle(datagram(typeConfigChange, recConfigOff))
	if s := w.Status(); s.Counting || s.Why != WhyAuditOff {
		t.Fatalf("after audit_enabled=0: %+v", s)
	}
	w.handle(datagram(TypeLandlockAccess, recReadKey))
	if s := w.Status(); !s.Counting || s.Why != "" {
		t.Fatalf("after a Landlock record: %+v", s)
	}
}
