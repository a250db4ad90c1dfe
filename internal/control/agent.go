package control

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/supervise"
)

// withAgent adds the agent of a harness to its list row (docs/design/agents.md) and,
// while the harness has a run, what that agent is doing (as, the agent
// view its tracker published, when it is of st's run).
func withAgent(ui *api.UnitInfo, agent string, st *supervise.Status, as *supervise.AgentStatus, m *mask.Masker) {
	ui.Agent = agent
	if st.HasRun() && as != nil && as.RunID == st.RunID && as.AgentState != "" {
		ui.AgentView = maskAgent(m, as.AgentView)
		ui.Agent = agent
	}
}

// maskAgent returns v with what it read off the screen (the prompt, the
// choices, the error shown) masked as the screen op masks the rows: an
// agent asking to run `curl -H "Authorization: Bearer …"` shows its
// command on the screen, and so in v.
func maskAgent(m *mask.Masker, v api.AgentView) api.AgentView {
	v.Prompt = m.String(v.Prompt)
	v.AgentMessage = m.String(v.AgentMessage)
	if v.Choices != nil {
		v.Choices = m.Strings(slices.Clone(v.Choices)) // the published status shares them
	}
	return v
}

// waitAgent answers `wait --state`: it returns once the agent of the
// harness's current run is in one of states, or after timeout with the
// state it is in. A run that ends first is not_running, except a run
// parked on its usage limit when limited is asked for (parkedLimited).
func (c *Control) waitAgent(ctx context.Context, a api.WaitArgs, timeout time.Duration) (api.WaitResult, error) {
	for _, s := range a.State {
		if !s.Valid() {
			return api.WaitResult{}, errcode.Errorf(errcode.InvalidArgument, "unknown agent state %s (want one of %s)", errcode.Quote(string(s)), agentStateList())
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.awaitSpawn(wctx, a.Name)
	u, _, st, err := c.terminalOf(a.Name)
	if err != nil {
		if res, ok := c.parkedLimited(a); ok {
			return res, nil
		}
		return api.WaitResult{}, err
	}
	run := st.RunID
	rctx, stop := context.WithCancelCause(wctx)
	defer stop(nil)
	go func() {
		if _, err := c.opt.Runs.Wait(rctx, run); err == nil {
			stop(errRunEnded)
		}
	}()
	res := api.WaitResult{Name: a.Name}
	for {
		changed := u.sup.AgentChanged()
		as := u.sup.AgentStatus()
		if as.RunID == run {
			res.AgentView = maskAgent(c.Masker(), as.AgentView)
			if slices.Contains(a.State, as.AgentState) {
				return res, nil
			}
		}
		select {
		case <-changed:
		case <-rctx.Done():
			switch {
			case errors.Is(context.Cause(rctx), errRunEnded):
				if res, ok := c.parkedLimited(a); ok {
					return res, nil
				}
				return res, errcode.Errorf(errcode.NotRunning, "%s: run %d ended while waiting for its agent to be %s", a.Name, run, joinStates(a.State))
			case ctx.Err() == nil:
				res.TimedOut = true
				return res, nil
			}
			return res, ctx.Err()
		}
	}
}

// spawnPoll is how often a wait looks again at a harness still starting.
const spawnPoll = 50 * time.Millisecond

// awaitSpawn returns once the harness name is no longer starting without a
// process (a start on its way: a setup running, a sandbox being made, a
// held start of max_concurrent_agents), or when ctx ends. A wait for an
// agent state just after a start then waits for that run rather than
// answering not_running.
func (c *Control) awaitSpawn(ctx context.Context, name string) {
	for {
		u, err := c.lookup(name)
		if err != nil {
			return
		}
		if st := u.sup.Status(); st.State != supervise.StateStarting || st.HasRun() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(spawnPoll):
		}
	}
}

// parkedLimited answers a wait for limited when the harness's last run is
// parked on its usage limit: the park stops the process as soon as the
// agent shows the limit, so a wait that starts, or wakes, a moment later
// must still hear limited (with what the agent showed), not not_running.
func (c *Control) parkedLimited(a api.WaitArgs) (api.WaitResult, bool) {
	if !slices.Contains(a.State, api.AgentLimited) {
		return api.WaitResult{}, false
	}
	u, err := c.lookup(a.Name)
	if err != nil {
		return api.WaitResult{}, false
	}
	until, note := c.limitedUntil(a.Name)
	if !until.After(time.Now()) {
		return api.WaitResult{}, false // no park in force
	}
	as := u.sup.AgentStatus()
	if as.RunID != u.sup.Status().RunID {
		return api.WaitResult{}, false
	}
	if as.AgentState != api.AgentLimited {
		// The agent drew something else as the park stopped it (opencode
		// prints its session on exit): the park, in force, still says
		// limited, as the run records it.
		as.AgentView = api.AgentView{Agent: as.Agent, AgentState: api.AgentLimited, AgentMessage: note, Until: &until}
	}
	return api.WaitResult{Name: a.Name, AgentView: maskAgent(c.Masker(), as.AgentView)}, true
}

func agentStateList() string { return joinStates(api.AgentStates()) }

func joinStates(ss []api.AgentState) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}
