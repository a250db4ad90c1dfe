package term

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// claudeInputBox is what Claude Code 2.1.328 wrote while "Make the file"
// was typed into it: the cursor parked at the input box, its title (✳ is
// E2 9C B3) set there, then the words placed with cursor moves over blanks
// it had cleared before.
const claudeInputBox = "\x1b[2J\x1b[10;1H\xe2\x9d\xaf \x1b]0;\xe2\x9c\xb3 Claude Code\x07" +
	"\r\x1b[2CMake\x1b[8Gthe\x1b[12Gfile\x1b[7m \x1b[27m"

// TestScenario_ATitleWithASymbolStaysOffTheScreen: the title Claude Code
// sets while the cursor is in its input box is no text on the screen, and
// the typed words read as typed, however the output is cut into reads and
// whether or not the screen was parked between them. Before the UTF-8 stage
// the parser ended the title at the symbol's 9C byte and printed
// " Claude Code" at the cursor: the box read "MakeutheCfile".
func TestScenario_ATitleWithASymbolStaysOffTheScreen(t *testing.T) {
	data := []byte(claudeInputBox)
	check := func(how string, tm *Term) {
		t.Helper()
		s := tm.Snapshot(SnapshotOptions{})
		if s.Lines[9] != "❯ Make the file" || s.Title != "✳ Claude Code" {
			t.Fatalf("%s: input row %q, title %q", how, s.Lines[9], s.Title)
		}
		for y, l := range s.Lines {
			if y != 9 && l != "" {
				t.Fatalf("%s: row %d shows %q", how, y, l)
			}
		}
	}
	for cut := range len(data) + 1 {
		for _, park := range []bool{false, true} {
			tm := New(Options{Cols: 40, Rows: 12})
			tm.Feed(data[:cut])
			if park {
				tm.mu.Lock()
				tm.parkLocked()
				tm.mu.Unlock()
			}
			tm.Feed(data[cut:])
			check(fmt.Sprintf("cut at %d, parked %v", cut, park), tm)
			tm.Close()
		}
	}
	tm := New(Options{Cols: 40, Rows: 12})
	defer tm.Close()
	for i := range data {
		tm.Feed(data[i : i+1])
	}
	check("a byte at a time", tm)
}

// TestScenario_ClaudeCodesOwnOutputRendersAsItsTerminalShowsIt replays what
// Claude Code 2.1.328 printed in interop's TestAgent_StatesOfRealAgents up
// to "Make the file" typed (captured from the unit's raw log), cut at
// random into reads with parks between some: the header and the input box
// read as Claude Code drew them, and every cut gives the same screen.
func TestScenario_ClaudeCodesOwnOutputRendersAsItsTerminalShowsIt(t *testing.T) {
	data, err := os.ReadFile("testdata/claude-code-2.1.328.out")
	if err != nil {
		t.Fatal(err)
	}
	o := SnapshotOptions{Scrollback: 100, ANSI: true}
	whole := New(Options{Cols: 120, Rows: 40})
	defer whole.Close()
	whole.Feed(data)
	want := whole.Snapshot(o)
	text := strings.Join(want.Lines, "\n")
	if !strings.HasPrefix(text, " ▐▛███▛█   Claude Code v2.1.328\n") {
		t.Errorf("the header row is not as Claude Code drew it:\n%s", text)
	}
	for _, s := range []string{"\n❯\u00a0Make the file\n", "\n❯ Answer slowly\n", "API Usage Billing"} {
		if !strings.Contains(text, s) {
			t.Errorf("the screen does not show %q:\n%s", s, text)
		}
	}
	if want.Title != "✳ Claude Code" {
		t.Errorf("title %q", want.Title)
	}
	r := rand.New(rand.NewPCG(36, 1))
	for round := range 8 {
		tm := New(Options{Cols: 120, Rows: 40})
		for p := data; len(p) > 0; {
			n := min(len(p), 1+r.IntN(256))
			tm.Feed(p[:n])
			p = p[n:]
			if r.IntN(4) == 0 {
				tm.mu.Lock()
				tm.parkLocked()
				tm.mu.Unlock()
			}
		}
		if got := tm.Snapshot(o); fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Fatalf("round %d: cut into reads the screen differs:\n%s\nwhole:\n%s", round,
				strings.Join(got.Lines, "\n"), text)
		}
		tm.Close()
	}
}

// TestUTF8Stage: what the emulator is given for output that is not plain
// ASCII, byte for byte.
func TestUTF8Stage(t *testing.T) {
	const fffd = "\uFFFD"
	cases := []struct{ in, want string }{
		{"日本 ✳ é", "日本 ✳ é"},
		{"\x1b]0;✳ Claude Code\x07ok", "\x1b]0;" + fffd + " Claude Code\x07ok"}, // 9C would end the string
		{"\x1b]0;日é\x07", "\x1b]0;日é\x07"},                                      // no 9C: as written
		{"\x1bP1$r✳日\x1b\\", "\x1bP1$r" + fffd + "日\x1b\\"},                     // DCS string: the same
		{"\x1b_G✳a=é\x1b\\x", "\x1b_Ga=\x1b\\x"},                                // APC carries ASCII only
		{"\x1b^é\x1b\\\x1bXé\x1b\\", "\x1b^\x1b\\\x1bX\x1b\\"},                  // PM, SOS
		{"\xe2\x1b[C", fffd + "\x1b[C"},                                         // cut short: the CSI survives
		{"\xf0\x9f\x1b[2Jx", fffd + "\x1b[2Jx"},
		{"\x9b99999999S", fffd + "99999999S"},             // no 8-bit CSI in UTF-8
		{"\x9d0;t\x07x", fffd + "0;t\x07x"},               // nor OSC
		{"\x80\xbf\xc0\xaf\xff", strings.Repeat(fffd, 5)}, // stray, overlong, never valid
		{"\xed\xa0\x80", fffd + fffd + fffd},              // a surrogate
		{"\xe0\x80\x80", fffd + fffd + fffd},              // overlong
		{"\xf4\x90\x80\x80", strings.Repeat(fffd, 4)},     // beyond U+10FFFF
		{"\x1b[12✳G", "\x1b[✳G"},                          // a character abandons a CSI, as before
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

// TestScenario_TitlesAreTakenAsWritten: the title comes from the OSC
// string as the program wrote it, under the emulator's rules (0 and 2 set
// it, a string with another ';' does not), across reads.
func TestScenario_TitlesAreTakenAsWritten(t *testing.T) {
	tm := New(Options{Cols: 20, Rows: 4})
	defer tm.Close()
	for _, c := range []struct{ in, want string }{
		{"\x1b]2;✳ one\x1b\\", "✳ one"},
		{"\x1b]0;✳ t", "✳ one"}, // not ended yet
		{"wo\x07", "✳ two"},
		{"\x1b]1;icon ✳\x07", "✳ two"},
		{"\x1b]0;a;b\x07", "✳ two"},
		{"\x1b]0;\x07", ""},
	} {
		tm.Feed([]byte(c.in))
		if got := tm.Snapshot(SnapshotOptions{}).Title; got != c.want {
			t.Fatalf("after %q: title %q, want %q", c.in, got, c.want)
		}
	}
	if l := tm.Snapshot(SnapshotOptions{}).Lines; strings.Join(l, "") != "" {
		t.Fatalf("the screen shows %q", l)
	}
}
