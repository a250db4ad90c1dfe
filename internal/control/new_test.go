package control

import (
	"testing"

	"github.com/BurntSushi/toml"
)

// TestScenario_APromptOfAnyTextIsWrittenAsTOMLThatReadsBackTheSame: new
// writes a prompt with quotes, newlines, control characters and DEL as a
// TOML string the config parser reads back unchanged.
func TestScenario_APromptOfAnyTextIsWrittenAsTOMLThatReadsBackTheSame(t *testing.T) {
	for _, s := range []string{"plain", "quote \" and \\ back", "line\nnext\ttab", "ctl \x01\x1f del \x7f", "<html> & ünïcode ✓", `''' """`} {
		var v struct{ X string }
		if _, err := toml.Decode("x = "+tomlString(s), &v); err != nil || v.X != s {
			t.Errorf("tomlString(%q) = %s reads back %q, %v", s, tomlString(s), v.X, err)
		}
	}
}
