package notify

import (
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

// RemindAfter is how long an agent may wait on one prompt, told of once,
// before it is told again: once, through the cooldown like any message.
const RemindAfter = 5 * time.Minute

// promptKey is what tells one waiting prompt from another: what it waits
// for, its text and its choices. A cooldown keeps a prompt from being said
// twice; a different prompt of the same harness is news.
func promptKey(waitingFor, prompt string, choices []string) string {
	return waitingFor + "\x00" + prompt + "\x00" + strings.Join(choices, "\x00")
}

// occurrenceKey is the part of a cooldown key an occurrence adds to its
// harness and event: its prompt for a waiting agent, nothing otherwise.
func occurrenceKey(o Occurrence) string {
	if o.Event != config.NotifyWaiting {
		return ""
	}
	return promptKey(o.WaitingFor, o.Prompt, o.Choices)
}

// reminders are the waiting prompts told of and not answered yet, by
// harness, each with when its reminder is due. The router owns them; the
// clock is the caller's.
type reminders map[string]*pendingWait

type pendingWait struct {
	o   Occurrence
	key string
	due time.Time
}

// told records a waiting occurrence sent at now.
func (r reminders) told(o Occurrence, now time.Time, after time.Duration) {
	r[o.Harness] = &pendingWait{o: o, key: occurrenceKey(o), due: now.Add(after)}
}

// seen takes an event of a harness: anything but the same prompt of the
// same run drawn again (or a hold, which does not answer it) means the
// agent no longer waits on what it was told of.
func (r reminders) seen(ev api.Event) {
	p := r[ev.Unit]
	if p == nil || ev.Kind == api.EventHold {
		return
	}
	if a := ev.Agent; ev.Kind == api.EventAgent && a != nil && a.AgentState == api.AgentWaiting &&
		ev.RunID == p.o.RunID && promptKey(string(a.WaitingFor), a.Prompt, a.Choices) == p.key {
		return
	}
	delete(r, ev.Unit)
}

// forget drops a harness's pending prompt.
func (r reminders) forget(harness string) { delete(r, harness) }

// due returns the reminders due at now, each once (it is dropped), and
// when the next is due (zero when none is pending).
func (r reminders) due(now time.Time) (out []Occurrence, next time.Time) {
	for h, p := range r {
		if !now.Before(p.due) {
			o := p.o
			o.Reason = "still " + o.Reason + ", since " + o.Time.Format(time.RFC3339)
			o.Time = now
			out = append(out, o)
			delete(r, h)
			continue
		}
		if next.IsZero() || p.due.Before(next) {
			next = p.due
		}
	}
	return out, next
}
