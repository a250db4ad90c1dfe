package term

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// storm is output that froze the daemon before the clamp: every
// count-taking sequence with a count of a hundred million.
func storm(n int) []byte { return stormOf(n, 99999999) }

// stormOf is storm with every count set to count: with the screen's own
// size it is what the clamp turns storm into, the cost to compare with.
func stormOf(n, count int) []byte {
	var b strings.Builder
	for i := range n {
		for _, f := range "b@PXIZLMSTABCDEFG`ade" {
			fmt.Fprintf(&b, "x\x1b[%d%c", count, f)
		}
		fmt.Fprintf(&b, "\x1b[%d;%dH\x1b[%d;%df%d\r\n", count, count, count, count, i)
	}
	return []byte(b.String())
}

// feedTime is how long feeding data to a fresh cols x rows Term takes.
func feedTime(cols, rows int, data []byte) time.Duration {
	tm := New(Options{Cols: cols, Rows: rows})
	defer tm.Close()
	tm.Feed([]byte{' '}) // builds the emulator, which is not the input's cost
	start := time.Now()
	tm.Feed(data)
	return time.Since(start)
}

// leastFeed is the least time of three feeds of data to fresh cols x rows
// Terms: a busy machine stalls any one feed, never all three.
func leastFeed(cols, rows int, data []byte) time.Duration {
	least := time.Duration(1<<63 - 1)
	for range 3 {
		least = min(least, feedTime(cols, rows, data))
	}
	return least
}

// TestScenario_AHugeCountCostsNoMoreThanTheScreen: `x\e[99999999b` and its
// kin cost what the same sequences with the screen's cell count as their
// count cost (measured in the same run, so a loaded machine slows both;
// unclamped they took minutes), and the screen shows what a terminal
// would.
func TestScenario_AHugeCountCostsNoMoreThanTheScreen(t *testing.T) {
	data := storm(50)
	took := leastFeed(120, 40, data)
	base := leastFeed(120, 40, stormOf(50, 120*40))
	slack := time.Duration(1)
	if raceOn {
		slack = 10
	}
	if took > 4*base+100*time.Millisecond*slack {
		t.Fatalf("%d bytes of huge counts took %v, the same with counts of 4800 (the screen) %v", len(data), took, base)
	}
	tm := New(Options{Cols: 120, Rows: 40})
	defer tm.Close()
	tm.Feed([]byte("\x1b[H\x1b[2Jy\x1b[99999999b"))
	s := tm.Snapshot(SnapshotOptions{})
	if s.Lines[0] != strings.Repeat("y", 120) || s.Lines[1] != "y" || s.Lines[2] != "" {
		t.Fatalf("REP beyond the line: rows %q, %q", s.Lines[0], s.Lines[1])
	}
	t.Logf("%d bytes in %v, with counts of 4800 %v", len(data), took, base)
}

// TestScenario_ClampingChangesNothingOnScreen: counts a few times beyond
// the screen (cheap enough to feed unclamped) leave the same screen,
// cursor and scrollback clamped as unclamped, for every count-taking
// sequence but REP (whose clamp to the line is documented).
func TestScenario_ClampingChangesNothingOnScreen(t *testing.T) {
	var b strings.Builder
	b.WriteString("\x1b[?69h") // DECLRMM, so CSI s is DECSLRM
	for i := range 12 {
		for _, f := range "@PXIZLMSTABCDEFG`ade" {
			fmt.Fprintf(&b, "%c%d\x1b[%d%c", 'a'+rune(i%26), i, 150+i*7, f)
		}
		fmt.Fprintf(&b, "\x1b[%d;%dH*\x1b[%d;%df+", 300+i, 400+i, 45+i, 2000+i)
		fmt.Fprintf(&b, "\x1b[%d;%dr\x1b[%d;%ds\x1b[r\x1b[s\x1b[38:2::255:0:%dmc\x1b[m", 2+i%3, 90+i, 3, 500+i, i)
	}
	data := []byte(b.String())
	for _, sz := range [][2]int{{80, 24}, {20, 6}} {
		a := New(Options{Cols: sz[0], Rows: sz[1]})
		u := New(Options{Cols: sz[0], Rows: sz[1]})
		u.noClamp = true
		for i := 0; i < len(data); i += 7 { // sequences split between calls
			j := min(len(data), i+7)
			a.Feed(data[i:j])
			u.Feed(data[i:j])
		}
		sa := a.Snapshot(SnapshotOptions{Scrollback: 1000, ANSI: true})
		su := u.Snapshot(SnapshotOptions{Scrollback: 1000, ANSI: true})
		if fmt.Sprintf("%#v", sa) != fmt.Sprintf("%#v", su) {
			t.Errorf("%dx%d: clamped\n%#v\nunclamped\n%#v", sz[0], sz[1], sa, su)
		}
		a.Close()
		u.Close()
	}
}

// TestClampRewrites: what the emulator is given, byte for byte.
func TestClampRewrites(t *testing.T) {
	cases := []struct{ in, want string }{
		{"x\x1b[99999999b", "x\x1b[80b"},
		{"\x1b[99999999I\x1b[99999999Z\x1b[9999X", "\x1b[80I\x1b[80Z\x1b[80X"},
		{"\x1b[99999999L\x1b[0000000000000000000000000000000000000007M", "\x1b[24L\x1b[7M"},
		{"\x1b[99999;99999H\x1b[5;6f", "\x1b[24;80H\x1b[5;6f"},
		// A C0 control inside is executed at once; x/vt's parser then
		// dispatches the final byte ORed with it ('b'|'\n' = 'j'), and
		// the emulator is given what it would have dispatched.
		{"\x1b[999\n99b", "\x1b[\n65535j"},
		{"\x1b[?1049h\x1b[?2004h\x1b[>4;2m", "\x1b[?1049h\x1b[?2004h\x1b[>4;2m"}, // not counts
		{"\x1b[38:2::255:0:0m\x1b[1;;4m", "\x1b[38:2::255:0:0m\x1b[1;;4m"},       // sub-parameters kept
		{"\x1b[99999999m", "\x1b[65535m"},
		{"\x1b[5 q\x1b[2 @", "\x1b[5 q\x1b[2 @"},             // intermediates
		{"\x1b[99\x1b[3X", "\x1b[\x1b[3X"},                   // ESC abandons the first
		{"\x1b[99\x18ab", "\x1b[\x18ab"},                     // so does CAN
		{"\x1b[ 5b", "\x1b[ 0b"},                             // dropped by the parser: dropped by the emulator ('b' is printed)
		{"\x1b]0;99999999b\x07ok", "\x1b]0;99999999b\x07ok"}, // OSC strings pass
		{"日本\x1b[b", "日本\x1b[b"},
	}
	for _, c := range cases {
		f := newClamp()
		var got []byte
		for i := range len(c.in) { // a byte at a time
			got = append(got, f.filter([]byte{c.in[i]}, 80, 24)...)
		}
		if string(got) != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
		if whole := string(newClamp().filter([]byte(c.in), 80, 24)); whole != c.want {
			t.Errorf("%q in one piece: got %q, want %q", c.in, whole, c.want)
		}
	}
}

// TestScenario_ReadersDoNotWaitForOutput: while a storm of costly (clamped)
// sequences is fed, the activity, size and paste mode answer at once, and a
// snapshot waits for one piece at most.
func TestScenario_ReadersDoNotWaitForOutput(t *testing.T) {
	tm := New(Options{})
	defer tm.Close()
	tm.Feed([]byte("go"))
	reps := 3000
	if raceOn {
		reps = 600 // the race detector makes each one ~10x dearer; 600 still give ~50 reads
	}
	data := []byte(strings.Repeat("x\x1b[2J\x1b[500S\x1b[500L\x1b[99999999b", reps))
	var wg sync.WaitGroup
	done := make(chan struct{})
	var fed time.Duration
	wg.Go(func() { s := time.Now(); tm.Feed(data); fed = time.Since(s); close(done) })
	var worstCheap, worstSnap time.Duration
	n := 0
	for {
		select {
		case <-done:
		default:
			s := time.Now()
			tm.Activity()
			tm.Size()
			tm.BracketedPaste()
			worstCheap = max(worstCheap, time.Since(s))
			s = time.Now()
			tm.Snapshot(SnapshotOptions{})
			worstSnap = max(worstSnap, time.Since(s))
			n++
			time.Sleep(5 * time.Millisecond)
			continue
		}
		break
	}
	wg.Wait()
	t.Logf("%d reads during a %v feed: worst %v lock-free, %v snapshot", n, fed, worstCheap, worstSnap)
	if n < 3 {
		t.Fatalf("the feed ended after %d reads: too fast to tell", n)
	}
	slack := time.Duration(1)
	if raceOn {
		slack = 10
	}
	// A reader that waited for the whole feed waited as long as the feed
	// took; one that waited for a piece, a tiny share of it. A loaded
	// machine stretches both (the feed took 87 s at load 20 under -race,
	// a snapshot 1.4 s), so the bound is the larger of a fixed one and a
	// tenth of the feed.
	if worstCheap > max(10*time.Millisecond*slack, fed/10) || worstSnap > max(100*time.Millisecond*slack, fed/10) {
		t.Fatalf("readers waited: %v for the activity, %v for a snapshot", worstCheap, worstSnap)
	}
}
