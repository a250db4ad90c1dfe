package agent

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNoChoice is wrapped by Choose for a choice the dialog does not offer.
var ErrNoChoice = errors.New("no such choice")

// ErrNoCursor is wrapped by AnswerKeys when the dialog's cursor is not on
// any choice the screen shows: which arrow to press cannot be known.
var ErrNoCursor = errors.New("the dialog's cursor is not on a choice")

// Choose finds the choice a caller means among choices (as the screen
// shows them, in order): the text itself (case and surrounding blanks
// ignored), else its number as the screen counts (1 for the first), else
// the one choice the text begins. It returns the choice's index.
func Choose(choices []string, want string) (int, error) {
	w := strings.TrimSpace(want)
	for i, c := range choices {
		if strings.EqualFold(c, w) {
			return i, nil
		}
	}
	if n, err := strconv.Atoi(w); err == nil && n >= 1 && n <= len(choices) {
		return n - 1, nil
	}
	found := -1
	if w != "" {
		for i, c := range choices {
			if len(c) >= len(w) && strings.EqualFold(c[:len(w)], w) {
				if found >= 0 {
					found = -2 // more than one begins so: ambiguous
					break
				}
				found = i
			}
		}
	}
	if found >= 0 {
		return found, nil
	}
	return -1, fmt.Errorf("%w %q: the choices are %s", ErrNoChoice, want, ListChoices(choices))
}

// ListChoices renders choices as the screen numbers them, for an error
// that names what may be answered: `1 "Yes", 2 "No"`.
func ListChoices(choices []string) string {
	if len(choices) == 0 {
		return "none"
	}
	parts := make([]string, len(choices))
	for i, c := range choices {
		parts[i] = fmt.Sprintf("%d %q", i+1, c)
	}
	return strings.Join(parts, ", ")
}

// AnswerKeys are the keys (send's names) that pick choice target of a
// list dialog whose cursor is on choice selected: the arrows from one to
// the other, then Enter, as a person would press them. The three agents'
// dialogs all move their cursor this way; a dialog answered otherwise
// says so in its rule (Rule.Keys).
func (r *Rule) AnswerKeys(target, selected, n int) ([]string, error) {
	if target < 0 || target >= n {
		return nil, fmt.Errorf("%w: choice %d of %d", ErrNoChoice, target+1, n)
	}
	if r.Keys != nil {
		return r.Keys(target, selected, n)
	}
	if selected < 0 || selected >= n {
		return nil, ErrNoCursor
	}
	var keys []string
	for i := selected; i < target; i++ {
		keys = append(keys, "Down")
	}
	for i := selected; i > target; i-- {
		keys = append(keys, "Up")
	}
	return append(keys, "Enter"), nil
}
