package control

import (
	"context"
	"fmt"
	"sync"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
)

// Interactive prompts (docs/design/agents.md): an interactive harness of an agent
// with a prompt gets it typed, as `harness send` types text and Enter,
// once its run's agent is first ready. Supervise says at spawn which run
// has one (a run that resumes a conversation has none); the agent events
// of that run type it once; a run that ends first takes it with it.
//
// A typed prompt is kept until the agent is seen taking it (working):
// Gemini CLI in a folder whose trust it has not been told draws its
// prompt, reading keys, before its folder-trust dialog (the dialog opens
// in an effect after its first frame; wired to harness it is ready in
// between long enough to be seen), and trusting the folder replaces its
// process, so what was typed before is gone. A prompt typed, followed by
// a dialog and the agent starting again, is typed once more at the next
// ready unless the agent was seen working first. Once only: Gemini's
// screen reads as starting for a moment after a prompt is submitted too.

// pendingPrompt is the prompt a unit's run waits to have typed, or has
// typed and not yet seen taken.
type pendingPrompt struct {
	sync.Mutex
	run  uint64
	text string
	// typed: text was typed at a ready; dialog: a dialog (waiting) showed
	// since; restarted: the agent was starting since; retyped: it was
	// typed a second time.
	typed, dialog, restarted, retyped bool
}

// promptAtSpawn is supervise's TypePrompt: run is to get text once
// ready. It runs on the actor: it only records.
func (u *unit) promptAtSpawn(run uint64, text string) {
	u.prompt.Lock()
	u.prompt.set(run, text)
	u.prompt.Unlock()
}

// set makes text run's prompt, not typed yet (held lock).
func (p *pendingPrompt) set(run uint64, text string) {
	p.run, p.text = run, text
	p.typed, p.dialog, p.restarted, p.retyped = false, false, false, false
}

// promptStep applies one agent state of run to its prompt and returns
// the text to type now, if any, and whether it is typed again.
func (p *pendingPrompt) promptStep(run uint64, state api.AgentState) (text string, again bool) {
	p.Lock()
	defer p.Unlock()
	if p.run != run || p.text == "" {
		return "", false
	}
	switch state {
	case api.AgentReady:
		switch {
		case !p.typed:
			p.typed = true
			return p.text, false
		case p.dialog && p.restarted && !p.retyped:
			p.retyped, p.restarted = true, false
			return p.text, true
		}
	case api.AgentWaiting:
		p.dialog = p.dialog || p.typed
	case api.AgentStarting:
		p.restarted = p.restarted || p.typed
	default: // working: taken; limited or error: not the prompt's to retry
		if p.typed {
			p.set(0, "")
		}
	}
	return "", false
}

// forgetPrompt drops run's prompt (the run ended).
func (p *pendingPrompt) forgetPrompt(run uint64) {
	p.Lock()
	defer p.Unlock()
	if p.run == run {
		p.set(0, "")
	}
}

// onAgentPrompt is the part of onEvent for interactive prompts; it must
// not block: the typing runs in the background.
func (c *Control) onAgentPrompt(u *unit, ev supervise.Event) {
	switch {
	case ev.Kind == supervise.EventExit:
		u.prompt.forgetPrompt(ev.RunID) // ended before it was taken: nothing (more) is typed
	case ev.Kind == api.EventAgent && ev.Agent != nil:
		text, again := u.prompt.promptStep(ev.RunID, ev.Agent.AgentState)
		if text == "" {
			return
		}
		if again {
			c.log.Warn("the agent restarted after a dialog before it took its prompt; the prompt is typed again", logkey.Unit, u.name, logkey.Run, ev.RunID)
		}
		c.goBackground(func() { c.typePrompt(u, ev.RunID, text) })
	}
}

// typePrompt types text and Enter into run's terminal as `send --enter`
// does: a bracketed paste when the agent asked for it, the Enter apart when
// its adapter says so. It runs in the background, never on the actor.
func (c *Control) typePrompt(u *unit, run uint64, text string) {
	t := typing(text, []string{enterKey}, u.sup.Term().BracketedPaste(), u.sup.Adapter().EnterAfterPaste)
	if u.sup.Status().RunID != run {
		return // the run ended meanwhile
	}
	if _, err := c.typeSend(context.Background(), u, t); err != nil {
		u.log.Event(run, fmt.Sprintf("prompt not typed: %v", err))
		c.log.Error("type prompt", logkey.Unit, u.name, logkey.Run, run, logkey.Err, err)
		return
	}
	u.log.Event(run, fmt.Sprintf("prompt typed (%d bytes)", t.Len()))
	c.log.Info("prompt typed", logkey.Unit, u.name, logkey.Run, run, logkey.Bytes, t.Len())
}
