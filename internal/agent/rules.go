package agent

import (
	"regexp"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Screen is what the rules read: the rows of the visible screen as text
// (trailing blanks trimmed) and the terminal's busy/idle state.
type Screen struct {
	Lines []string
	// Busy: output arrived within the harness's idle_after.
	Busy bool
	// Shown: the run has drawn something (a known agent is starting
	// until then).
	Shown bool
}

// Rule recognises one state on an agent's screen. Rules are data: a
// state, the patterns that must (When) and must not (Unless) match some
// row, and how to read the dialog's prompt, choices and reset time.
type Rule struct {
	// Name says what the rule recognises, for tests and logs.
	Name       string
	State      api.AgentState
	WaitingFor api.WaitingFor
	// When: every pattern matches at least one row. Unless: none does.
	When, Unless []*regexp.Regexp
	// Prompt, when set, matches the row the prompt is read from: its
	// first group when it has one, else the whole row trimmed. With
	// PromptNext it is the next non-blank row instead (a command shown
	// under its title).
	Prompt     *regexp.Regexp
	PromptNext bool
	// Choice matches the rows of the choices, in screen order; group 1 is
	// the choice's text.
	Choice *regexp.Regexp
	// Keys returns the keys (harness send names: "Enter", "Down", "Up",
	// "Esc", or text) that pick choice i of n, 0-based, from where the
	// dialog opens. Nil: the choice's number, then nothing else.
	Keys func(i, n int) []string
	// Until reads when a limited agent may go on, from the screen text.
	Until func(text string, now time.Time) (time.Time, bool)
}

// re compiles a rule pattern; a bad one is a programming error.
func re(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// matches reports whether r's When all match and none of its Unless do.
func (r *Rule) matches(lines []string) bool {
	for _, p := range r.When {
		if !anyRow(p, lines) {
			return false
		}
	}
	for _, p := range r.Unless {
		if anyRow(p, lines) {
			return false
		}
	}
	return true
}

func anyRow(p *regexp.Regexp, lines []string) bool {
	for _, l := range lines {
		if p.MatchString(l) {
			return true
		}
	}
	return false
}

// Classify returns the agent's state on s: the first rule that matches,
// else the floor (starting before a known agent has shown anything,
// working while busy, ready while idle). It is a pure function of its
// arguments.
func (a *Adapter) Classify(s Screen, now time.Time) Status {
	st := Status{Agent: a.Name}
	if !s.Shown && len(a.Rules) > 0 {
		st.AgentState = api.AgentStarting
		return st
	}
	for i := range a.Rules {
		r := &a.Rules[i]
		if !r.matches(s.Lines) {
			continue
		}
		st.AgentState, st.WaitingFor = r.State, r.WaitingFor
		st.Prompt = r.prompt(s.Lines)
		st.Choices = r.choices(s.Lines)
		if r.Until != nil {
			if t, ok := r.Until(strings.Join(s.Lines, "\n"), now); ok && !t.IsZero() {
				st.Until = &t
			}
		}
		return st
	}
	st.AgentState = api.AgentReady
	if s.Busy {
		st.AgentState = api.AgentWorking
	}
	return st
}

// Rule returns the rule that matches s first, if any: what Classify used.
func (a *Adapter) Rule(s Screen) (*Rule, bool) {
	if !s.Shown {
		return nil, false
	}
	for i := range a.Rules {
		if a.Rules[i].matches(s.Lines) {
			return &a.Rules[i], true
		}
	}
	return nil, false
}

func (r *Rule) prompt(lines []string) string {
	if r.Prompt == nil {
		return ""
	}
	for i, l := range lines {
		m := r.Prompt.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if r.PromptNext {
			for _, n := range lines[i+1:] {
				if t := clean(n); t != "" {
					return t
				}
			}
			return ""
		}
		if len(m) > 1 {
			return clean(m[1])
		}
		return clean(l)
	}
	return ""
}

func (r *Rule) choices(lines []string) []string {
	if r.Choice == nil {
		return nil
	}
	var out []string
	for _, l := range lines {
		if m := r.Choice.FindStringSubmatch(l); m != nil && len(m) > 1 {
			if t := clean(m[1]); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// clean trims a row's text of blanks and of the box-drawing borders TUIs
// draw around dialogs.
func clean(s string) string {
	return strings.TrimSpace(strings.Trim(strings.TrimSpace(s), "│┃║|╭╮╰╯─"))
}
