package logs

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestOnEntrySeesEveryEntryInIDOrder: the hook gets exactly the entries
// readers get, in id order, also from concurrent writers and from the
// partial line that Close flushes.
func TestOnEntrySeesEveryEntryInIDOrder(t *testing.T) {
	var mu sync.Mutex
	var got []Entry
	l, err := Open(t.TempDir(), "p/u", Options{OnEntry: func(e Entry) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	l.SetRun(7)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				if i%10 == 0 {
					l.Event(7, fmt.Sprintf("event %d/%d", w, i))
				}
				fmt.Fprintf(l, "w%d line %d\n", w, i)
			}
		})
	}
	wg.Wait()
	l.Write([]byte("no newline yet"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	want, _ := l.EntriesAfter(0, 0)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4*110+1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("hook saw %d entries, readers %d; equal %v", len(got), len(want), reflect.DeepEqual(got, want))
	}
	for i, e := range got {
		if e.ID == 0 || e.RunID != 7 || (i > 0 && e.ID <= got[i-1].ID) {
			t.Fatalf("entry %d: %+v (previous %+v)", i, e, got[max(0, i-1)])
		}
	}
	if last := got[len(got)-1]; last.Text != "no newline yet" {
		t.Fatalf("last entry %+v, want the flushed partial line", last)
	}
}

// TestScenario_MaskRewritesEntriesNotTheRing: Options.Mask rewrites every
// entry (output and event) before readers and OnEntry see it; the raw ring
// keeps the program's bytes.
func TestScenario_MaskRewritesEntriesNotTheRing(t *testing.T) {
	var hooked []string
	mask := func(s string) string { return strings.ReplaceAll(s, "s3cret", "[masked]") }
	l, err := Open(t.TempDir(), "u", Options{Mask: mask, OnEntry: func(e Entry) { hooked = append(hooked, e.Text) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.SetRun(1)
	fmt.Fprintf(l, "pw s3cret\n")
	l.Output("again s3cret")
	l.Event(1, "event s3cret")
	var texts []string
	for _, e := range l.Tail(10) {
		texts = append(texts, e.Text)
	}
	want := []string{"pw [masked]", "again [masked]", "event [masked]"}
	if !reflect.DeepEqual(texts, want) || !reflect.DeepEqual(hooked, want) {
		t.Fatalf("entries %q, hook %q, want %q", texts, hooked, want)
	}
	if raw, _, _ := l.Raw(0, 0); string(raw) != "pw s3cret\n" {
		t.Fatalf("ring %q", raw)
	}
}
