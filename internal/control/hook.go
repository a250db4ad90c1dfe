package control

import (
	"context"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
)

// TokenLookup names the harness and run a live HARNESS_MCP_TOKEN belongs
// to (supervise.Tokens).
type TokenLookup interface {
	Lookup(token string) (unit string, run uint64, ok bool)
}

// Hook answers `hook` (docs/design/agents.md): a call of an agent's hook, made by
// `harness hook EVENT` inside a run. The run's token says which harness
// and run; the harness's adapter reads the event and payload, and the
// state it tells goes to the agent tracker at once. A call without a live
// token is refused and logged; a payload the adapter cannot read is an
// error for that call only.
func (c *Control) Hook(_ context.Context, a api.HookArgs) (api.HookResult, error) {
	var name string
	var run uint64
	ok := false
	if c.opt.Tokens != nil && a.Token != "" {
		name, run, ok = c.opt.Tokens.Lookup(a.Token)
	}
	if !ok {
		c.log.Warn("hook refused: no live run token", logkey.Kind, a.Event)
		return api.HookResult{}, errcode.Errorf(errcode.NotPermitted, "hook: the token is not a live run's HARNESS_MCP_TOKEN")
	}
	u, err := c.lookup(name)
	if err != nil {
		return api.HookResult{}, err
	}
	h := u.harness()
	if h == nil {
		return api.HookResult{}, errcode.Errorf(errcode.InvalidArgument, "hook: %s is not a harness", name)
	}
	sig, err := agent.MustLookup(h.Agent).ParseHook(a.Event, a.Payload)
	if err != nil {
		return api.HookResult{}, errcode.Errorf(errcode.InvalidArgument, "%s: %v", name, err)
	}
	// The agent's words become the prompt list, describe and top print:
	// no control sequences reach a terminal through them.
	sig.Message, sig.Tool = logs.StripControl(sig.Message), logs.StripControl(sig.Tool)
	st, live := u.sup.AgentHook(run, sig)
	if !live {
		return api.HookResult{}, errcode.Errorf(errcode.NotRunning, "hook: run %d of %s is not its current run", run, name)
	}
	if sig.Tool != "" {
		c.guardLoop(u, h.AgentRun.LoopGuard, run, sig.Tool)
	}
	if sig.SessionID != "" || sig.State == api.AgentReady {
		// The session goes on the run; at the end of a turn the
		// transcript's model, tokens and cost do too, read off this call.
		c.recordTranscript(u, h, run, sig.State == api.AgentReady, sig.TranscriptTools)
	}
	return api.HookResult{Name: name, RunID: run, AgentView: st.AgentView}, nil
}
