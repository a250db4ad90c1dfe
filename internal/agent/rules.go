package agent

import (
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/harness-dev/harness/internal/api"
)

// Screen is what the rules read: the rows of the visible screen as text
// (trailing blanks trimmed) and the terminal's busy/idle state.
type Screen struct {
	Lines []string
	// Cols is the terminal's width (0: unknown). A TUI breaks a word
	// longer than its row at the row's end, and a row that reaches the
	// last columns goes on mid-word in the next (unwrap).
	Cols int
	// Busy: output arrived within the harness's idle_after.
	Busy bool
	// Shown: the run has drawn something (a known agent is starting
	// until then).
	Shown bool
	// LineMode: the run's program read its keys raw and the terminal is
	// back in line (canonical) mode. An agent's TUI lets go of its
	// terminal so when it exits, restarts (Gemini CLI after a trust
	// answer: its next process draws its prompt before it takes keys) or
	// lends the terminal to an editor; what is typed meanwhile is echoed
	// by the terminal and lost.
	LineMode bool
	// Paste: bracketed paste (DECSET 2004) is on, as the program on the
	// terminal set it (Adapter.KeysWithPaste).
	Paste bool
	// Restarting: a rule that Restarts matched, and the old process has
	// not let go of the terminal since (line mode, or paste off for
	// KeysWithPaste): what it still draws takes no keys. Also while a
	// dialog whose answer may restart the agent (Rule.AnswerRestarts) has
	// just left the screen and its restart message has not shown yet.
	Restarting bool
	// Settling: the run first drew less than Adapter.KeysAfter ago, and
	// the agent reads no keys yet.
	Settling bool
}

// Rule recognises one state on an agent's screen. Rules are data: a
// state, the patterns that must (When) and must not (Unless) match some
// row, and how to read the dialog's prompt, choices and reset time.
type Rule struct {
	// Name says what the rule recognises, for tests and logs.
	Name       string
	State      api.AgentState
	WaitingFor api.WaitingFor
	// After limits When, Unless and the choices to the rows from the last
	// one matching After down (the latest turn, or the dialog below its
	// question); nil reads the whole screen.
	After *regexp.Regexp
	// Region, when set, picks the rows the rule reads instead of After,
	// for a screen where no row marks the latest turn (pi's last block of
	// output above its input box); nil from it: the rule does not match.
	Region func(lines []string) []string
	// When: every pattern matches at least one row. Unless: none does.
	When, Unless []*regexp.Regexp
	// Prompt, when set, matches the row (anywhere on the screen) the
	// prompt is read from: its first group when it has one, else the whole
	// row. With PromptNext it is the next non-blank row instead (a command
	// shown under its title).
	Prompt     *regexp.Regexp
	PromptNext bool
	// Choice matches the rows of the choices, in screen order; group 1 is
	// the choice's text. Marker matches the row of the choice the
	// dialog's cursor is on (default: a row starting with ❯, ›, > or ●).
	Choice *regexp.Regexp
	Marker *regexp.Regexp
	// Inline: the choices stand side by side on one row (opencode's
	// "Allow once   Allow always   Reject"), each a match of Choice.
	Inline bool
	// Proceed matches the text of the choice that lets the agent go on:
	// the answer suggested to a person (Status.Suggested). Nil: the
	// adapter does not know which, and none is suggested.
	Proceed *regexp.Regexp
	// Message: the row of the first When pattern is the state's message
	// (AgentMessage), for limited and error.
	Message bool
	// Typed: the screen shows text in the agent's input box, not yet
	// sent. The state is the rule's (ready), but a send whose Enter leaves
	// this screen was not taken (Adapter.EnterAgain).
	Typed bool
	// Until reads when a limited agent may go on, from the screen text.
	Until func(text string, now time.Time) (time.Time, bool)
	// Keys, when set, are the keys (send's names) that pick choice target
	// of n with the cursor on selected (-1: not shown), for a dialog not
	// answered by arrows and Enter (AnswerKeys).
	Keys func(target, selected, n int) ([]string, error)
	// Restarts: the agent replaces its process after showing this state
	// (Gemini CLI after a trust answer), and the old one may draw its
	// prompt again first, even in the same frame: the tracker keeps
	// Screen.Restarting from the moment a new row matching After shows up
	// (RestartsShown) until the old process lets go, or takes the message
	// back and goes on (supervise.RestartGone).
	Restarts bool
	// AnswerRestarts: answering this dialog may restart the agent, and
	// it may draw its prompt before the restart message (Gemini CLI after
	// a trust answer, when its settings reload closes the dialog before
	// the answer's handler reopens it to say it restarts): the tracker
	// holds it starting from the moment the dialog leaves the screen
	// until that message shows, for a while.
	AnswerRestarts bool
}

// RestartsShown counts the rows of lines that match the After pattern of
// a rule that Restarts: the agent's messages that it replaces its process,
// which stay in view after the new one draws, so a restart is a count
// that grew.
func (a *Adapter) RestartsShown(lines []string) int {
	n := 0
	for i := range a.Rules {
		r := &a.Rules[i]
		if !r.Restarts || r.After == nil {
			continue
		}
		for _, l := range lines {
			if r.After.MatchString(l) {
				n++
			}
		}
	}
	return n
}

// defaultMarker is the cursor of a list dialog in the three agents.
var defaultMarker = regexp.MustCompile(`^\s*[│┃]?\s*[❯›>●]\s`)

// re compiles a rule pattern; a bad one is a programming error.
func re(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// res compiles several patterns.
func res(ss ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(ss))
	for i, s := range ss {
		out[i] = re(s)
	}
	return out
}

// region is the rows r reads.
func (r *Rule) region(lines []string) []string {
	if r.Region != nil {
		return r.Region(lines)
	}
	if r.After == nil {
		return lines
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if r.After.MatchString(lines[i]) {
			return lines[i:]
		}
	}
	return nil
}

// matches reports whether r's When all match and none of its Unless do.
func (r *Rule) matches(lines []string) bool {
	reg := r.region(lines)
	if reg == nil {
		return false
	}
	for _, p := range r.When {
		if !anyRow(p, reg) {
			return false
		}
	}
	for _, p := range r.Unless {
		if anyRow(p, reg) {
			return false
		}
	}
	return true
}

func anyRow(p *regexp.Regexp, lines []string) bool {
	_, ok := firstRow(p, lines)
	return ok
}

func firstRow(p *regexp.Regexp, lines []string) (string, bool) {
	for _, l := range lines {
		if p.MatchString(l) {
			return l, true
		}
	}
	return "", false
}

// Classify returns the agent's state on s: the first rule that matches,
// else the floor (starting before a known agent has shown anything,
// working while busy, ready while idle); a prompt or dialog (ready,
// waiting) is starting while s.LineMode, s.Restarting or s.Settling, or
// while bracketed paste is off for an agent that turns it on with its key
// reader (KeysWithPaste). It is a pure function of its arguments.
func (a *Adapter) Classify(s Screen, now time.Time) Status {
	st := Status{Agent: a.Name}
	if !s.Shown && len(a.Rules) > 0 {
		st.AgentState = api.AgentStarting
		return st
	}
	if len(a.Rules) > 0 && blank(s.Lines) {
		// Nothing on screen: a known agent clearing it to start (again,
		// as Gemini CLI does after a trust answer) is not ready yet.
		st.AgentState = api.AgentStarting
		return st
	}
	// letGo: the program has let go of its terminal, or is about to.
	letGo := s.LineMode || s.Restarting
	r, ok := a.Rule(s)
	if !ok {
		st.AgentState = api.AgentReady
		if s.Busy {
			st.AgentState = api.AgentWorking
		}
		if letGo && st.AgentState == api.AgentReady {
			st.AgentState = api.AgentStarting
		}
		return st
	}
	if (letGo || s.Settling || a.KeysWithPaste && !s.Paste) && (r.State == api.AgentReady || r.State == api.AgentWaiting) {
		// A prompt or dialog on screen takes no keys yet (Screen.LineMode,
		// Screen.Restarting, Screen.Settling, Adapter.KeysWithPaste).
		st.AgentState = api.AgentStarting
		return st
	}
	st.AgentState, st.WaitingFor = r.State, r.WaitingFor
	st.Prompt = r.prompt(s.Lines, s.Cols)
	st.Choices = r.choices(s.Lines, s.Cols)
	if r.Proceed != nil {
		if i := slices.IndexFunc(st.Choices, r.Proceed.MatchString); i >= 0 {
			st.Suggested = st.Choices[i]
		}
	}
	if r.Message && len(r.When) > 0 {
		if row, ok := firstRow(r.When[0], r.region(s.Lines)); ok {
			st.AgentMessage = clean(row)
		}
	}
	if r.Until != nil {
		if t, ok := r.Until(strings.Join(r.region(s.Lines), "\n"), now); ok && !t.IsZero() {
			st.Until = &t
		}
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

func (r *Rule) prompt(lines []string, cols int) string {
	if r.Prompt == nil {
		return ""
	}
	for i, l := range lines {
		m := r.Prompt.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if r.PromptNext {
			// The next non-blank row, and the rows it goes on in where
			// the screen's width broke it mid-word (a long command).
			for j := i + 1; j < len(lines); j++ {
				t := clean(lines[j])
				if t == "" {
					continue
				}
				for ; j+1 < len(lines) && full(lines[j], cols); j++ {
					more := clean(lines[j+1])
					if more == "" || r.Prompt.MatchString(lines[j+1]) {
						break
					}
					t += more
				}
				return t
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

// choiceRows returns the choices' texts and the index of each one's row;
// cols unwraps a text broken mid-word (0: its rows are joined by a
// space).
func (r *Rule) choiceRows(lines []string, cols int) (texts []string, rows []string) {
	if r.Choice == nil {
		return nil, nil
	}
	reg := r.region(lines)
	for i := 0; i < len(reg); i++ {
		l := reg[i]
		if r.Inline {
			for _, m := range r.Choice.FindAllStringSubmatchIndex(l, -1) {
				if len(m) >= 4 && m[2] >= 0 {
					if t := clean(l[m[2]:m[3]]); t != "" {
						texts, rows = append(texts, t), append(rows, l)
					}
				}
			}
			continue
		}
		m := r.Choice.FindStringSubmatchIndex(l)
		if m == nil || len(m) < 4 || m[2] < 0 {
			continue
		}
		t := clean(l[m[2]:m[3]])
		if t == "" {
			continue
		}
		// A choice longer than the terminal is wide goes on in the rows
		// below, indented to where its text begins (Claude Code's
		// "Yes, and always allow access to" + a long path): they are
		// part of it, up to a blank row or the next choice.
		col := utf8.RuneCountInString(l[:m[2]])
		for i+1 < len(reg) && !r.Choice.MatchString(reg[i+1]) && indent(reg[i+1]) >= col {
			more := clean(reg[i+1])
			if more == "" {
				break
			}
			t = unwrap(t, reg[i], more, cols)
			i++
		}
		texts = append(texts, t)
		rows = append(rows, l)
	}
	return texts, rows
}

// indent is where a row's text begins, in runes: past blanks and the
// borders of a dialog's box.
func indent(l string) int {
	n := 0
	for _, c := range l {
		if !unicode.IsSpace(c) && !strings.ContainsRune("│┃║|", c) {
			return n
		}
		n++
	}
	return n
}

func (r *Rule) choices(lines []string, cols int) []string {
	texts, _ := r.choiceRows(lines, cols)
	return texts
}

// unwrap appends more, the text of the row after row, to text (which row
// ends): directly when row is full, else after a space.
func unwrap(text, row, more string, cols int) string {
	if full(row, cols) {
		return text + more
	}
	return text + " " + more
}

// full reports whether row's text reaches the screen's last two columns,
// where a TUI breaks a word too long for the rest of its row: Ink keeps a
// blank at the end of a row it breaks between words, and draws its
// dialogs a column short of the edge. A box's right border is no text (a
// Gemini CLI dialog's rows all reach the edge). False when cols is
// unknown (0).
func full(row string, cols int) bool {
	return cols > 0 && utf8.RuneCountInString(strings.TrimRight(row, " │┃║|")) >= cols-1
}

// Selected returns the index of the choice the dialog's cursor is on, or
// -1 when no choice row carries the marker.
func (r *Rule) Selected(lines []string) int {
	_, rows := r.choiceRows(lines, 0)
	marker := r.Marker
	if marker == nil {
		marker = defaultMarker
	}
	for i, l := range rows {
		if marker.MatchString(l) {
			return i
		}
	}
	return -1
}

// clean trims a row's text of blanks and of the box-drawing borders TUIs
// draw around dialogs.
func clean(s string) string {
	return strings.TrimSpace(strings.Trim(strings.TrimSpace(s), "│┃║|╭╮╰╯─"))
}

// blank reports whether no row shows anything.
func blank(lines []string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return false
		}
	}
	return true
}
