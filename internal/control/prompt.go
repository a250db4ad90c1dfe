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

// pendingPrompt is the prompt a unit's run waits to have typed.
type pendingPrompt struct {
	sync.Mutex
	run  uint64
	text string
}

// promptAtSpawn is supervise's TypePrompt: run is to get text once
// ready. It runs on the actor: it only records.
func (u *unit) promptAtSpawn(run uint64, text string) {
	u.prompt.Lock()
	u.prompt.run, u.prompt.text = run, text
	u.prompt.Unlock()
}

// takePrompt returns run's pending prompt and forgets it.
func (u *unit) takePrompt(run uint64) (string, bool) {
	u.prompt.Lock()
	defer u.prompt.Unlock()
	if u.prompt.run != run || u.prompt.text == "" {
		return "", false
	}
	text := u.prompt.text
	u.prompt.run, u.prompt.text = 0, ""
	return text, true
}

// onAgentPrompt is the part of onEvent for interactive prompts; it must
// not block: the typing runs in the background.
func (c *Control) onAgentPrompt(u *unit, ev supervise.Event) {
	switch {
	case ev.Kind == supervise.EventExit:
		u.takePrompt(ev.RunID) // ended before it was ready: nothing is typed
	case ev.Kind == api.EventAgent && ev.Agent != nil && ev.Agent.AgentState == api.AgentReady:
		text, ok := u.takePrompt(ev.RunID)
		if !ok {
			return
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
