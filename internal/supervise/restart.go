package supervise

import (
	"time"

	"github.com/harness-dev/harness/internal/agent"
)

// Timing of an agent's restarts in its own terminal (agent.Rule.Restarts,
// agent.Rule.AnswerRestarts), as restartWatch applies it.
var (
	// RestartHold bounds agent.Screen.Restarting: an old process whose
	// letting go of the terminal was not seen (a look missed it) holds
	// the agent starting no longer than this.
	RestartHold = 20 * time.Second
	// RestartGone: a restart message out of view this long while the old
	// process still holds the terminal was taken back, and the agent goes
	// on in that process. Gemini CLI 0.61.0 takes it back when its
	// settings reload closes the trust dialog that says it restarts. Soon
	// after the message (in view up to 350 ms), that cancels the restart:
	// 12 of 16 runs at load 4. Later (550 ms), the restart is under way
	// and the old process exits once its clean-up is done, 50 and 100 ms
	// after: 2 of 16. When the reload comes before the answer, the message
	// stays in view until the new process draws below it: 2 of 16. Long
	// enough for a slow clean-up, far shorter than RestartHold.
	RestartGone = 2 * time.Second
	// AnswerRestartWait bounds the hold after a dialog that
	// AnswerRestarts left the screen with no restart message: an answer
	// that keeps things as they were ("Don't trust" a folder never
	// trusted) restarts nothing. Gemini CLI drew its prompt for up to
	// 300 ms before its restart message at load 4.
	AnswerRestartWait = 5 * time.Second
)

// restartWatch follows one run's restarts on its screen, look by look:
// whether what the agent draws now belongs to a process about to be
// replaced (agent.Screen.Restarting), whose keys would be lost. It is
// a policy of the looks it is given and their times; the tracker owns it
// under its lock.
type restartWatch struct {
	// onDialog: the last look showed a dialog that AnswerRestarts;
	// answeredAt is when one left the screen with no restart message yet.
	onDialog   bool
	answeredAt time.Time
	// shown is how many restart messages the last look saw (they stay in
	// view, so a restart is a count that grew).
	shown int
	// at is when a restart message showed up, zero when no restart is
	// pending; seen is the count then, and goneAt when the count fell
	// below it (the message taken back) during the hold.
	at     time.Time
	seen   int
	goneAt time.Time
}

// look takes a look at s at now and reports whether the agent is
// restarting. s.LineMode and s.Paste are the terminal's modes at the look.
func (w *restartWatch) look(a *agent.Adapter, s agent.Screen, now time.Time) bool {
	shown := a.RestartsShown(s.Lines)
	grew := shown > w.shown
	w.shown = shown
	r, _ := a.Rule(s)
	dialog := r != nil && r.AnswerRestarts
	switch {
	case dialog:
		w.answeredAt = time.Time{} // asking still, or again
	case w.onDialog && w.at.IsZero():
		w.answeredAt = now // answered: its restart message may follow
	}
	w.onDialog = dialog
	// The message may come in one frame with the old process's prompt
	// below it (seen in CI), which no rule reads as restarting: its
	// showing up starts the hold, whatever else is drawn.
	if grew && w.at.IsZero() {
		w.at, w.seen, w.goneAt, w.answeredAt = now, shown, time.Time{}, time.Time{}
	}
	if !w.at.IsZero() {
		switch {
		case shown >= w.seen:
			w.goneAt = time.Time{}
		case w.goneAt.IsZero():
			w.goneAt = now
		}
		letGo := s.LineMode || a.KeysWithPaste && !s.Paste
		taken := !w.goneAt.IsZero() && now.Sub(w.goneAt) >= RestartGone
		if !letGo && !taken && now.Sub(w.at) < RestartHold {
			return true
		}
		w.at, w.goneAt = time.Time{}, time.Time{}
	}
	if !w.answeredAt.IsZero() {
		if now.Sub(w.answeredAt) < AnswerRestartWait {
			return true
		}
		w.answeredAt = time.Time{}
	}
	return false
}
