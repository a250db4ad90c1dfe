package supervise

import (
	"context"
	"fmt"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/runs"
)

// endCmd is Unit.EndRun: end one run with an outcome that says why.
type endCmd struct {
	run     uint64
	outcome api.RunOutcome
	note    string
	keep    bool // Park: the unit stays enabled
	reply   chan error
}

// EndRun stops the current run when it is run (its timeout, the loop
// guard, a usage limit, the end of its hours), recording outcome and note
// on it; the unit does not restart after it. It returns once the stop has
// begun. A run that is not current, or already stopping, is left alone.
func (u *Unit) EndRun(ctx context.Context, run uint64, outcome api.RunOutcome, note string) error {
	return u.call(ctx, endCmd{run: run, outcome: outcome, note: note, reply: make(chan error, 1)})
}

// Park is EndRun for a hold (the end of the harness's hours): the run
// stops with outcome and note, no restart follows, but the unit stays
// enabled, so whoever lifts the hold starts it again.
func (u *Unit) Park(ctx context.Context, run uint64, outcome api.RunOutcome, note string) error {
	return u.call(ctx, endCmd{run: run, outcome: outcome, note: note, keep: true, reply: make(chan error, 1)})
}

func (a *actor) onEnd(m endCmd) {
	p := a.proc
	if p == nil || p.run != m.run || p.stopping {
		m.reply <- nil
		return
	}
	a.endRun(p, m.outcome, m.note, m.keep)
	m.reply <- nil
}

// endRun stops p for a reason of its own: the outcome stands over the
// "interrupted" a stop would record, and no restart follows.
func (a *actor) endRun(p *proc, outcome api.RunOutcome, note string, keepEnabled bool) {
	p.outcome, p.note = outcome, note
	a.enabled = keepEnabled
	a.deps.Log.Event(p.run, fmt.Sprintf("%s: stopping", note))
	a.deps.Logger.Info("supervise: ending run", logkey.Run, p.run, logkey.State, string(outcome))
	a.beginStop()
}

// onTimeout is the run's timeout (UnitConfig.Timeout) going off.
func (a *actor) onTimeout(p *proc) {
	if p.stopping {
		return
	}
	a.endRun(p, api.RunTimedOut, "timed out after "+FormatDuration(p.cfg.Timeout), false)
}

// ending is how p's run ended, for the run store: an outcome set while it
// ran (a timeout, a stop) wins over its exit status.
func ending(p *proc, code *int, signal string) runs.Ending {
	return runs.Ending{ExitCode: code, Signal: signal, Outcome: p.outcome, Note: p.note}
}
