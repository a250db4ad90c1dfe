package control

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
)

// AnswerSettle bounds how long `answer` waits, after typing, for the
// agent to leave the prompt it answered, so that its result (and a
// caller's next look) shows the state after the answer, not the dialog
// still on screen for a debounce.
var AnswerSettle = 3 * time.Second

// Answer answers `answer` (docs/design/agents.md): it picks a choice of the prompt
// the harness's agent is waiting on, by text or number, and types the
// keys the adapter's dialog needs through the send path. A harness
// without a process is not_running, one whose agent is not waiting
// not_waiting, a choice the prompt does not offer invalid_argument
// listing the choices.
func (c *Control) Answer(ctx context.Context, a api.AnswerArgs) (api.AnswerResult, error) {
	u, _, st, err := c.terminalOf(a.Name)
	if err != nil {
		return api.AnswerResult{}, err
	}
	m := c.Masker()
	as := u.sup.AgentStatus()
	if as.RunID != st.RunID || as.AgentState != api.AgentWaiting || as.Rule == nil || len(as.Choices) == 0 {
		state := string(as.AgentState)
		if as.RunID != st.RunID || state == "" {
			state = "not known yet"
		}
		return api.AnswerResult{}, errcode.ErrNotWaiting.Errorf("%s is not waiting on a prompt: its agent (%s) is %s", a.Name, as.Agent, state)
	}
	if a.PromptID != 0 && as.PromptID != a.PromptID {
		return api.AnswerResult{}, errcode.ErrNotWaiting.Errorf("%s is no longer on the prompt answered: its agent (%s) is on another one", a.Name, as.Agent)
	}
	choices := slices.Clone(as.Choices)
	i, err := agent.Choose(choices, a.Choice)
	if err != nil {
		return api.AnswerResult{}, errcode.Errorf(errcode.InvalidArgument, "%s: %s does not offer %s: its choices are %s",
			a.Name, m.String(quotePrompt(as.Prompt)), errcode.Quote(m.String(a.Choice)), m.String(agent.ListChoices(choices)))
	}
	ad := u.sup.Adapter()
	if as, err = awaitAnswerable(ctx, u, as, ad.AnswerAfter, i); err != nil {
		return api.AnswerResult{}, fmt.Errorf("%s: %w", a.Name, err)
	}
	run, keys, t, err := typeAnswer(ctx, u, as, i)
	if err != nil {
		return api.AnswerResult{}, answerErr(u, err)
	}
	for try := 1; ad.AnswerAgain > 0 && try <= answerRetypes; try++ {
		now := settleAfterAnswer(ctx, u, as, ad.AnswerAgain)
		if now.PromptID != as.PromptID || ctx.Err() != nil {
			break
		}
		// The same dialog: its keys were dropped.
		as = u.sup.AgentStatus()
		if as.PromptID != now.PromptID || as.RunID != run {
			break
		}
		again, againKeys, againTyped, err := typeAnswer(ctx, u, as, i)
		if err != nil {
			// The answer itself was typed; the run may have ended since.
			c.log.Warn("a dialog stayed after its answer, and typing it again failed", logkey.Unit, u.name, logkey.Run, run, logkey.Err, err)
			break
		}
		run, keys, t = again, againKeys, againTyped
		c.log.Warn("a dialog stayed after its answer; it was typed again", logkey.Unit, u.name, logkey.Run, run, logkey.Waited, ad.AnswerAgain, logkey.Attempts, try)
	}
	caller := callerOf(ctx)
	c.log.Info("prompt answered", logkey.Unit, u.name, logkey.Run, run, logkey.Bytes, t.Len(),
		logkey.Caller, caller.Kind, logkey.FromHarness, caller.Harness)
	res := api.AnswerResult{
		Name: u.name, RunID: run, Choice: m.String(choices[i]), Number: i + 1,
		Prompt: m.String(as.Prompt), Keys: keys,
	}
	res.After = maskAgent(m, settleAfterAnswer(ctx, u, as, AnswerSettle))
	return res, nil
}

// awaitAnswerable waits until the dialog as shows has been seen for
// guard (Adapter.AnswerAfter), and returns it as it is then: the same
// prompt, its cursor perhaps moved. The same question drawn again
// meanwhile (its terminal resized, as when the dashboard's terminal
// attaches, and a long choice wrapped anew) is a new prompt, but choice
// i is still what was answered: its own guard is waited for, up to
// redrawsAwaited times. Another prompt by then is not_waiting.
func awaitAnswerable(ctx context.Context, u *unit, as supervise.AgentStatus, guard time.Duration, i int) (supervise.AgentStatus, error) {
	for redraws := 0; ; redraws++ {
		wait := time.Until(as.PromptAt.Add(guard))
		if guard <= 0 || as.PromptAt.IsZero() || wait <= 0 {
			return as, nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return as, fmt.Errorf("waiting for the dialog to take keys: %w", ctx.Err())
		}
		now := u.sup.AgentStatus()
		if now.RunID == as.RunID && now.PromptID == as.PromptID && now.Rule != nil {
			return now, nil
		}
		if redraws == redrawsAwaited || !sameQuestion(as, now, i) {
			return as, errcode.ErrNotWaiting.Errorf("no longer on the prompt answered: its agent (%s) moved on before the dialog took keys", as.Agent)
		}
		as = now
	}
}

// redrawsAwaited bounds how many times an answer waits for the guard of
// its dialog drawn again: a dialog redrawn on every look is not one a
// person is answering.
const redrawsAwaited = 3

// sameQuestion reports whether now, a prompt after was, asks what was
// asked and offers choice i as was did: the same run, wait and prompt
// text, as many choices, choice i the same. Only the other choices may
// read differently (a long one wrapped anew).
func sameQuestion(was, now supervise.AgentStatus, i int) bool {
	return now.RunID == was.RunID && now.AgentState == api.AgentWaiting && now.Rule != nil &&
		now.WaitingFor == was.WaitingFor && now.Prompt == was.Prompt &&
		len(now.Choices) == len(was.Choices) && i < len(now.Choices) && now.Choices[i] == was.Choices[i]
}

// typeAnswer types the keys that pick choice i on the dialog as shows,
// from where its cursor is.
func typeAnswer(ctx context.Context, u *unit, as supervise.AgentStatus, i int) (uint64, []string, supervise.Typing, error) {
	keys, err := as.Rule.AnswerKeys(i, as.Selected, len(as.Choices))
	if err != nil {
		if errors.Is(err, agent.ErrNoCursor) {
			return 0, nil, supervise.Typing{}, errcode.ErrBusy.Errorf("the dialog's cursor is not on any choice yet; look again and retry")
		}
		return 0, nil, supervise.Typing{}, err
	}
	t, err := encodeSend(answerSend(keys), false, 0)
	if err != nil {
		return 0, nil, supervise.Typing{}, err
	}
	run, err := u.sup.Type(ctx, t)
	if err != nil {
		return run, nil, t, err
	}
	return run, keys, t, nil
}

// answerErr is the error of an answer that could not be typed: the
// harness's own not_running or busy, or what else went wrong, named.
func answerErr(u *unit, err error) error {
	if errors.Is(err, supervise.ErrNotRunning) || errors.Is(err, supervise.ErrInputBusy) || errors.Is(err, supervise.ErrInputTimeout) {
		return notRunning(u, err)
	}
	return fmt.Errorf("%s: %w", u.name, err)
}

// answerRetypes bounds how many times an answer is typed again on a
// dialog that stays (agent.Adapter.AnswerAgain): a program that drops
// keys while it scrolls its dialog into view, or after a stall, may drop
// the second one too on a loaded machine.
const answerRetypes = 3

// answerSend is what typing keys takes: a dialog answered by a letter
// of its own (Cline's "[y] Approve [n] Deny", Rule.Keys) gets the letter
// typed as text, which is no key name.
func answerSend(keys []string) api.SendArgs {
	if len(keys) == 1 && len(keys[0]) == 1 && keys[0][0] > ' ' && keys[0][0] < 0x7f {
		if _, named := keySeq(keys[0]); !named {
			return api.SendArgs{Text: keys[0]}
		}
	}
	return api.SendArgs{Keys: keys}
}

// quotePrompt names a prompt in an error.
func quotePrompt(p string) string {
	if p == "" {
		return "its prompt"
	}
	return "the prompt " + errcode.Quote(p)
}

// settleAfterAnswer waits, up to d, until the agent is no longer on the
// dialog it was answered on (another state, prompt or choices, or another
// run), and returns its state then.
func settleAfterAnswer(ctx context.Context, u *unit, was supervise.AgentStatus, d time.Duration) api.AgentView {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		changed := u.sup.AgentChanged()
		now := u.sup.AgentStatus()
		if now.RunID != was.RunID || now.AgentState != was.AgentState || now.Prompt != was.Prompt || !slices.Equal(now.Choices, was.Choices) {
			return now.AgentView
		}
		select {
		case <-changed:
		case <-timer.C:
			return now.AgentView
		case <-ctx.Done():
			return now.AgentView
		}
	}
}
