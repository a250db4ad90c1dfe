package control

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// Delegate answers `delegate` (docs/design/agents.md, "Delegation"): it
// waits for the agent to be ready, types the prompt as `send --enter`
// would, waits for the turn it starts to end, and answers with the
// agent's last words from its transcript. Everything is bounded by one
// timeout; on timeout the answer says what the agent is doing instead
// (waiting for a person, with the prompt and choices a caller can answer
// with `answer`), and the agent goes on.
func (c *Control) Delegate(ctx context.Context, a api.DelegateArgs) (api.DelegateResult, error) {
	timeout, err := delegateTimeout(a.TimeoutS)
	if err != nil {
		return api.DelegateResult{}, err
	}
	if a.Prompt == "" {
		return api.DelegateResult{}, errcode.Errorf(errcode.InvalidArgument, "delegate %s: the prompt is empty", a.Name)
	}
	if len(a.Prompt) > MaxSendBytes {
		return api.DelegateResult{}, errcode.Errorf(errcode.InvalidArgument, "delegate %s: the prompt is %d bytes, over the bound of %d", a.Name, len(a.Prompt), MaxSendBytes)
	}
	created := false
	if a.Agent != "" {
		if _, err := c.New(ctx, api.NewArgs{Name: a.Name, Agent: a.Agent, Repo: a.Repo, Worktree: a.Worktree, Base: a.Base}); err != nil {
			return api.DelegateResult{}, fmt.Errorf("delegate: %w", err)
		}
		created = true
	} else if a.Repo != "" || a.Worktree || a.Base != "" {
		return api.DelegateResult{}, errcode.Errorf(errcode.InvalidArgument, "delegate %s: repo, worktree and base make a new harness: give agent too", a.Name)
	}
	u, _, st, err := c.terminalOf(a.Name)
	if err != nil {
		return api.DelegateResult{}, err
	}
	ad := u.sup.Adapter()
	if ad.Name == agent.Generic {
		return api.DelegateResult{}, errcode.Errorf(errcode.InvalidArgument, "delegate %s: it runs no known agent (agent = %q): harness cannot tell when its turn ends", a.Name, ad.Name)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := api.DelegateResult{Name: u.name, RunID: st.RunID, Status: api.DelegateTimedOut, Created: created}

	w, err := c.waitAgent(ctx, api.WaitArgs{Name: a.Name, State: []api.AgentState{api.AgentReady}}, timeout)
	if err != nil {
		return res, fmt.Errorf("delegate %s: %w", a.Name, err)
	}
	res.Agent = w.AgentView
	if w.TimedOut {
		return res, nil
	}
	run := st.RunID
	// Taken before the prompt goes in: whatever it sets off is a change
	// after it.
	changed := u.sup.AgentChanged()
	t := typing(a.Prompt, []string{enterKey}, u.sup.Term().BracketedPaste(), ad.EnterAfterPaste)
	if _, err := c.typeSend(ctx, u, t); err != nil {
		return res, fmt.Errorf("delegate %s: type the prompt: %w", a.Name, notRunning(u, err))
	}
	res.Typed = true
	u.log.Event(run, fmt.Sprintf("delegated prompt typed (%d bytes)", t.Len()))
	c.log.Info("delegated prompt typed", logkey.Unit, u.name, logkey.Run, run, logkey.Bytes, t.Len())

	// The turn ends when the agent is ready again after it left ready, and
	// stays ready for turnSettle. A quick turn can go and come back between
	// two looks: two changes seen since the prompt, and ready now, is a
	// turn too. Ready for a moment is not the end: an agent whose
	// permission was just answered can show its prompt before it runs the
	// tool and asks the model again (Claude Code did on a loaded machine).
	busy, changes := false, 0
	var settled <-chan time.Time
	for {
		select {
		case <-changed:
			changes++
		case <-settled:
			res.Status = api.DelegateCompleted
			res.Answer, res.Note = c.lastAnswer(ctx, u.name, run, a.Prompt)
			res.Diff = c.delegateDiff(ctx, u)
			return res, nil
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return res, fmt.Errorf("delegate %s: %w", a.Name, err) // the caller went away
			}
			res.Agent = maskAgent(c.Masker(), u.sup.AgentStatus().AgentView)
			return res, nil
		}
		changed = u.sup.AgentChanged()
		as := u.sup.AgentStatus()
		if as.RunID != run {
			return res, errcode.Errorf(errcode.NotRunning, "delegate %s: run %d ended before its turn did", a.Name, run)
		}
		res.Agent = maskAgent(c.Masker(), as.AgentView)
		switch as.AgentState {
		case api.AgentWorking, api.AgentWaiting:
			busy, settled = true, nil
			continue
		case api.AgentLimited, api.AgentError:
			res.Status = api.DelegateFailed
			return res, nil
		case api.AgentReady:
			if (busy || changes >= 2) && settled == nil {
				settled = time.After(turnSettle)
			}
		}
	}
}

// turnSettle is how long an agent must stay ready for its delegated turn
// to count as done.
const turnSettle = 1500 * time.Millisecond

// delegateTimeout is timeout_s as a duration, within its bounds.
func delegateTimeout(s float64) (time.Duration, error) {
	switch {
	case s == 0:
		return api.DefaultDelegateTimeoutS * time.Second, nil
	case s < 0 || s > api.MaxDelegateTimeoutS:
		return 0, errcode.Errorf(errcode.InvalidArgument, "timeout_s must be between 1 and %d", api.MaxDelegateTimeoutS)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// transcriptLag bounds the wait for an agent's transcript to show the
// turn its screen already ended: a program may draw its prompt before it
// writes the last line of its session file.
const transcriptLag = 3 * time.Second

// lastAnswer is the agent's last text after the prompt in its run's
// transcript, or a note saying why there is none.
func (c *Control) lastAnswer(ctx context.Context, name string, run uint64, prompt string) (answer, note string) {
	deadline := time.Now().Add(transcriptLag)
	for {
		tr, err := c.Turns(ctx, api.TurnsArgs{Name: name, Run: run, Limit: 20})
		if err != nil {
			return "", fmt.Sprintf("no answer from the transcript: %v", err)
		}
		if answer, ok := answerAfter(tr.Turns, prompt); ok {
			return answer, ""
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", "the transcript has no answer of the agent's after the prompt"
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// answerAfter is the last assistant text after the user turn that holds
// prompt (the newest such), if the agent wrote any.
func answerAfter(turns []api.TurnInfo, prompt string) (string, bool) {
	want := strings.TrimSpace(prompt)
	if len(want) > 200 {
		want = want[:200] // turn texts are clipped; the head identifies it
	}
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Role != "user" || !strings.Contains(turns[i].Text, want) {
			continue
		}
		answer := ""
		for _, t := range turns[i+1:] {
			if t.Role == "assistant" && t.Text != "" {
				answer = t.Text
			}
		}
		return answer, answer != ""
	}
	return "", false
}

// delegateDiff is the stat of u's worktree against its base, nil without
// a worktree (or when git fails: logged, the answer stands without it).
func (c *Control) delegateDiff(ctx context.Context, u *unit) *api.DiffStat {
	if h := u.harness(); h == nil || h.Worktree == nil {
		return nil
	}
	d, err := c.diffOf(ctx, u, true)
	if err != nil {
		c.log.Warn("delegate: diff stat", logkey.Unit, u.name, logkey.Err, err)
		return nil
	}
	s := d.Stat()
	return &s
}
