package control

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
)

// Turns answers `turns` (docs/design/agents.md): the run's conversation as the
// agent's own transcript holds it, found by the session its hooks named
// (the current run) or by its workdir and start time, read with a bound
// (agent.MaxTranscriptRead) on the caller's goroutine, never a unit's,
// and masked like everything else the daemon shows.
func (c *Control) Turns(_ context.Context, a api.TurnsArgs) (api.TurnsResult, error) {
	u, err := c.lookup(a.Name)
	if err != nil {
		return api.TurnsResult{}, err
	}
	h := u.harness()
	if h == nil {
		return api.TurnsResult{}, errcode.Errorf(errcode.InvalidArgument, "%s is an MCP upstream: it has no agent", a.Name)
	}
	ad := agent.MustLookup(h.Agent)
	id := a.Run
	if id == 0 {
		id = u.sup.Status().RunID
		if id == 0 {
			if last := c.opt.Runs.List(a.Name, 1); len(last) > 0 {
				id = last[0].ID
			}
		}
	}
	run, ok := c.opt.Runs.Get(id)
	if !ok || run.Harness != a.Name {
		return api.TurnsResult{}, errcode.Errorf(errcode.InvalidArgument, "%s has no run %d", a.Name, id)
	}
	tr, err := c.readTranscript(u, h, ad, run)
	if err != nil {
		if errors.Is(err, agent.ErrNoTranscript) || errors.Is(err, os.ErrNotExist) {
			return api.TurnsResult{}, errcode.Errorf(errcode.InvalidArgument, "%s run %d: %v", a.Name, id, err)
		}
		return api.TurnsResult{}, err
	}
	c.storeTranscript(h, ad, id, tr)
	return c.turnsResult(a, h, ad, id, tr), nil
}

// readTranscript reads the transcript of run: the file its hooks named
// (the current run), else the one the adapter finds for its session, or
// for its workdir and the time it ran (agent.PickTranscript: never
// another run's file).
func (c *Control) readTranscript(u *unit, h *config.Harness, ad *agent.Adapter, run api.Run) (agent.Transcript, error) {
	session := run.SessionID
	if r, s, p := u.sup.AgentSession(); r == run.ID {
		if p != "" {
			return ad.ReadTranscriptFile(p)
		}
		if s != "" {
			session = s
		}
	}
	span := agent.RunSpan{Start: run.StartedAt}
	if run.EndedAt != nil {
		span.End = *run.EndedAt
	}
	return ad.ReadTranscript(c.agentHome(h), c.agentWorkdir(u.name, h), session, span)
}

// storeTranscript puts what a transcript says about run on the run
// record (docs/design/agents.md: runs, describe).
func (c *Control) storeTranscript(h *config.Harness, ad *agent.Adapter, id uint64, tr agent.Transcript) {
	ra := api.RunAgent{SessionID: tr.SessionID, Model: tr.Model, Tokens: tr.Usage, LastAPIError: logs.StripControlLines(tr.LastAPIError)}
	for _, t := range tr.Turns {
		for _, tc := range t.Tools {
			ra.ToolCalls = append(ra.ToolCalls, api.RunToolCall{Name: tc.Name, Outcome: tc.Outcome})
		}
	}
	if cost, ok := ad.TranscriptCost(tr, h.Prices); ok {
		ra.CostUSD = cost
	}
	if err := c.opt.Runs.SetAgent(id, ra); err != nil {
		c.log.Debug("transcript not recorded on the run", logkey.Run, id, logkey.Err, err)
	}
}

// recordTranscript records the session a hook named on run, and with
// read the transcript's totals too, on a goroutine of its own (a
// transcript read is bounded but not instant), one per unit at a time.
// With tools the tool calls the transcript adds since the last read go
// to the loop guard (an agent whose hooks name no tool call).
func (c *Control) recordTranscript(u *unit, h *config.Harness, run uint64, read, tools bool) {
	if _, s, _ := u.sup.AgentSession(); s != "" {
		if err := c.opt.Runs.SetAgent(run, api.RunAgent{SessionID: s}); err != nil {
			c.log.Debug("session not recorded on the run", logkey.Run, run, logkey.Err, err)
		}
	}
	if !read || !u.reading.CompareAndSwap(false, true) {
		return
	}
	started := c.goBackground(func() {
		defer u.reading.Store(false)
		r, ok := c.opt.Runs.Get(run)
		if !ok {
			return
		}
		ad := agent.MustLookup(h.Agent)
		_, _, p := u.sup.AgentSession()
		if p != "" {
			c.settle(p)
		}
		tr, err := c.readTranscript(u, h, ad, r)
		if err == nil && p == "" && tr.Path != "" {
			// Found, not named by a hook: read it again once it is
			// written out.
			c.settle(tr.Path)
			if again, err2 := ad.ReadTranscriptFile(tr.Path); err2 == nil {
				if again.SessionID == "" {
					again.SessionID = tr.SessionID
				}
				tr = again
			}
		}
		if err = transcriptProblem(ad, tr, err); err != nil {
			c.transcriptUnread(u, run, err)
			return
		}
		c.storeTranscript(h, ad, run, tr)
		if tools {
			c.guardTranscript(u, h, run, tr)
		}
	})
	if !started {
		u.reading.Store(false)
	}
}

// transcriptProblem is why a transcript read gave the run nothing: the
// read's error, or a file read whole in which the adapter found no record
// it knows (no turn, no tokens, no model, no session), such as a program
// version that writes another shape. nil when it gave something.
func transcriptProblem(ad *agent.Adapter, tr agent.Transcript, err error) error {
	if err != nil {
		return err
	}
	if tr.Path != "" && len(tr.Turns) == 0 && tr.Usage == (agent.Usage{}) && tr.Model == "" && tr.SessionID == "" {
		return fmt.Errorf("%s: no record of a shape agent %s writes", tr.Path, ad.Name)
	}
	return nil
}

// transcriptUnread logs why run's transcript was not read into it, once
// per run and reason: a transcript that is locked, cut short or of a
// shape the adapter does not know leaves the run's model, tokens and cost
// empty, and the run goes on. One not written yet is no news.
func (c *Control) transcriptUnread(u *unit, run uint64, err error) {
	if errors.Is(err, agent.ErrNoTranscript) {
		c.log.Debug("no transcript for the run yet", logkey.Unit, u.name, logkey.Run, run, logkey.Err, err)
		return
	}
	key := fmt.Sprintf("%d %v", run, err)
	if old := u.unread.Swap(&key); old != nil && *old == key {
		return
	}
	c.log.Warn("the agent's transcript was not read: the run's model, tokens and cost stay empty", logkey.Unit, u.name, logkey.Run, run, logkey.Err, err)
}

// guardTranscript gives the loop guard the tool calls of run's transcript
// it has not seen yet, in order.
func (c *Control) guardTranscript(u *unit, h *config.Harness, run uint64, tr agent.Transcript) {
	var calls []string
	for _, t := range tr.Turns {
		for _, tc := range t.Tools {
			calls = append(calls, tc.GuardKey())
		}
	}
	u.repeats.Lock()
	if u.repeats.run != run {
		u.repeats.run, u.repeats.fed = run, 0
	}
	from := min(u.repeats.fed, len(calls))
	u.repeats.fed = len(calls)
	u.repeats.Unlock()
	for _, call := range calls[from:] {
		if c.guardLoop(u, h.AgentRun.LoopGuard, run, call) {
			return // the run ends at the limit-th call
		}
	}
}

// Settling a transcript: an agent queues its transcript writes, so at the
// end of a turn (its Stop hook) the file may still lack the turn's last
// lines. The read waits until the file has not grown for settleQuiet,
// at most settleMax.
const (
	settlePoll  = 50 * time.Millisecond
	settleQuiet = time.Second
	settleMax   = 3 * time.Second
)

// settle waits until the file at path stops growing (bounded by
// settleMax, and cut short when the control closes).
func (c *Control) settle(path string) {
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	last, quiet := size(), time.Duration(0)
	for waited := time.Duration(0); waited < settleMax && quiet < settleQuiet && !c.closing.Load(); waited += settlePoll {
		time.Sleep(settlePoll)
		if n := size(); n != last {
			last, quiet = n, 0
		} else {
			quiet += settlePoll
		}
	}
}

// turnsResult renders a transcript, masked, the newest a.Limit turns.
func (c *Control) turnsResult(a api.TurnsArgs, h *config.Harness, ad *agent.Adapter, run uint64, tr agent.Transcript) api.TurnsResult {
	// The agent's words go to terminals (harness turns): without their
	// control sequences, as activity entries, then masked.
	m := func(s string) string { return c.opt.Masker.String(logs.StripControlLines(s)) }
	res := api.TurnsResult{
		Name: a.Name, RunID: run, Agent: ad.Name, SessionID: tr.SessionID, Model: tr.Model,
		Tokens: turnTokens(tr.Usage), LastAPIError: m(clipText(tr.LastAPIError)), Truncated: tr.Truncated,
		Turns: []api.TurnInfo{},
	}
	if cost, ok := ad.TranscriptCost(tr, h.Prices); ok {
		res.CostUSD = &cost
	}
	limit := a.Limit
	if limit <= 0 {
		limit = api.DefaultTurns
	}
	turns := tr.Turns
	if len(turns) > limit {
		res.Omitted = len(turns) - limit
		turns = turns[len(turns)-limit:]
	}
	for _, t := range turns {
		ti := api.TurnInfo{Role: t.Role, Text: m(clipText(t.Text)), Model: t.Model}
		if !t.Time.IsZero() {
			tt := t.Time
			ti.Time = &tt
		}
		if t.Usage != (agent.Usage{}) {
			tok := turnTokens(t.Usage)
			ti.Tokens = &tok
		}
		for _, tc := range t.Tools {
			ti.ToolCalls = append(ti.ToolCalls, api.ToolCallInfo{Name: tc.Name, Input: m(clipText(tc.Input)), Outcome: tc.Outcome})
		}
		res.Turns = append(res.Turns, ti)
	}
	return res
}

func turnTokens(u agent.Usage) api.Tokens { return u }

// clipText keeps the head of s (api.MaxTurnText bytes, on a rune
// boundary).
func clipText(s string) string {
	if len(s) <= api.MaxTurnText {
		return s
	}
	n := api.MaxTurnText
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// agentHome is the HOME a harness's agent keeps its records under: its
// env table's, else the daemon's.
func (c *Control) agentHome(h *config.Harness) string {
	if home := h.Env["HOME"]; home != "" {
		return home
	}
	home, _ := os.UserHomeDir()
	return home
}

// agentWorkdir is where a harness's agent runs.
func (c *Control) agentWorkdir(name string, h *config.Harness) string {
	switch {
	case h.Worktree != nil:
		return c.worktreePath(name)
	case h.Workdir != "":
		return h.Workdir
	}
	wd, _ := os.Getwd()
	return wd
}
