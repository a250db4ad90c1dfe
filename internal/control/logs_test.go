package control

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logs"
)

func openLog(t *testing.T, opt logs.Options) *logs.Log {
	t.Helper()
	l, err := logs.Open(t.TempDir(), "u", opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func ptr[T any](v T) *T { return &v }

func TestSummary_CursorPagingAndAgedOut(t *testing.T) {
	l := openLog(t, logs.Options{MaxEntries: 50})
	for i := 1; i <= 120; i++ {
		fmt.Fprintf(l, "line-%d\n", i)
	}
	tail := summary(l, api.LogsArgs{Lines: 10, MaxBytes: DefaultMaxBytes})
	if len(tail.Entries) != 10 || tail.Entries[9].Text != "line-120" || tail.NextCursor != tail.Entries[9].ID || tail.Note != "" {
		t.Fatalf("tail: %+v", tail)
	}
	// A cursor returns only newer entries, oldest first, and pages on.
	mid := tail.Entries[2].ID
	page := summary(l, api.LogsArgs{Cursor: ptr(mid), Lines: 3, MaxBytes: DefaultMaxBytes})
	if len(page.Entries) != 3 || page.Entries[0].ID != mid+1 || !page.Truncated || page.NextCursor != mid+3 {
		t.Fatalf("page: %+v", page)
	}
	rest := summary(l, api.LogsArgs{Cursor: ptr(page.NextCursor), Lines: 100, MaxBytes: DefaultMaxBytes})
	if len(rest.Entries) != 4 || rest.Entries[3].Text != "line-120" || rest.Truncated {
		t.Fatalf("rest: %+v", rest)
	}
	// Caught up: nothing newer, the cursor stays.
	none := summary(l, api.LogsArgs{Cursor: ptr(rest.NextCursor), MaxBytes: DefaultMaxBytes})
	if len(none.Entries) != 0 || none.NextCursor != rest.NextCursor {
		t.Fatalf("caught up: %+v", none)
	}
	// Aged out: 70 entries were dropped; the note says so and the tail comes back.
	aged := summary(l, api.LogsArgs{Cursor: ptr(uint64(1)), Lines: 5, MaxBytes: DefaultMaxBytes})
	if !strings.Contains(aged.Note, "aged out") || len(aged.Entries) != 5 || aged.Entries[4].Text != "line-120" {
		t.Fatalf("aged: %+v", aged)
	}
	// max_bytes keeps whole entries, newest without a cursor, oldest with one.
	capped := summary(l, api.LogsArgs{Lines: 50, MaxBytes: 300})
	if !capped.Truncated || len(capped.Entries) == 0 || capped.Entries[len(capped.Entries)-1].Text != "line-120" {
		t.Fatalf("capped tail: %+v", capped)
	}
	cappedCur := summary(l, api.LogsArgs{Cursor: ptr(mid), Lines: 50, MaxBytes: 300})
	if !cappedCur.Truncated || cappedCur.Entries[0].ID != mid+1 {
		t.Fatalf("capped cursor page: %+v", cappedCur)
	}
	// A cursor past the newest entry is no position of this log: the
	// answer says so and hands back the newest id, so a follower goes on
	// from there instead of skipping everything up to its bad cursor.
	ahead := summary(l, api.LogsArgs{Cursor: ptr(rest.NextCursor + 500), MaxBytes: DefaultMaxBytes})
	if len(ahead.Entries) != 0 || ahead.NextCursor != rest.NextCursor || !strings.Contains(ahead.Note, "past the newest") || strings.Contains(ahead.Note, "aged out") {
		t.Fatalf("cursor past the newest: %+v", ahead)
	}
	fmt.Fprintf(l, "line-121\n")
	after := summary(l, api.LogsArgs{Cursor: ptr(ahead.NextCursor), MaxBytes: DefaultMaxBytes})
	if len(after.Entries) != 1 || after.Entries[0].Text != "line-121" {
		t.Fatalf("following on from the corrected cursor: %+v", after)
	}
}

func TestRaw_OffsetsBeforeWindowPastEndAndPaging(t *testing.T) {
	l := openLog(t, logs.Options{RingSize: 1000, FileMaxBytes: -1})
	var all strings.Builder
	for i := range 300 {
		fmt.Fprintf(&all, "%04d\n", i)
	}
	l.Write([]byte(all.String())) // 1500 bytes into a 1000-byte window
	_, start, end := l.Raw(0, 0)
	if start != 500 || end != 1500 {
		t.Fatalf("window [%d,%d)", start, end)
	}
	before := raw(l, api.LogsArgs{Offset: ptr(int64(10)), MaxBytes: 100})
	if before.Offset != 500 || !strings.Contains(before.Note, "before") || before.NextOffset != 600 || !before.Truncated {
		t.Fatalf("before window: %+v", before)
	}
	past := raw(l, api.LogsArgs{Offset: ptr(int64(5000)), MaxBytes: 100})
	if past.Text == "" || !strings.Contains(past.Note, "past the end") || past.NextOffset != 1500 || !strings.HasSuffix(past.Text, "0299\n") {
		t.Fatalf("past end: %+v", past)
	}
	atEnd := raw(l, api.LogsArgs{Offset: ptr(int64(1500)), MaxBytes: 100})
	if atEnd.Text != "" || atEnd.Note != "" || atEnd.NextOffset != 1500 || atEnd.Truncated {
		t.Fatalf("caught up: %+v", atEnd)
	}
	page := raw(l, api.LogsArgs{Offset: ptr(int64(1000)), MaxBytes: 10})
	if page.Text != "0200\n0201\n" || page.NextOffset != 1010 {
		t.Fatalf("page: %+v", page)
	}
	lines := raw(l, api.LogsArgs{Lines: 2, MaxBytes: DefaultMaxBytes})
	if lines.Text != "0298\n0299\n" || lines.Offset != 1490 {
		t.Fatalf("last lines: %+v", lines)
	}
}
