package logs

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStripControl(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[1;31mred\x1b[0m", "red"},
		{"\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1bPq#0;2;0;0;0\x1b\\dcs", "dcs"},
		{"\x1b(Bcharset", "charset"},
		{"\x1b=keypad\x1b>", "keypad"},
		{"a\tb", "a\tb"},
		{"bell\x07 bs\x08 nul\x00 del\x7f", "bell bs nul del"},
		{"c1\u009b31mx", "c131mx"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"line\nbreak\r", "linebreak"},
		{"\x1b\x1b[2Jdouble", "double"},
		// An unterminated OSC does not swallow the next line.
		{"\x1b]0;title\nnext", "next"},
		// ESC inside a string ends it and starts a new sequence.
		{"\x1b]0;t\x1b[1mbold", "bold"},
		{"üñíçødé ✓", "üñíçødé ✓"},
	}
	for _, c := range cases {
		if got := StripControl(c.in); got != c.want {
			t.Errorf("StripControl(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// checkStripped holds the properties FuzzStripControl checks.
func checkStripped(t *testing.T, in string) {
	t.Helper()
	out := StripControl(in)
	for i := 0; i < len(out); i++ {
		if c := out[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			t.Fatalf("StripControl(%q) = %q: control byte %#x at %d", in, out, c, i)
		}
	}
	if !utf8.ValidString(out) {
		t.Fatalf("StripControl(%q) = %q: invalid UTF-8", in, out)
	}
	for _, r := range out {
		if r >= 0x80 && r <= 0x9f {
			t.Fatalf("StripControl(%q) = %q: C1 control %U", in, out, r)
		}
	}
	if again := StripControl(out); again != out {
		t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
	}
}

func FuzzStripControl(f *testing.F) {
	for _, s := range []string{
		"", "plain", "\x1b[31mred\x1b[0m", "\x1b]0;t\x07x", "\x1b]8;;u\x1b\\l", "\x1bP..\x1b\\",
		"\xc2\xc2\x9b\x9b", "\r\n\t\x00\x7f", "\x1b", "\x1b[", "\x1b]", "\x1b]x\x1b", "ü\u0085",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkStripped(t, s)
		// The streaming line assembler must agree with itself however the
		// input is chunked: byte by byte versus all at once.
		whole := assemble([]string{s}, 64)
		var bytes []string
		for i := 0; i < len(s); i++ {
			bytes = append(bytes, s[i:i+1])
		}
		if split := assemble(bytes, 64); strings.Join(split, "\n") != strings.Join(whole, "\n") {
			t.Fatalf("chunking changes lines for %q: %q vs %q", s, whole, split)
		}
		for _, line := range whole {
			checkStripped(t, line)
		}
	})
}

// assemble runs chunks through an assembler and returns the lines, with a
// final flush.
func assemble(chunks []string, max int) []string {
	a := assembler{max: max}
	var out []string
	emit := func(s string) { out = append(out, s) }
	for _, c := range chunks {
		a.write([]byte(c), emit)
	}
	a.flush(emit)
	return out
}

// An agent's answer of several lines keeps its lines and loses its
// control sequences, one line's unterminated string not swallowing the
// next.
func TestStripControlLines(t *testing.T) {
	in := "first\nsecond \x1b]52;c;ZXZpbA==\x07line\x1b[2J\n\x1b]0;open title\nlast\r"
	if got, want := StripControlLines(in), "first\nsecond line\n\nlast"; got != want {
		t.Errorf("StripControlLines = %q, want %q", got, want)
	}
	if got := StripControlLines("one \x1b[31mline"); got != "one line" {
		t.Errorf("one line: %q", got)
	}
}
