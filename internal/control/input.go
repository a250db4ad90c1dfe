package control

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
)

// MaxSendBytes bounds what one send types: the text and the keys as they
// reach the PTY, bracketed-paste markers included. An agent answers a
// prompt with a few words; a bigger paste belongs in a file.
const MaxSendBytes = 16 << 10

// Bracketed paste markers (DECSET 2004): a program that enabled the mode
// takes what comes between them as pasted text, not as keys.
const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// namedKeys are the keys send accepts by name (docs/design/terminals.md), besides C-a
// to C-z. Arrows are the normal-mode sequences (CSI A...), which
// programs in application cursor mode accept too.
var namedKeys = []struct{ name, seq string }{
	{"Enter", enterKey}, {"Tab", "\t"}, {"Esc", "\x1b"},
	{"Up", "\x1b[A"}, {"Down", "\x1b[B"}, {"Left", "\x1b[D"}, {"Right", "\x1b[C"},
	{"Backspace", "\x7f"}, {"Space", " "},
}

// keyNames lists the valid key names, for the error that rejects another.
func keyNames() string {
	names := make([]string, 0, len(namedKeys)+1)
	for _, k := range namedKeys {
		names = append(names, k.name)
	}
	return strings.Join(append(names, "C-a … C-z"), ", ")
}

// keySeq is what the key called name sends. Names are matched without
// regard to case ("enter", "C-C").
func keySeq(name string) (string, bool) {
	for _, k := range namedKeys {
		if strings.EqualFold(k.name, name) {
			return k.seq, true
		}
	}
	if len(name) == 3 && (name[0] == 'C' || name[0] == 'c') && name[1] == '-' {
		if c := name[2] | 0x20; c >= 'a' && c <= 'z' {
			return string(rune(c - 'a' + 1)), true
		}
	}
	return "", false
}

// enterKey is what Enter sends.
const enterKey = "\r"

// encodeSend turns a send into what the PTY gets (typing): the text, each
// key, then Enter. enterAfter is the agent's Adapter.EnterAfterPaste.
func encodeSend(a api.SendArgs, paste bool, enterAfter time.Duration) (supervise.Typing, error) {
	keys := make([]string, 0, len(a.Keys)+1)
	for _, k := range a.Keys {
		seq, ok := keySeq(k)
		if !ok {
			return supervise.Typing{}, errcode.Errorf(errcode.InvalidArgument, "unknown key %q: valid keys are %s", k, keyNames())
		}
		keys = append(keys, seq)
	}
	if a.Enter {
		keys = append(keys, enterKey)
	}
	t := typing(a.Text, keys, paste, enterAfter)
	if t.Len() == 0 {
		return supervise.Typing{}, errcode.Errorf(errcode.InvalidArgument, "nothing to send: give text, keys or enter")
	}
	if t.Len() > MaxSendBytes {
		return supervise.Typing{}, errcode.Errorf(errcode.InvalidArgument, "send of %d bytes is over the bound of %d bytes (text and keys as typed)", t.Len(), MaxSendBytes)
	}
	return t, nil
}

// typing is text (a bracketed paste when the program asked for it) and
// then keys, as sequences, the way a terminal sends them: one write. When
// the agent takes an Enter right after a paste as part of it (enterAfter,
// its Adapter.EnterAfterPaste), the first Enter after pasted text, and
// what follows it, is the Typing's Submit, written once the agent has
// taken the paste in (supervise.Typing says how that is known).
func typing(text string, keys []string, paste bool, enterAfter time.Duration) supervise.Typing {
	data := encodeText(text, paste)
	split := -1
	for _, k := range keys {
		if k == enterKey && split < 0 && paste && text != "" && enterAfter > 0 {
			split = len(data)
		}
		data = append(data, k...)
	}
	if split < 0 {
		return supervise.Typing{Data: data}
	}
	return supervise.Typing{Data: data[:split:split], Submit: data[split:], SubmitAfter: enterAfter}
}

// typeSend types t into u's terminal (supervise.Unit.Type). For an agent
// whose Enter after a paste may end up in the paste (agent.Adapter.
// EnterAgain), a send with its Enter apart to an agent at its input
// (ready, or limited: a resumed run may still show its limit) then
// watches how the adapter's rules read the screen. A rule reading it (or
// a hook telling it) working, waiting or in error means the send was
// taken. EnterAgain after the Enter, a screen no rule reads and no hook
// told of (the text still in the input box, where the ready rule's empty
// prompt is gone), one a Typed rule reads (the text in the box), or the
// limit still read as before means it was not:
// the Enter is written once more. The floor's working, a program merely
// busy, proves nothing: a loaded agent redraws its input busily. The
// wait ends early when the run or ctx ends.
func (c *Control) typeSend(ctx context.Context, u *unit, t supervise.Typing) (uint64, error) {
	again := u.sup.Adapter().EnterAgain
	changed := u.sup.AgentChanged() // before the send: a change after it is seen
	before := u.sup.AgentStatus().AgentState
	// A slash command may open a dialog the rules do not know, where a
	// second Enter would choose something: it gets none.
	command := bytes.HasPrefix(bytes.TrimPrefix(t.Data, []byte(pasteStart)), []byte("/"))
	if again <= 0 || len(t.Submit) == 0 || command || before != api.AgentReady && before != api.AgentLimited {
		return u.sup.Type(ctx, t)
	}
	run, err := u.sup.Type(ctx, t)
	if err != nil {
		return run, err
	}
	timer := time.NewTimer(again)
	defer timer.Stop()
	for {
		as := u.sup.AgentStatus()
		if as.RunID != run || sendTaken(as) {
			return run, nil
		}
		select {
		case <-changed:
			changed = u.sup.AgentChanged()
		case <-ctx.Done():
			return run, nil // the send itself went in
		case <-timer.C:
			if st := u.sup.Status(); st.RunID != run || !st.HasRun() {
				return run, nil // the run ended: nothing to write to
			}
			as := u.sup.AgentStatus()
			read := as.Hook || as.Rule != nil && !as.Rule.Typed
			if as.RunID != run || read && (as.AgentState != before || before == api.AgentReady) {
				return run, nil // a rule reads the screen, or a hook spoke: the input let go of the text
			}
			if _, err := u.sup.Type(ctx, supervise.Typing{Data: []byte(enterKey)}); err != nil {
				// The send itself went in; the run may have ended since.
				c.log.Warn("the agent did not take a send's Enter, and writing it again failed", logkey.Unit, u.name, logkey.Run, run, logkey.Err, err)
				return run, nil
			}
			c.log.Warn("the agent did not take a send's Enter; it was written again", logkey.Unit, u.name, logkey.Run, run,
				logkey.State, string(as.AgentState), logkey.Rule, ruleName(as), logkey.Waited, again)
			return run, nil
		}
	}
}

// sendTaken reports whether the agent's state, as a rule reads it or
// its hooks tell it, shows a send taken: working, waiting or in error.
func sendTaken(as supervise.AgentStatus) bool {
	if as.Rule == nil && !as.Hook {
		return false // the floor: busy or idle says nothing of the input
	}
	switch as.AgentState {
	case api.AgentWorking, api.AgentWaiting, api.AgentError:
		return true
	}
	return false
}

// ruleName names the rule that read as, "" for the floor.
func ruleName(as supervise.AgentStatus) string {
	if as.Rule == nil {
		return ""
	}
	return as.Rule.Name
}

// StartingWait bounds how long a send waits for a starting agent that
// drops what is typed before it reads keys (agent.Adapter.KeysWithPaste).
// Past it the send is typed anyway, as a terminal would.
const StartingWait = 30 * time.Second

// awaitKeys waits, for an agent that drops the keys typed while it is
// starting (Gemini CLI before it reads keys, and between a trust answer
// and its next process: a send right after `answer` was lost), until it
// is no longer starting, StartingWait passed or ctx ended. The send is
// encoded after it: the paste mode is the reading program's.
func (c *Control) awaitKeys(ctx context.Context, u *unit) {
	if !u.sup.Adapter().KeysWithPaste {
		return
	}
	timer := time.NewTimer(StartingWait)
	defer timer.Stop()
	for {
		changed := u.sup.AgentChanged()
		if u.sup.AgentStatus().AgentState != api.AgentStarting {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-timer.C:
			c.log.Warn("the agent was still starting; the send is typed anyway", logkey.Unit, u.name, logkey.Waited, StartingWait)
			return
		}
	}
}

// encodeText is text as typed: a bracketed paste when the program asked
// for it, the text itself otherwise.
func encodeText(text string, paste bool) []byte {
	if text == "" || !paste {
		return []byte(text)
	}
	// The text cannot end the paste early and turn the rest into keys.
	return []byte(pasteStart + strings.ReplaceAll(text, pasteEnd, "") + pasteEnd)
}

// Send answers `send`: it types text and keys into a running harness's
// PTY (docs/design/terminals.md). A harness without a process answers not_running, an
// upstream invalid_argument.
func (c *Control) Send(ctx context.Context, a api.SendArgs) (api.SendResult, error) {
	u, err := c.terminalUnit(a.Name)
	if err != nil {
		return api.SendResult{}, err
	}
	c.awaitKeys(ctx, u)
	t, err := encodeSend(a, u.sup.Term().BracketedPaste(), u.sup.Adapter().EnterAfterPaste)
	if err != nil {
		return api.SendResult{}, fmt.Errorf("harness %s: %w", a.Name, err)
	}
	run, err := c.typeSend(ctx, u, t)
	if err != nil {
		return api.SendResult{}, notRunning(u, err)
	}
	caller := callerOf(ctx)
	c.log.Info("input sent", logkey.Unit, u.name, logkey.Run, run, logkey.Bytes, t.Len(), logkey.Caller, caller.Kind, logkey.FromHarness, caller.Harness)
	return api.SendResult{Name: u.name, RunID: run, Bytes: t.Len()}, nil
}

// Attach opens a viewer of a harness's terminal for `harness attach` (the
// socket's attach mode): not_running when it is stopped or failed,
// invalid_argument for an upstream.
func (c *Control) Attach(ctx context.Context, a api.AttachArgs) (*supervise.Viewer, error) {
	u, err := c.terminalUnit(a.Name)
	if err != nil {
		return nil, err
	}
	if a.Cols < 0 || a.Rows < 0 {
		return nil, errcode.Errorf(errcode.InvalidArgument, "attach %s: size %dx%d", a.Name, a.Cols, a.Rows)
	}
	v, err := u.sup.Attach(ctx, supervise.ViewerOptions{ReadOnly: a.ReadOnly, Cols: a.Cols, Rows: a.Rows, Masked: a.Masked, Masker: c.opt.Masker})
	if err != nil {
		return nil, notRunning(u, err)
	}
	c.log.Info("viewer attached", logkey.Unit, u.name, logkey.ReadOnly, a.ReadOnly, logkey.Masked, a.Masked, logkey.Cols, a.Cols, logkey.Rows, a.Rows)
	return v, nil
}

// terminalUnit finds a harness that has a terminal: an upstream (an MCP
// server, a process on pipes or a remote endpoint) is invalid_argument.
func (c *Control) terminalUnit(name string) (*unit, error) {
	u, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	if u.kind == supervise.KindUpstream {
		return nil, errcode.Errorf(errcode.InvalidArgument, "%s is an MCP upstream: it has no terminal", name)
	}
	return u, nil
}

// notRunning gives supervise's ErrNotRunning its wire code and a message
// that says the unit's state; input the terminal did not take is busy.
func notRunning(u *unit, err error) error {
	if errors.Is(err, supervise.ErrInputBusy) || errors.Is(err, supervise.ErrInputTimeout) {
		return fmt.Errorf("%w: %w", err, errcode.ErrBusy)
	}
	if errors.Is(err, supervise.ErrNotRunning) {
		return errcode.Errorf(errcode.NotRunning, "%s is not running (%s)", u.name, u.sup.Status().State)
	}
	return err
}
