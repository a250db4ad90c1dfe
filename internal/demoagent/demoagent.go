// Package demoagent is the agent of `harness demo` (the hidden `harness
// demo-agent` command): a small scripted TUI that behaves on its screen as
// the agent CLIs harness supervises do, with no model and no network. It
// draws a prompt box while ready; given a task, it works on it for a few
// seconds with a spinner; then it asks, in a dialog with numbered choices,
// for permission to edit a file of its working directory, edits it on Yes
// and says so on No, and is ready again. The demo adapter
// (internal/agent/demo.go) reads these screens.
package demoagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/term"
)

// Options say what the agent edits and how long it works.
type Options struct {
	// Dir is the directory the edited file is in ("" is the current one).
	Dir string
	// File is the file it asks to edit, relative to Dir (default README.md).
	File string
	// Step is how long each of its three steps of work takes (default 1s).
	Step time.Duration
	// Sessions is the directory it keeps its conversation's record in, a
	// file per run (session.go); "" keeps none.
	Sessions string
}

// Line is the line a Yes appends to the file.
const Line = "This line was written by the harness demo agent, after a person allowed the edit."

func (o *Options) defaults() {
	if o.File == "" {
		o.File = "README.md"
	}
	if o.Step <= 0 {
		o.Step = time.Second
	}
}

// Main runs the agent on the process's terminal: raw mode while it runs
// (keys one by one, unechoed, as agent CLIs read them), put back at the
// end. Stdin that is no terminal is read as it comes.
func Main(ctx context.Context, stdin, stdout *os.File, o Options) error {
	if term.IsTerminal(stdin.Fd()) {
		st, err := term.MakeRaw(stdin.Fd())
		if err != nil {
			return fmt.Errorf("demo agent: raw mode: %w", err)
		}
		defer term.Restore(stdin.Fd(), st)
	}
	size := func() (int, int) {
		if w, h, err := term.GetSize(stdout.Fd()); err == nil && w > 0 && h > 0 {
			return w, h
		}
		return 80, 24
	}
	return Run(ctx, stdin, stdout, size, o)
}

type mode int

const (
	ready mode = iota
	working
	asking
)

// agent is the TUI's state; only Run's goroutine touches it.
type agent struct {
	o       Options
	dir     string // shown in the header
	log     []string
	input   []rune
	mode    mode
	step    int
	spin    int
	cursor  int
	started time.Time
	task    string
	rec     *session
	recErr  bool // the record failed once, and the screen said so
}

// steps are what it says while it works, one per Options.Step.
func (a *agent) steps() []string {
	return []string{
		"● Reading " + a.o.File,
		"● Planning a one-line change to " + a.o.File,
		"● Drafting the line",
	}
}

// Run runs the agent, reading keys from in and drawing on out, until
// Ctrl-C or Ctrl-D, the end of in, or ctx's end.
func Run(ctx context.Context, in io.Reader, out io.Writer, size func() (cols, rows int), o Options) error {
	o.defaults()
	a := &agent{o: o, dir: o.Dir}
	if a.dir == "" {
		a.dir, _ = os.Getwd()
	}
	rec, err := openSession(o.Sessions, a.dir)
	if err != nil {
		a.log = append(a.log, "● Keeping no record of this session: "+err.Error())
	}
	a.rec = rec
	defer rec.close()
	keys := make(chan []key)
	readErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				select {
				case keys <- parseKeys(buf[:n]):
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	spin := time.NewTicker(100 * time.Millisecond)
	defer spin.Stop()
	var step <-chan time.Time
	var stepTimer *time.Timer
	draw := func() error {
		cols, rows := size()
		_, err := io.WriteString(out, a.frame(cols, rows))
		return err
	}
	if err := draw(); err != nil {
		return fmt.Errorf("demo agent: draw: %w", err)
	}
	defer io.WriteString(out, "\x1b[?25h\r\n")
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("demo agent: read keys: %w", err)
		case ks := <-keys:
			for _, k := range ks {
				switch a.key(k) {
				case actQuit:
					return nil
				case actWork:
					stepTimer = time.NewTimer(a.o.Step)
					step = stepTimer.C
				case actStop:
					if stepTimer != nil {
						stepTimer.Stop()
					}
					step = nil
				}
			}
		case <-step:
			a.log = append(a.log, a.steps()[a.step])
			a.step++
			if a.step < len(a.steps()) {
				stepTimer.Reset(a.o.Step)
			} else {
				step = nil
				a.mode, a.cursor = asking, 0
			}
		case <-spin.C:
			if a.mode != working {
				continue
			}
			a.spin++
		}
		if err := draw(); err != nil {
			return fmt.Errorf("demo agent: draw: %w", err)
		}
	}
}

type action int

const (
	actNone action = iota
	actQuit
	actWork // a task was submitted: start the steps
	actStop // the work was interrupted
)

// key applies one key to the state.
func (a *agent) key(k key) action {
	if k.name == keyCtrlC || k.name == keyCtrlD {
		if a.mode == ready && len(a.input) > 0 && k.name == keyCtrlC {
			a.input = a.input[:0]
			return actNone
		}
		return actQuit
	}
	switch a.mode {
	case ready:
		switch k.name {
		case keyEnter:
			task := strings.TrimSpace(string(a.input))
			a.input = a.input[:0]
			if task == "" {
				return actNone
			}
			a.log = append(a.log, "> "+task)
			a.mode, a.step, a.started, a.task = working, 0, time.Now(), task
			a.record(record{Type: "user", Text: task})
			return actWork
		case keyBackspace:
			if len(a.input) > 0 {
				a.input = a.input[:len(a.input)-1]
			}
		case keyRune:
			a.input = append(a.input, k.r)
		}
	case working:
		if k.name == keyEsc {
			a.log = append(a.log, "● Interrupted: nothing was changed")
			a.mode = ready
			a.record(record{Type: "assistant", Text: "Interrupted: nothing was changed."})
			return actStop
		}
	case asking:
		switch k.name {
		case keyUp:
			a.cursor = 0
		case keyDown:
			a.cursor = 1
		case keyRune:
			if k.r == '1' || k.r == '2' {
				a.cursor = int(k.r - '1')
				a.answer()
			}
		case keyEnter:
			a.answer()
		case keyEsc:
			a.cursor = 1
			a.answer()
		}
	}
	return actNone
}

// answer acts on the dialog's choice under the cursor.
func (a *agent) answer() {
	a.mode = ready
	edit := &toolRecord{Name: "edit_file", Input: map[string]string{"file": a.o.File}}
	if a.cursor != 0 {
		a.log = append(a.log, "● Not editing "+a.o.File+": you said No", "  Nothing was changed. What next?")
		edit.Outcome = "denied"
		a.record(record{Type: "assistant", Text: "Not editing " + a.o.File + ": you said No. Nothing was changed.", Tool: edit})
		return
	}
	path := filepath.Join(a.o.Dir, a.o.File)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = fmt.Fprintf(f, "\n%s\n", Line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		a.log = append(a.log, "● Could not edit "+a.o.File+": "+err.Error())
		edit.Outcome = "error"
		a.record(record{Type: "assistant", Text: "Could not edit " + a.o.File + ": " + err.Error(), Tool: edit})
		return
	}
	a.log = append(a.log, "● Edited "+a.o.File+" (+2 lines)", "  Done. What next?")
	edit.Outcome = "ok"
	a.record(record{Type: "assistant", Text: "Edited " + a.o.File + " (+2 lines). Done.", Tool: edit})
}

// record adds r to the session's record; the first failure is said on
// screen, once.
func (a *agent) record(r record) {
	if err := a.rec.write(r); err != nil && !a.recErr {
		a.recErr = true
		a.log = append(a.log, "● Keeping no record of this session: "+err.Error())
	}
}

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// frame is the whole screen, drawn anew each time: the header, as much of
// the conversation as fits, and the prompt box, spinner or dialog below.
func (a *agent) frame(cols, rows int) string {
	rule := strings.Repeat("─", max(cols-2, 10))
	head := []string{
		" ✻ harness demo agent · scripted: no model, no network",
		"   " + a.dir,
		"",
	}
	var foot []string
	switch a.mode {
	case ready:
		foot = []string{
			"╭" + rule + "╮",
			"│ > " + string(a.input),
			"╰" + rule + "╯",
			"  Enter to send · Ctrl-C to quit",
		}
	case working:
		secs := int(time.Since(a.started).Seconds())
		foot = []string{"", fmt.Sprintf(" %c Working… (%ds · esc to interrupt)", spinner[a.spin%len(spinner)], secs)}
	case asking:
		yes, no := "  ", "  "
		if a.cursor == 0 {
			yes = "❯ "
		} else {
			no = "❯ "
		}
		foot = []string{
			rule,
			" Edit " + a.o.File,
			"   + " + Line,
			"",
			" Allow edit to " + a.o.File + "?",
			" " + yes + "1. Yes",
			" " + no + "2. No",
			"",
			" Enter to confirm · Esc to cancel",
		}
	}
	room := max(rows-len(head)-len(foot), 0)
	body := a.log
	if len(body) > room {
		body = body[len(body)-room:]
	}
	lines := append(append(append([]string{}, head...), body...), foot...)
	var b strings.Builder
	b.WriteString("\x1b[?25l\x1b[H\x1b[2J")
	for i, l := range lines {
		if i >= rows {
			break
		}
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(clip(l, cols))
	}
	return b.String()
}

// clip cuts l to n runes (every rune the agent draws is one column wide).
func clip(l string, n int) string {
	if utf8.RuneCountInString(l) <= n {
		return l
	}
	return string([]rune(l)[:n])
}

type keyName int

const (
	keyRune keyName = iota
	keyEnter
	keyBackspace
	keyUp
	keyDown
	keyEsc
	keyCtrlC
	keyCtrlD
)

type key struct {
	name keyName
	r    rune
}

// parseKeys reads the keys of one read: printable runes, Enter, Backspace,
// the arrows (normal and application mode), a lone Esc, Ctrl-C and
// Ctrl-D. Bracketed-paste markers and other escape sequences are dropped.
func parseKeys(b []byte) []key {
	var ks []key
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b && i+1 < len(b) && (b[i+1] == '[' || b[i+1] == 'O'):
			j := i + 2
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == ';') {
				j++
			}
			if j < len(b) {
				switch b[j] {
				case 'A':
					ks = append(ks, key{name: keyUp})
				case 'B':
					ks = append(ks, key{name: keyDown})
				}
				j++
			}
			i = j
			continue
		case c == 0x1b:
			ks = append(ks, key{name: keyEsc})
		case c == '\r' || c == '\n':
			ks = append(ks, key{name: keyEnter})
		case c == 0x7f || c == 0x08:
			ks = append(ks, key{name: keyBackspace})
		case c == 0x03:
			ks = append(ks, key{name: keyCtrlC})
		case c == 0x04:
			ks = append(ks, key{name: keyCtrlD})
		case c < 0x20:
		default:
			r, n := utf8.DecodeRune(b[i:])
			ks = append(ks, key{name: keyRune, r: r})
			i += n
			continue
		}
		i++
	}
	return ks
}
