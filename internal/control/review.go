package control

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/gitdiff"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
)

// Reviews (docs/design/resources.md): `review` types one message listing
// "path:line: comment" lines to a harness's agent once it is ready, the
// way an interactive prompt is typed (prompt.go). Until then it is held
// on the unit for the run it was given to; more comments for the same run
// join the same message; a run that ends first drops it, and a caller
// waiting for it hears why.

// reviewHeader opens a review message.
const reviewHeader = "Review of your changes (path:line: comment):"

// pendingReview is the review a unit's run waits to have typed.
type pendingReview struct {
	sync.Mutex
	cur *reviewMsg
}

// reviewMsg is one review message and its delivery: done closes once it
// was typed (err nil) or dropped (err says why).
type reviewMsg struct {
	run   uint64
	lines []string
	done  chan struct{}
	err   error
}

// text is the message as typed: one comment a line inside a bracketed
// paste; one line otherwise, since a newline typed to a program that did
// not ask for pastes is its Enter and would send the first comment alone.
func (m *reviewMsg) text(paste bool) string {
	if paste {
		return reviewHeader + "\n" + strings.Join(m.lines, "\n")
	}
	return reviewHeader + " " + strings.Join(m.lines, " ; ")
}

// Review answers `review`.
func (c *Control) Review(ctx context.Context, a api.ReviewArgs) (api.ReviewResult, error) {
	u, err := c.terminalUnit(a.Name)
	if err != nil {
		return api.ReviewResult{}, err
	}
	if len(a.Comments) == 0 {
		return api.ReviewResult{}, errcode.Errorf(errcode.InvalidArgument, "review %s: no comments (give path:line: text)", u.name)
	}
	lines := make([]string, 0, len(a.Comments))
	for _, s := range a.Comments {
		p, n, text, err := gitdiff.ParseComment(s)
		if err != nil {
			return api.ReviewResult{}, errcode.Errorf(errcode.InvalidArgument, "review %s: %v", u.name, err)
		}
		// One line per comment, and no control character: typed into a
		// terminal, an Esc or a Ctrl-C would be a key, not text.
		line := strings.Join(strings.Fields(fmt.Sprintf("%s:%d: %s", p, n, text)), " ")
		lines = append(lines, strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				return -1
			}
			return r
		}, line))
	}
	if n := len((&reviewMsg{lines: lines}).text(true)); n > maxReviewBytes {
		return api.ReviewResult{}, errcode.Errorf(errcode.InvalidArgument, "review %s: %d bytes, over the bound of %d: send fewer or shorter comments", u.name, n, maxReviewBytes)
	}
	st := u.sup.Status()
	if !isActive(st.State) || !st.HasRun() {
		return api.ReviewResult{}, errcode.Errorf(errcode.NotRunning, "%s is not running (%s): a review is typed to a running agent", u.name, st.State)
	}
	m, text, err := u.queueReview(st.RunID, lines, u.sup.Term().BracketedPaste())
	if err != nil {
		return api.ReviewResult{}, fmt.Errorf("review %s: %w", u.name, err)
	}
	res := api.ReviewResult{Name: u.name, RunID: st.RunID, Status: api.ReviewQueued, Comments: len(lines), Text: text}
	u.log.Event(st.RunID, fmt.Sprintf("review queued (%d comments): typed once the agent is ready", len(lines)))
	c.log.Info("review queued", logkey.Unit, u.name, logkey.Run, st.RunID, logkey.Count, len(lines))
	// Ready now: the agent event that says so may have come before the
	// review was queued, so it is typed from here.
	if ag := u.sup.AgentStatus(); ag.RunID == st.RunID && ag.AgentState == api.AgentReady {
		c.goBackground(func() { c.typeReview(u, st.RunID) })
	}
	if a.WaitS <= 0 {
		return res, nil
	}
	t := time.NewTimer(time.Duration(a.WaitS * float64(time.Second)))
	defer t.Stop()
	select {
	case <-m.done:
		if m.err != nil {
			return res, m.err
		}
		res.Status = api.ReviewTyped
	case <-t.C:
	case <-ctx.Done():
	}
	return res, nil
}

// maxReviewBytes bounds a review as typed, bracketed-paste markers and
// Enter included.
const maxReviewBytes = MaxSendBytes - 64

// queueReview adds lines to run's pending review, or starts one, and
// returns it with its text as typed now (paste). Its lines change only
// under the lock, and no more once it is taken.
func (u *unit) queueReview(run uint64, lines []string, paste bool) (*reviewMsg, string, error) {
	u.review.Lock()
	defer u.review.Unlock()
	m := u.review.cur
	if m == nil || m.run != run {
		m = &reviewMsg{run: run, done: make(chan struct{})}
	}
	all := append(append([]string{}, m.lines...), lines...)
	if n := len((&reviewMsg{lines: all}).text(true)); n > maxReviewBytes {
		return nil, "", errcode.Errorf(errcode.InvalidArgument, "the review is %d bytes, over the bound of %d: send fewer or shorter comments", n, maxReviewBytes)
	}
	m.lines = all
	u.review.cur = m
	return m, m.text(paste), nil
}

// takeReview returns run's pending review and forgets it.
func (u *unit) takeReview(run uint64) *reviewMsg {
	u.review.Lock()
	defer u.review.Unlock()
	m := u.review.cur
	if m == nil || m.run != run {
		return nil
	}
	u.review.cur = nil
	return m
}

// onAgentReview is the part of onEvent for reviews; it must not block.
func (c *Control) onAgentReview(u *unit, ev supervise.Event) {
	switch {
	case ev.Kind == supervise.EventExit:
		if m := u.takeReview(ev.RunID); m != nil {
			m.err = errcode.Errorf(errcode.NotRunning, "review of %s dropped: run %d ended before its agent was ready", u.name, ev.RunID)
			close(m.done)
			u.log.Event(ev.RunID, "review dropped: the run ended before its agent was ready")
		}
	case ev.Kind == api.EventAgent && ev.Agent != nil && ev.Agent.AgentState == api.AgentReady:
		u.review.Lock()
		pending := u.review.cur != nil && u.review.cur.run == ev.RunID
		u.review.Unlock()
		if pending {
			c.goBackground(func() { c.typeReview(u, ev.RunID) })
		}
	}
}

// typeReview types run's pending review and Enter, as typePrompt types a
// prompt. It runs in the background, never on the actor.
func (c *Control) typeReview(u *unit, run uint64) {
	m := u.takeReview(run)
	if m == nil {
		return // typed already, or dropped
	}
	defer close(m.done)
	if u.sup.Status().RunID != run {
		m.err = errcode.Errorf(errcode.NotRunning, "review of %s dropped: run %d ended before it was typed", u.name, run)
		return
	}
	t := typing(m.text(u.sup.Term().BracketedPaste()), []string{enterKey}, u.sup.Term().BracketedPaste(), u.sup.Adapter().EnterAfterPaste)
	if _, err := c.typeSend(context.Background(), u, t); err != nil {
		m.err = fmt.Errorf("review of %s not typed: %w", u.name, notRunning(u, err))
		u.log.Event(run, fmt.Sprintf("review not typed: %v", err))
		c.log.Error("type review", logkey.Unit, u.name, logkey.Run, run, logkey.Err, err)
		return
	}
	u.log.Event(run, fmt.Sprintf("review typed (%d comments)", len(m.lines)))
	c.log.Info("review typed", logkey.Unit, u.name, logkey.Run, run, logkey.Bytes, t.Len())
}
