package notify

import (
	"fmt"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

// Occurrence is one thing a person may want to hear about, found in the
// event stream by a Detector.
type Occurrence struct {
	Event    string // one of config.NotifyEvents
	Harness  string
	RunID    uint64
	State    string
	ExitCode *int
	Signal   string
	Reason   string // why, in a few words
	Time     time.Time
	// Agent: the waiting prompt and its choices, or a limit's reset time
	// (the agent events, docs/design/agents.md).
	WaitingFor string
	Prompt     string
	Choices    []string
	Suggested  string
	Until      *time.Time
	// Diff is a finished turn's diff stat (turn_done).
	Diff *api.DiffStat

	// Agent is the agent's adapter and PromptID the waiting prompt's id
	// (api.AgentView.PromptID), which action links are bound to.
	Agent    string
	PromptID uint64
}

// Detector turns the daemon's events into Occurrences. It is a pure state
// machine over the events of each unit (no clock, no I/O): the previous
// state, the last exit and the last crash-loop reason are what it needs
// to tell "failed" from "stopped", "recovered" from "started".
type Detector struct {
	units map[string]*memo
}

type memo struct {
	state        string
	exit         string // the last exit or spawn failure, in words
	exitCode     *int
	signal       string
	flap         string // the last crash-loop reason
	jobFailedRun uint64 // the run a job_failed was found for
	agent        api.AgentState
	prompt       string // of the agent's current waiting
	promptID     uint64 // and its id
	hold         string // the current hold's reason and until; "" when none
}

// NewDetector returns a Detector that has seen nothing.
func NewDetector() *Detector { return &Detector{units: map[string]*memo{}} }

// Relevant reports whether an event of kind can make an Occurrence, so a
// caller can skip the others (activity events are frequent) cheaply.
func Relevant(kind string) bool {
	switch kind {
	case api.EventState, api.EventExit, api.EventFlapping, api.EventSpawnFailed, api.EventAgent, api.EventHold, api.EventTurnDone, api.EventToolChanged, api.EventSandboxDenied:
		return true
	}
	return false
}

// Next takes one event of a harness (job says whether the event's run is
// a job's run: scheduled, triggered) and returns what it means to a
// person, if anything.
func (d *Detector) Next(ev api.Event, job bool) []Occurrence {
	m := d.units[ev.Unit]
	if m == nil {
		m = &memo{}
		d.units[ev.Unit] = m
	}
	occ := func(event, reason string) []Occurrence {
		return []Occurrence{{Event: event, Harness: ev.Unit, RunID: ev.RunID, State: ev.State,
			ExitCode: ev.ExitCode, Signal: ev.Signal, Reason: reason, Time: ev.Time}}
	}
	switch ev.Kind {
	case api.EventExit:
		m.exit, m.exitCode, m.signal = ev.Message, ev.ExitCode, ev.Signal
		// A run that a stop ended is no failure: the actor is stopping
		// before it signals.
		failed := (ev.ExitCode != nil && *ev.ExitCode != 0) || ev.Signal != ""
		if job && failed && ev.State != "stopping" {
			m.jobFailedRun = ev.RunID
			return occ(config.NotifyJobFailed, exitReason(ev))
		}
	case api.EventAgent:
		return d.agent(m, ev)
	case api.EventHold:
		return d.held(m, ev)
	case api.EventTurnDone:
		o := occ(config.NotifyTurnDone, "finished a turn")
		if ev.Diff != nil {
			s := *ev.Diff
			o[0].Diff = &s
			o[0].Reason = fmt.Sprintf("finished a turn: %d file%s changed, +%d -%d", s.Files, plural(s.Files), s.Added, s.Deleted)
		}
		return o
	case api.EventToolChanged:
		return occ(config.NotifyToolChanged, ev.Message)
	case api.EventSandboxDenied:
		// Already once per host per minute at the source.
		return occ(config.NotifySandboxDenied, "sandbox refused "+ev.Message)
	case api.EventSpawnFailed:
		m.exit, m.exitCode, m.signal = "could not start: "+ev.Message, nil, ""
	case api.EventFlapping:
		m.flap = ev.Message
	case api.EventState:
		prev := m.state
		m.state = ev.State
		if prev == ev.State {
			return nil
		}
		switch {
		case ev.State == "failed":
			if job && m.jobFailedRun == ev.RunID && ev.RunID != 0 {
				return nil // said as job_failed
			}
			reason := m.exit
			if prev == "degraded" && m.flap != "" {
				reason = "gave up restarting after " + m.flap + "; last run " + m.exit
			}
			if reason == "" {
				reason = "failed"
			}
			o := occ(config.NotifyFailed, reason)
			o[0].ExitCode, o[0].Signal = m.exitCode, m.signal
			return o
		case ev.State == "degraded":
			reason := m.flap
			if reason == "" {
				reason = "crash-looping"
			}
			return occ(config.NotifyDegraded, reason+"; restarting with backoff")
		case ev.State == "running" && prev == "degraded":
			return occ(config.NotifyRecovered, "running steadily again")
		}
	}
	return nil
}

// agent: an agent that starts waiting (or waits on a new prompt) or hits
// a limit needs a person.
func (d *Detector) agent(m *memo, ev api.Event) []Occurrence {
	a := ev.Agent
	if a == nil {
		return nil
	}
	prev, prevPrompt, prevID := m.agent, m.prompt, m.promptID
	m.agent, m.prompt, m.promptID = a.AgentState, a.Prompt, a.PromptID
	o := Occurrence{Harness: ev.Unit, RunID: ev.RunID, State: ev.State, Time: ev.Time,
		WaitingFor: string(a.WaitingFor), Prompt: a.Prompt, Choices: a.Choices, Suggested: a.Suggested, Until: a.Until,
		Agent: a.Agent, PromptID: a.PromptID}
	switch {
	case a.AgentState == api.AgentWaiting && (prev != api.AgentWaiting || a.Prompt != prevPrompt || a.PromptID != prevID):
		o.Event = config.NotifyWaiting
		o.Reason = "needs you: " + string(a.WaitingFor)
		if a.WaitingFor == "" {
			o.Reason = "needs you"
		}
	case a.AgentState == api.AgentLimited && prev != api.AgentLimited:
		o.Event = config.NotifyLimited
		o.Reason = "reached a usage limit"
		if a.Until != nil {
			o.Reason += "; it resets at " + a.Until.Format(time.RFC3339)
		}
	default:
		return nil
	}
	return []Occurrence{o}
}

// held: a hold set on a harness, or changed (another reason, another
// until), means it will not run (docs/design/agents.md); a lifted hold is news to
// nobody (the harness starts, and a start is no occurrence).
func (d *Detector) held(m *memo, ev api.Event) []Occurrence {
	h := ev.Hold
	if h == nil {
		m.hold = ""
		return nil
	}
	key := string(h.Reason)
	if h.Until != nil {
		key += " " + h.Until.UTC().Format(time.RFC3339)
	}
	if key == m.hold {
		return nil
	}
	m.hold = key
	reason := "hold: " + string(h.Reason)
	if h.Note != "" {
		reason += " (" + h.Note + ")"
	}
	if h.Until != nil {
		reason += " until " + h.Until.Format(time.RFC3339)
	}
	return []Occurrence{{Event: config.NotifyHeld, Harness: ev.Unit, RunID: ev.RunID, State: ev.State,
		Reason: reason, Time: ev.Time, Until: h.Until}}
}

// Forget drops what the Detector knows of unit (removed by a reload).
func (d *Detector) Forget(unit string) { delete(d.units, unit) }

func exitReason(ev api.Event) string {
	switch {
	case ev.Signal != "":
		return "killed by " + ev.Signal
	case ev.ExitCode != nil:
		return fmt.Sprintf("exited with code %d", *ev.ExitCode)
	}
	return ev.Message
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
