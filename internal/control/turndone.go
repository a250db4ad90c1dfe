package control

import (
	"context"
	"fmt"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
)

// Turn done (docs/design/events.md): an agent (any adapter but the
// generic one) with a worktree that goes
// from working back to ready (through any waiting between) has finished
// a turn; control publishes turn_done with its worktree's diff stat,
// which the notifier can send (on = ["turn_done"]). The stat is computed
// in the background: git may take a while and the hook runs on the actor.

// turnDoneTimeout bounds the diff stat of one turn_done.
const turnDoneTimeout = time.Minute

// turnDoneHook is the part of onEvent for turn_done; it must not block.
func (c *Control) turnDoneHook(u *unit, ev supervise.Event) {
	switch {
	case ev.Kind == supervise.EventExit:
		u.turnRun.Store(0)
	case ev.Kind == api.EventAgent && ev.Agent != nil:
		switch ev.Agent.AgentState {
		case api.AgentWorking:
			u.turnRun.Store(ev.RunID)
		case api.AgentReady:
			if u.turnRun.Swap(0) != ev.RunID || ev.RunID == 0 {
				return // no work seen since the last ready
			}
			if h := u.harness(); h == nil || h.Worktree == nil {
				return
			}
			// A program with no agent adapter is ready whenever it is
			// quiet: each pause of its output would be a "turn".
			if u.sup.Adapter().Name == agent.Generic {
				return
			}
			state := ev.State
			c.goBackground(func() { c.turnDone(u, ev.RunID, state) })
		}
	}
}

// turnDone publishes turn_done for run with u's diff stat now.
func (c *Control) turnDone(u *unit, run uint64, state string) {
	ctx, cancel := context.WithTimeout(context.Background(), turnDoneTimeout)
	defer cancel()
	d, err := c.diffOf(ctx, u, true)
	if err != nil {
		c.log.Warn("turn_done: diff stat", logkey.Unit, u.name, logkey.Run, run, logkey.Err, err)
		return
	}
	s := d.Stat()
	c.publish(api.Event{Kind: api.EventTurnDone, Unit: u.name, State: state, RunID: run, Time: time.Now(), Diff: &s,
		Message: fmt.Sprintf("%d files changed, +%d -%d", s.Files, s.Added, s.Deleted)})
}
