package agent

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestScenario_AChoiceIsPickedByTextOrNumber: a choice is found by its
// text (any case), its number as the screen counts, or the one choice its
// beginning names; anything else names every choice.
func TestScenario_AChoiceIsPickedByTextOrNumber(t *testing.T) {
	choices := []string{"Yes", "Yes, and always allow access to /w from this project", "Yes, and switch to auto mode", "No"}
	for _, c := range []struct {
		want string
		i    int
	}{
		{"Yes", 0}, {" yes ", 0}, {"no", 3}, {"4", 3}, {"2", 1},
		{"Yes, and switch", 2}, {"yes, and always", 1},
	} {
		if i, err := Choose(choices, c.want); err != nil || i != c.i {
			t.Errorf("Choose(%q) = %d, %v; want %d", c.want, i, err, c.i)
		}
	}
	for _, bad := range []string{"Yes, and", "5", "0", "-1", "Maybe", ""} {
		_, err := Choose(choices, bad)
		if !errors.Is(err, ErrNoChoice) || !strings.Contains(err.Error(), `1 "Yes", 2 "Yes, and always allow access to /w from this project", 3 "Yes, and switch to auto mode", 4 "No"`) {
			t.Errorf("Choose(%q): %v", bad, err)
		}
	}
}

// TestScenario_AnswerKeysMoveTheCursorThenEnter: from the captured
// dialogs of each agent, the keys to each choice are the arrows from the
// cursor's row and Enter.
func TestScenario_AnswerKeysMoveTheCursorThenEnter(t *testing.T) {
	for _, c := range []struct {
		agent, file string
		target      int
		keys        []string
	}{
		{ClaudeCode, "trust", 1, []string{"Down", "Enter"}},
		{ClaudeCode, "apikey", 0, []string{"Up", "Enter"}},
		{ClaudeCode, "permission", 0, []string{"Enter"}},
		{ClaudeCode, "permission", 3, []string{"Down", "Down", "Down", "Enter"}},
		{Gemini, "trust", 2, []string{"Down", "Down", "Enter"}},
		{Codex, "permission", 2, []string{"Down", "Down", "Enter"}},
	} {
		s := fixture(t, c.agent, c.file)
		r, ok := MustLookup(c.agent).Rule(s)
		if !ok {
			t.Fatalf("%s/%s: no rule", c.agent, c.file)
		}
		n := len(r.choices(s.Lines, s.Cols))
		keys, err := r.AnswerKeys(c.target, r.Selected(s.Lines), n)
		if err != nil || !slices.Equal(keys, c.keys) {
			t.Errorf("%s/%s choice %d: keys %v, %v; want %v", c.agent, c.file, c.target, keys, err, c.keys)
		}
	}
	var r Rule
	if _, err := r.AnswerKeys(0, -1, 2); !errors.Is(err, ErrNoCursor) {
		t.Errorf("no cursor: %v", err)
	}
	if _, err := r.AnswerKeys(2, 0, 2); !errors.Is(err, ErrNoChoice) {
		t.Errorf("past the choices: %v", err)
	}
	r.Keys = func(target, _, _ int) ([]string, error) { return []string{string(rune('1' + target))}, nil }
	if keys, err := r.AnswerKeys(1, -1, 2); err != nil || !slices.Equal(keys, []string{"2"}) {
		t.Errorf("a rule's own keys: %v, %v", keys, err)
	}
}
