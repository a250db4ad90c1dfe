package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
)

// within runs f and fails the test if it takes longer than d. Before the
// bounds, the parser took tens of seconds on these inputs, so a hang is
// reported rather than waited out.
func within[T any](t *testing.T, d time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	start := time.Now()
	go func() { done <- f() }()
	select {
	case v := <-done:
		t.Logf("took %v", time.Since(start).Round(time.Microsecond))
		return v
	case <-time.After(d):
		t.Fatalf("still parsing after %v", d)
	}
	panic("unreachable")
}

func mustRefuse(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !errors.Is(err, errcode.ErrConfigInvalid) || err.Error() != want {
		t.Fatalf("error %v\nwant %s (config_invalid)", err, want)
	}
}

// TestScenario_DeeplyNestedProjectFileIsRefusedQuickly: a 2 MB deeply nested
// project file took 38 s and 648 MB; project files come from
// cloned repositories. It is refused before parsing, naming the file.
func TestScenario_DeeplyNestedProjectFileIsRefusedQuickly(t *testing.T) {
	const half = 1 << 20
	src := "[harness.agent]\ncmd = 'x'\nargs = " + strings.Repeat("[", half) + strings.Repeat("]", half) + "\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "harness.toml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "harness.toml: larger than 1048576 bytes (1 MiB), the most a config file may hold; refused before parsing"
	err := within(t, 2*time.Second, func() error { _, err := LoadProject(path); return err })
	mustRefuse(t, err, want)
	err = within(t, 2*time.Second, func() error { _, err := Load(path); return err })
	mustRefuse(t, err, want)
}

// TestDeepNestingUnderTheSizeBoundIsRefusedQuickly: the parser's cost grows
// faster than the input with nesting (20,000 nested inline tables in 200 KB
// never finished), so depth is bounded on its own, with the line.
func TestDeepNestingUnderTheSizeBoundIsRefusedQuickly(t *testing.T) {
	const n = 20000
	for name, src := range map[string]string{
		"inline tables": "[harness.a]\ncmd = 'x'\nenv = " + strings.Repeat("{b=", n) + "1" + strings.Repeat("}", n) + "\n",
		"arrays":        "[harness.a]\ncmd = 'x'\nargs = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		"dotted key":    "[harness.a]\ncmd = 'x'\nenv" + strings.Repeat(".k", n) + " = 'v'\n",
		"header":        "\n\n[harness" + strings.Repeat(".a", n) + "]\n",
	} {
		t.Run(name, func(t *testing.T) {
			want := "harness.toml:3: nested deeper than 32 levels (table and key parts, arrays and inline tables); refused before parsing"
			err := within(t, 2*time.Second, func() error { _, err := parseProject("/repo/harness.toml", []byte(src)); return err })
			mustRefuse(t, err, want)
			err = within(t, 2*time.Second, func() error { _, err := Parse("/etc/harness.toml", []byte(src)); return err })
			mustRefuse(t, err, want)
		})
	}
}

func TestNestingWithin(t *testing.T) {
	deep := func(open, closeStr string, n int) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(closeStr, n)
	}
	for _, tt := range []struct {
		name string
		src  string
		ok   bool
		line int
	}{
		{"flat config", designExample, true, 0},
		{"arrays at the bound", "a = " + deep("[", "]", MaxNesting-1) + "\n", true, 0},
		{"arrays past the bound", "\na = " + deep("[", "]", MaxNesting) + "\n", false, 2},
		{"inline tables at the bound", "a = " + deep("{b=", "}", MaxNesting/2-1) + "\n", true, 0},
		{"inline tables past the bound", "a = " + deep("{b=", "}", MaxNesting/2) + "\n", false, 1},
		{"dotted key past the bound", "a" + strings.Repeat(".b", MaxNesting) + " = 1\n", false, 1},
		{"header adds to its keys", "[" + strings.Repeat("a.", MaxNesting-2) + "a]\nb.c = 1\n", false, 2},
		{"header at the bound", "[" + strings.Repeat("a.", MaxNesting-2) + "a]\nb = 1\n", true, 0},
		{"array of tables counts one more", "[[" + strings.Repeat("a.", MaxNesting-2) + "a]]\nb = 1\n", false, 2},
		{"depth ends with the statement", strings.Repeat("a = "+deep("[", "]", MaxNesting-1)+"\n", 100), true, 0},
		{"commas reset an inline key", "a = {" + strings.Repeat("b.c.d = 1, ", 100) + "}\n", true, 0},
		{"brackets in strings", "a = '" + strings.Repeat("[", 100) + "'\nb = \"" + strings.Repeat("{", 100) + "\\\"[[[\"\n", true, 0},
		{"brackets in comments", "a = 1 # " + strings.Repeat("[", 100) + "\n", true, 0},
		{"brackets in multi-line strings", "a = \"\"\"\n" + strings.Repeat("[", 100) + "\n\"\"\"\nb = '''\n" + strings.Repeat("{", 100) + "'''\n", true, 0},
		{"lines counted through strings", "a = \"\"\"\n\n\"\"\"\nb = 1 # x\n" + "c = " + deep("[", "]", MaxNesting) + "\n", false, 5},
		{"quoted dots are one part", "\"" + strings.Repeat("a.", 100) + "\" = 1\n", true, 0},
		{"floats are not keys", "a = [" + strings.Repeat("1.5, ", 100) + "]\n", true, 0},
		{"unclosed header keeps its line", "[harness.x\ncmd = " + deep("[", "]", MaxNesting) + "\n", false, 2},
		{"unterminated string keeps its line", "a = 'x\nb = " + deep("[", "]", MaxNesting) + "\n", false, 2},
		{"closers alone do no harm", strings.Repeat("]}", 100) + "\na = 1\n", true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line, ok := nestingWithin([]byte(tt.src), MaxNesting)
			if ok != tt.ok || (!ok && line != tt.line) {
				t.Fatalf("nestingWithin = line %d, %v; want line %d, %v", line, ok, tt.line, tt.ok)
			}
		})
	}
}

func TestFileAtTheSizeBoundIsParsed(t *testing.T) {
	pad := "# " + strings.Repeat("x", 78) + "\n"
	src := "[harness.a]\ncmd = 'x'\n"
	src += strings.Repeat(pad, (MaxFileBytes-len(src))/len(pad))
	src += strings.Repeat("#", MaxFileBytes-len(src))
	if len(src) != MaxFileBytes {
		t.Fatalf("built %d bytes", len(src))
	}
	path := filepath.Join(t.TempDir(), "harness.toml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil || cfg.Harnesses["a"] == nil {
		t.Fatalf("a file of exactly %d bytes: %v", MaxFileBytes, err)
	}
	if err := os.WriteFile(path, []byte(src+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil {
		t.Fatal("one byte over the bound was accepted")
	}
}
