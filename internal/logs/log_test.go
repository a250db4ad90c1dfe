package logs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func openT(t *testing.T, dir, unit string, opt Options) *Log {
	t.Helper()
	l, err := Open(dir, unit, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return l
}

func write(t *testing.T, l *Log, s string) {
	t.Helper()
	if n, err := l.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

func texts(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Text)
	}
	return out
}

func TestRawWrapKeepsAbsoluteOffsets(t *testing.T) {
	l := openT(t, t.TempDir(), "u", Options{RingSize: 16, FileMaxBytes: -1})
	var all []byte
	for i := range 10 {
		chunk := fmt.Sprintf("%d-abcdef|", i) // 9 bytes, wraps the 16-byte ring
		all = append(all, chunk...)
		write(t, l, chunk)
	}
	data, start, end := l.Raw(0, 0)
	if end != int64(len(all)) || start != end-16 {
		t.Fatalf("window [%d,%d), want [%d,%d)", start, end, len(all)-16, len(all))
	}
	if !bytes.Equal(data, all[start:]) {
		t.Fatalf("Raw(0) = %q, want %q", data, all[start:])
	}
	// Every offset inside the window reads the bytes written there.
	for from := start; from <= end; from++ {
		for _, max := range []int{0, 1, 5, 16} {
			got, _, _ := l.Raw(from, max)
			want := all[from:]
			if max > 0 && len(want) > max {
				want = want[:max]
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Raw(%d,%d) = %q, want %q", from, max, got, want)
			}
		}
	}
	if got, _, _ := l.Raw(end+100, 0); len(got) != 0 {
		t.Fatalf("Raw past end = %q, want nothing", got)
	}
	// A single write larger than the ring keeps its tail at the right offsets.
	big := strings.Repeat("0123456789", 5)
	all = append(all, big...)
	write(t, l, big)
	data, start, end = l.Raw(0, 0)
	if end != int64(len(all)) || !bytes.Equal(data, all[start:]) || end-start != 16 {
		t.Fatalf("after big write: [%d,%d) %q, want tail of %d bytes %q", start, end, data, len(all), all[len(all)-16:])
	}
}

func TestRingMemoryGrowsLazily(t *testing.T) {
	l := openT(t, t.TempDir(), "idle", Options{FileMaxBytes: -1})
	if cap(l.ring) != 0 {
		t.Fatalf("fresh log holds %d ring bytes", cap(l.ring))
	}
	write(t, l, "hello\n")
	if c := cap(l.ring); c > 4096 {
		t.Fatalf("6 bytes written, ring holds %d", c)
	}
	write(t, l, strings.Repeat("x", DefaultRingSize*2))
	if c := cap(l.ring); c != DefaultRingSize {
		t.Fatalf("ring cap %d, want %d", c, DefaultRingSize)
	}
}

func TestFileRotation(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, "proj/name", Options{FileMaxBytes: 10, FileBackups: 2})
	var all string
	for i := range 7 {
		s := fmt.Sprintf("%04d\n", i) // 5 bytes
		all += s
		write(t, l, s)
	}
	write(t, l, "ABCDEFGHIJKLMNOPQRSTUVWXY") // larger than a file: split across rotations
	all += "ABCDEFGHIJKLMNOPQRSTUVWXY"
	base := filepath.Join(dir, "proj%2Fname.log")
	var kept string
	for _, p := range []string{base + ".2", base + ".1", base} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 10 {
			t.Errorf("%s has %d bytes, max 10", p, len(b))
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, st.Mode().Perm())
		}
		kept += string(b)
	}
	if !strings.HasSuffix(all, kept) || len(kept) != 30 {
		t.Fatalf("files hold %q, want the last 30 bytes of %q", kept, all)
	}
	if _, err := os.Stat(base + ".3"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a third backup exists: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Fatalf("unit name made a directory: %s", e.Name())
		}
	}
}

func TestFileAppendsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, "u", Options{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, l, "one\n")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, "u", Options{})
	write(t, l, "two\n")
	b, err := os.ReadFile(filepath.Join(dir, "u.log"))
	if err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("file = %q, %v", b, err)
	}
}

func TestEscapeUnitIsInjective(t *testing.T) {
	names := []string{"a/b", "a%2Fb", "a_b", "a-b", "..", ".", "a.b", "a%b"}
	seen := map[string]string{}
	for _, n := range names {
		e := EscapeUnit(n)
		if strings.ContainsAny(e, "/.") {
			t.Errorf("EscapeUnit(%q) = %q", n, e)
		}
		if prev, ok := seen[e]; ok {
			t.Errorf("%q and %q both escape to %q", prev, n, e)
		}
		seen[e] = n
	}
}

// crash drops a Log the way SIGKILL would: no flush, no id file update.
func crash(t *testing.T, l *Log) {
	t.Helper()
	if err := l.file.close(); err != nil {
		t.Fatal(err)
	}
}

func TestIDsGrowAcrossReopenAfterCrash(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, "p/u", Options{})
	if err != nil {
		t.Fatal(err)
	}
	// More than a reservation block, so the ceiling has moved at least once.
	for i := range idBlock + 500 {
		write(t, l, fmt.Sprintf("line %d\n", i))
	}
	last := l.Tail(1)[0].ID
	crash(t, l)

	l2, err := Open(dir, "p/u", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if es, oldest := l2.EntriesAfter(0, 0); len(es) != 0 || oldest != 0 {
		t.Fatalf("fresh log has entries %v oldest %d", es, oldest)
	}
	l2.Event(1, "spawned pid 42")
	first := l2.Tail(1)[0].ID
	if first <= last {
		t.Fatalf("id after crash %d, not above %d", first, last)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	// After a clean Close the counter continues without a gap.
	l3 := openT(t, dir, "p/u", Options{})
	l3.Event(1, "again")
	if got := l3.Tail(1)[0].ID; got != first+1 {
		t.Fatalf("id after clean close %d, want %d", got, first+1)
	}
}

func TestLineSplitting(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"lf", []string{"a\nb\n"}, []string{"a", "b"}},
		{"crlf", []string{"a\r\nb\r\n"}, []string{"a", "b"}},
		{"crlf split", []string{"a\r", "\nb\r", "\n"}, []string{"a", "b"}},
		{"progress bar", []string{"10%\r20%\r", "30%\r\n"}, []string{"30%"}},
		{"cr then escape then text", []string{"old\r\x1b[2Knew\n"}, []string{"new"}},
		{"blank lines dropped", []string{"\n\n  \n\x1b[0m\nx\n"}, []string{"x"}},
		{"trailing padding", []string{"pad   \t\n"}, []string{"pad"}},
		{"colors", []string{"\x1b[1;32mok\x1b[0m done\n"}, []string{"ok done"}},
		{"csi split", []string{"a\x1b", "[3", "1mb\x1b[", "0m\n"}, []string{"ab"}},
		{"osc split", []string{"\x1b]0;ti", "tle\x1b", "\\x\n"}, []string{"x"}},
		{"utf8 split", []string{"\xc3", "\xa9t\xc3", "\xa9\n"}, []string{"été"}},
		{"partial flushed", []string{"no newline"}, []string{"no newline"}},
		{"pending cr flushed", []string{"50%\r"}, []string{"50%"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := openT(t, t.TempDir(), "u", Options{FileMaxBytes: -1})
			for _, ch := range c.chunks {
				write(t, l, ch)
			}
			l.Flush()
			if got := texts(l.Tail(100)); !slices.Equal(got, c.want) {
				t.Fatalf("entries %q, want %q", got, c.want)
			}
			if got := assemble([]string{strings.Join(c.chunks, "")}, 4096); !slices.Equal(got, c.want) {
				t.Fatalf("unsplit input gives %q, want %q", got, c.want)
			}
		})
	}
}

func TestLongLinesComeInPieces(t *testing.T) {
	l := openT(t, t.TempDir(), "u", Options{FileMaxBytes: -1, MaxLineLen: 8})
	write(t, l, strings.Repeat("x", 20)+"\n")
	if got := texts(l.Tail(10)); !slices.Equal(got, []string{"xxxxxxxx", "xxxxxxxx", "xxxx"}) {
		t.Fatalf("pieces %q", got)
	}
	// A piece never ends inside a multi-byte character.
	got := assemble([]string{"aéééééééé\n"}, 4)
	for _, p := range got {
		if !utf8.ValidString(p) || strings.ContainsRune(p, utf8.RuneError) {
			t.Fatalf("piece %q is not whole characters (all %q)", p, got)
		}
	}
	if strings.Join(got, "") != "aéééééééé" {
		t.Fatalf("pieces %q lose text", got)
	}
}

func TestRunsAndEvents(t *testing.T) {
	l := openT(t, t.TempDir(), "u", Options{FileMaxBytes: -1})
	l.SetRun(1)
	write(t, l, "first\npartial")
	l.Event(1, "exited with\ncode 3\x1b[0m")
	write(t, l, "tail of run 1")
	l.SetRun(2)
	write(t, l, "second\n")
	got := l.Tail(10)
	want := []Entry{
		{Kind: KindOutput, RunID: 1, Text: "first"},
		{Kind: KindOutput, RunID: 1, Text: "partial"},
		{Kind: KindEvent, RunID: 1, Text: "exited with code 3"},
		{Kind: KindOutput, RunID: 1, Text: "tail of run 1"},
		{Kind: KindOutput, RunID: 2, Text: "second"},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %+v", got)
	}
	for i := range want {
		g := got[i]
		if g.Kind != want[i].Kind || g.RunID != want[i].RunID || g.Text != want[i].Text || g.Time.IsZero() {
			t.Errorf("entry %d = %+v, want %+v", i, g, want[i])
		}
		if i > 0 && g.ID <= got[i-1].ID {
			t.Errorf("ids not increasing: %d after %d", g.ID, got[i-1].ID)
		}
	}
}

func TestSetRunForgetsHalfSequence(t *testing.T) {
	l := openT(t, t.TempDir(), "u", Options{FileMaxBytes: -1})
	write(t, l, "x\x1b]0;title never ended")
	l.SetRun(2)
	write(t, l, "fresh\n")
	if got := texts(l.Tail(10)); !slices.Equal(got, []string{"x", "fresh"}) {
		t.Fatalf("entries %q", got)
	}
}

func TestEntriesAfterAndRetention(t *testing.T) {
	l := openT(t, t.TempDir(), "u", Options{FileMaxBytes: -1, MaxEntries: 5})
	if es, oldest := l.EntriesAfter(0, 0); es != nil || oldest != 0 {
		t.Fatalf("empty log: %v %d", es, oldest)
	}
	for i := range 8 {
		write(t, l, fmt.Sprintf("l%d\n", i))
	}
	all, oldest := l.EntriesAfter(0, 0)
	if got := texts(all); !slices.Equal(got, []string{"l3", "l4", "l5", "l6", "l7"}) || oldest != all[0].ID {
		t.Fatalf("retained %q oldest %d", got, oldest)
	}
	es, _ := l.EntriesAfter(all[2].ID, 0)
	if got := texts(es); !slices.Equal(got, []string{"l6", "l7"}) {
		t.Fatalf("after cursor: %q", got)
	}
	es, _ = l.EntriesAfter(0, 2)
	if got := texts(es); !slices.Equal(got, []string{"l6", "l7"}) {
		t.Fatalf("capped: %q, want the newest 2", got)
	}
	if es, _ := l.EntriesAfter(all[4].ID, 0); len(es) != 0 {
		t.Fatalf("after newest: %v", es)
	}
	if got := texts(l.Tail(3)); !slices.Equal(got, []string{"l5", "l6", "l7"}) {
		t.Fatalf("Tail(3) = %q", got)
	}
	if got := l.Tail(0); got != nil {
		t.Fatalf("Tail(0) = %v", got)
	}
}

func TestChangedFires(t *testing.T) {
	l, err := Open(t.TempDir(), "u", Options{FileMaxBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	ch := l.Changed()
	if ch2 := l.Changed(); ch2 != ch {
		t.Fatal("Changed returned a new channel without an append")
	}
	l.Flush() // nothing pending: not an append
	select {
	case <-ch:
		t.Fatal("fired without an append")
	default:
	}
	write(t, l, "partial") // raw bytes only, no entry yet
	<-ch                   // a missed close hangs here and fails the test by timeout
	ch = l.Changed()
	l.Event(0, "e")
	<-ch
	ch = l.Changed()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	<-ch
	<-l.Changed()
	if _, err := l.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestStalledReaderDoesNotBlockWrite(t *testing.T) {
	l := openT(t, t.TempDir(), "u", Options{FileMaxBytes: -1})
	stalled := l.Changed() // held, never received from
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10000 {
			if _, err := fmt.Fprintf(l, "line %d\n", i); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writer blocked behind a stalled reader")
	}
	<-stalled // it fired, and nobody had to receive for the writer to go on
	if got := l.Tail(1); len(got) != 1 || got[0].Text != "line 9999" {
		t.Fatalf("tail %v", got)
	}
}

func TestMirrorFailureKeepsWriting(t *testing.T) {
	dir := t.TempDir()
	// A non-empty directory where the backup must go makes rotation fail,
	// even for root.
	if err := os.MkdirAll(filepath.Join(dir, "u.log.1", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, "u", Options{FileMaxBytes: 4, FileBackups: 1})
	if err != nil {
		t.Fatal(err)
	}
	write(t, l, "abcd")
	write(t, l, "efgh\n") // needs a rotation, which fails: Write still succeeds
	write(t, l, "more\n")
	if data, _, _ := l.Raw(0, 0); string(data) != "abcdefgh\nmore\n" {
		t.Fatalf("ring %q", data)
	}
	got := texts(l.Tail(10))
	if len(got) != 3 || !strings.HasPrefix(got[0], "log: mirror file disabled") || got[1] != "abcdefgh" || got[2] != "more" {
		t.Fatalf("entries %q", got)
	}
	if err := l.Close(); err == nil || !strings.Contains(err.Error(), "mirror file disabled") {
		t.Fatalf("Close = %v, want the mirror failure", err)
	}
}

func TestCorruptIDsFileContinuesAboveOldIDs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "u.ids"), []byte("\x00\x00garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openT(t, dir, "u", Options{FileMaxBytes: -1})
	l.Event(0, "x")
	// Any id handed out before at a sane rate is far below the clock floor.
	if id := l.Tail(1)[0].ID; id < 1<<50 {
		t.Fatalf("id %d after a corrupt ids file", id)
	}
}

// A unit removed and re-added while its old Log still closes has two Logs
// on the same files for a moment; the old one closing last must not move
// the id counter back under what the new one handed out.
func TestIDsNeverGoBackWhenAnOlderLogClosesLast(t *testing.T) {
	dir := t.TempDir()
	old, err := Open(dir, "u", Options{})
	if err != nil {
		t.Fatal(err)
	}
	old.Event(1, "old run")
	fresh, err := Open(dir, "u", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		fresh.Event(2, fmt.Sprintf("line %d", i))
	}
	high := fresh.Tail(1)[0].ID
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	// fresh is never closed: a crash.
	again, err := Open(dir, "u", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	again.Event(3, "after the crash")
	if id := again.Tail(1)[0].ID; id <= high {
		t.Fatalf("id %d after the crash, but %d was already handed out", id, high)
	}
	fresh.Close()
}

func TestIDsNeverGoBackWhenTwoLogsInterleave(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, "u", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		a.Event(1, fmt.Sprintf("a %d", i))
	}
	b, err := Open(dir, "u", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1100 {
		a.Event(1, fmt.Sprintf("a %d", i))
	}
	for i := range 500 {
		b.Event(2, fmt.Sprintf("b %d", i))
	}
	high := max(a.Tail(1)[0].ID, b.Tail(1)[0].ID)
	b.Close()
	a.Close()
	c, err := Open(dir, "u", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Event(3, "next")
	if id := c.Tail(1)[0].ID; id <= high {
		t.Fatalf("id %d after both closed, but %d was handed out", id, high)
	}
}

// TestScenario_AUnitsFirstEntryWritesNoFile: a unit's first entry (the
// "spawned" event, made on its actor during a start --all of 1,000
// units) finds its ids reserved by Open in the background and writes no
// file; its id is below the ceiling on disk, so a crash cannot repeat it.
func TestScenario_AUnitsFirstEntryWritesNoFile(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, "u", Options{})
	<-l.reserved
	ids := filepath.Join(dir, "u.ids")
	before, err := os.Stat(ids)
	if err != nil {
		t.Fatalf("no ids file once Open's reservation is done: %v", err)
	}
	l.Event(1, "spawned pid 42")
	after, err := os.Stat(ids)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the first entry rewrote the ids file")
	}
	ents := l.Tail(10)
	if len(ents) != 1 || ents[0].ID >= onDisk(ids) {
		t.Fatalf("entries %+v against the ceiling on disk %d", ents, onDisk(ids))
	}
}
