package notify

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// message decodes the i-th message the receiver got.
func (r *receiver) message(t *testing.T, i int) Message {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var m Message
	if err := json.Unmarshal([]byte(r.bodies[i]), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitingOf is an agent event of harness svc's run 1.
func waitingOf(st api.AgentState, wf api.WaitingFor, prompt string, choices ...string) api.Event {
	return api.Event{Kind: api.EventAgent, Unit: "svc", State: "running", RunID: 1,
		Agent: &api.AgentView{Agent: "claude-code", AgentState: st, WaitingFor: wf, Prompt: prompt, Choices: choices}}
}

var (
	trustPrompt = waitingOf(api.AgentWaiting, api.WaitingTrust, "Is this a project you created or one you trust?", "No, exit", "Yes, I trust this folder")
	keyPrompt   = waitingOf(api.AgentWaiting, api.WaitingChoice, "Do you want to use this API key?", "Yes", "No (recommended)")
	touchPrompt = waitingOf(api.AgentWaiting, api.WaitingPermission, "touch made-by-agent", "Yes", "No")
	working     = waitingOf(api.AgentWorking, "", "")
)

// TestScenario_ACooldownHoldsBackTheSamePromptOnly: Claude Code's first
// run shows its trust dialog, 28 s later its API-key dialog, then a
// permission prompt: under a 60 s cooldown each is a message of its own
// (a cooldown per harness and event sent the first only, and the agent
// waited unheard). The same prompt again within the cooldown is held
// back; after it, it is sent.
func TestScenario_ACooldownHoldsBackTheSamePromptOnly(t *testing.T) {
	r := newReceiver(t)
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	tb := table("phone", r.URL)
	tb.Cooldown = 60 * time.Second
	n := New(Options{Source: fakeSource{}, Host: "box", Now: c.now, Backoff: func(int, time.Duration) time.Duration { return time.Millisecond }})
	n.Apply(map[string]*config.Notify{"phone": tb})
	t.Cleanup(n.Close)

	step := func(at time.Duration, evs ...api.Event) {
		c.set(t0.Add(at))
		observe(n, evs)
	}
	step(0, trustPrompt)
	r.wait(t, 1)
	step(28*time.Second, keyPrompt)
	r.wait(t, 1)
	step(29*time.Second, working, touchPrompt)
	r.wait(t, 1)
	step(40*time.Second, working, touchPrompt) // the same prompt again: held back
	waitStats(t, n, func(s api.NotifyStats) bool { return s.Suppressed == 1 })
	step(100*time.Second, working, touchPrompt)
	r.wait(t, 1)
	waitStats(t, n, func(s api.NotifyStats) bool { return s.Sent == 4 && s.Suppressed == 1 })
	var prompts []string
	for i := range r.count() {
		prompts = append(prompts, r.message(t, i).Prompt)
	}
	if want := []string{trustPrompt.Agent.Prompt, keyPrompt.Agent.Prompt, "touch made-by-agent", "touch made-by-agent"}; strings.Join(prompts, "|") != strings.Join(want, "|") {
		t.Errorf("prompts sent %q, want %q", prompts, want)
	}
}

// TestScenario_APromptStillWaitingIsToldOnceMore: a prompt told of and
// still waiting RemindAfter later (its redraws are the same prompt) is
// told once more, saying since when; one answered, or replaced by
// another, or of a run that ended, is not.
func TestScenario_APromptStillWaitingIsToldOnceMore(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	occ := func(ev api.Event) Occurrence {
		return NewDetector().Next(ev, false)[0]
	}
	r := reminders{}
	o := occ(touchPrompt)
	o.Time = t0
	r.told(o, t0, RemindAfter)
	r.seen(touchPrompt) // a redraw
	if out, next := r.due(t0.Add(RemindAfter - time.Second)); len(out) != 0 || !next.Equal(t0.Add(RemindAfter)) {
		t.Fatalf("before it is due: %v, next %s", out, next)
	}
	out, next := r.due(t0.Add(RemindAfter))
	if len(out) != 1 || out[0].Prompt != "touch made-by-agent" || !strings.HasPrefix(out[0].Reason, "still needs you: permission, since 2026-12-01T20:00:00Z") || !next.IsZero() {
		t.Fatalf("due: %+v, next %s", out, next)
	}
	if out, _ := r.due(t0.Add(3 * RemindAfter)); len(out) != 0 {
		t.Errorf("told a third time: %+v", out)
	}

	for name, ev := range map[string]api.Event{
		"answered":       working,
		"another prompt": keyPrompt,
		"another run":    func() api.Event { e := touchPrompt; e.RunID = 2; return e }(),
		"the run ended":  {Kind: api.EventExit, Unit: "svc", State: "running", RunID: 1},
	} {
		r := reminders{}
		r.told(o, t0, RemindAfter)
		r.seen(ev)
		if out, _ := r.due(t0.Add(RemindAfter)); len(out) != 0 {
			t.Errorf("%s: reminded %+v", name, out)
		}
	}
	r = reminders{}
	r.told(o, t0, RemindAfter)
	r.seen(api.Event{Kind: api.EventHold, Unit: "svc", Hold: &api.Hold{Reason: api.HoldHours}})
	if out, _ := r.due(t0.Add(RemindAfter)); len(out) != 1 {
		t.Error("a hold answered the prompt")
	}
}

// TestScenario_TheReminderReachesTheReceiver: the notifier sends the
// reminder by itself, with no event to wake it.
func TestScenario_TheReminderReachesTheReceiver(t *testing.T) {
	r := newReceiver(t)
	tb := table("phone", r.URL)
	tb.Cooldown = 10 * time.Millisecond
	n := New(Options{Source: fakeSource{}, RemindAfter: 50 * time.Millisecond,
		Backoff: func(int, time.Duration) time.Duration { return time.Millisecond }})
	n.Apply(map[string]*config.Notify{"phone": tb})
	t.Cleanup(n.Close)
	observe(n, []api.Event{touchPrompt})
	r.wait(t, 2)
	if m := r.message(t, 1); m.Event != config.NotifyWaiting || m.Prompt != "touch made-by-agent" || !strings.HasPrefix(m.Reason, "still needs you") {
		t.Errorf("reminder %+v", m)
	}
}
