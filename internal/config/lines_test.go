package config

import (
	"strings"
	"testing"
)

func TestScanPositions(t *testing.T) {
	src := strings.Join([]string{
		`# comment [not.a.table]`,               // 1
		`top = "x" # trailing`,                  // 2
		`[harness.a]`,                           // 3
		`cmd = """`,                             // 4
		`[harness.fake]`,                        // 5: inside a multi-line string
		`cmd = "no" """`,                        // 6
		`args = [`,                              // 7
		`  "x", # [harness.fake2]`,              // 8
		`  'y',`,                                // 9
		`]`,                                     // 10
		`env = { FOO = "1", "B.R" = 'z' }`,      // 11
		`[ harness . "quoted.name" ]`,           // 12
		`description = '''`,                     // 13
		`cmd = 1'''`,                            // 14
		`  cmd = "real"`,                        // 15
		`[[arr]]`,                               // 16
		`x.y.z = 1`,                             // 17
		`[mcp.gitea]`,                           // 18
		`cmd = "a\"]b" # with an escaped quote`, // 19
		`restart_delay = 1979-05-27 07:32:00Z`,  // 20
		`"dotted.key" = 2`,                      // 21
		`[harness.a.env2]`,                      // 22
	}, "\n")
	pos := scanPositions(src)
	tests := []struct {
		path []string
		want int
	}{
		{[]string{"top"}, 2},
		{[]string{"harness"}, 3},
		{[]string{"harness", "a"}, 3},
		{[]string{"harness", "a", "cmd"}, 4},
		{[]string{"harness", "a", "args"}, 7},
		{[]string{"harness", "a", "env"}, 11},
		{[]string{"harness", "a", "env", "FOO"}, 11},
		{[]string{"harness", "a", "env", "B.R"}, 11},
		{[]string{"harness", "quoted.name"}, 12},
		{[]string{"harness", "quoted.name", "description"}, 13},
		{[]string{"harness", "quoted.name", "cmd"}, 15},
		{[]string{"arr", "x", "y", "z"}, 17},
		{[]string{"arr", "x"}, 17},
		{[]string{"mcp", "gitea"}, 18},
		{[]string{"mcp", "gitea", "cmd"}, 19},
		{[]string{"mcp", "gitea", "restart_delay"}, 20},
		{[]string{"mcp", "gitea", "dotted.key"}, 21},
		{[]string{"harness", "a", "env2"}, 22},
		// Unrecorded keys fall back to their nearest recorded parent.
		{[]string{"mcp", "gitea", "missing"}, 18},
		{[]string{"nothing", "here"}, 1},
	}
	for _, tt := range tests {
		if got := pos.line(tt.path); got != tt.want {
			t.Errorf("line(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	for _, fake := range [][]string{{"harness", "fake"}, {"harness", "fake2"}, {"not"}} {
		if l, ok := pos[keyID(fake)]; ok {
			t.Errorf("%q recorded at line %d, but it is inside a string or comment", fake, l)
		}
	}
}

func TestScanPositionsBOMAndCRLF(t *testing.T) {
	pos := scanPositions("\xef\xbb\xbf[harness.a]\r\ncmd = 'x'\r\n\r\n[mcp.b]\r\n")
	for path, want := range map[string]int{
		keyID([]string{"harness", "a"}):        1,
		keyID([]string{"harness", "a", "cmd"}): 2,
		keyID([]string{"mcp", "b"}):            4,
	} {
		if got := pos[path]; got != want {
			t.Errorf("pos[%q] = %d, want %d", path, got, want)
		}
	}
}

func TestScanPositionsDeepKey(t *testing.T) {
	// Only the first maxKeyDepth parts are recorded; deeper keys resolve to
	// their recorded prefix.
	src := "\n" + strings.Repeat("a.", 50) + "b = 1\n"
	pos := scanPositions(src)
	if len(pos) != maxKeyDepth {
		t.Errorf("recorded %d paths, want %d", len(pos), maxKeyDepth)
	}
	deep := strings.Split(strings.Repeat("a.", 50)+"b", ".")
	if got := pos.line(deep); got != 2 {
		t.Errorf("line of deep key = %d, want 2", got)
	}
}
