package supervise

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/term"
	"golang.org/x/sys/unix"
)

// Timing of the agent state (docs/design/agents.md). A screen change is examined
// after AgentSample; a new state is published only once it has held for
// AgentDebounce, so a redraw caught half-way (a cleared screen, a dialog
// drawn row by row) never flickers it. Together they bound the delay from
// a screen change to its agent event.
var (
	AgentSample   = 25 * time.Millisecond
	AgentDebounce = 90 * time.Millisecond
	// HookHold is how long a state the agent's own hook told stands
	// against a screen that still shows working or ready otherwise: the
	// hook is the fresher signal until the agent has redrawn. A screen
	// that shows a dialog, a limit or an error is taken at once.
	HookHold = time.Second
	// HookWaitGrace is how long a waiting state a hook told, for an agent
	// whose dialogs the rules read, waits for the screen to show the
	// dialog: the hook (Claude Code's PermissionRequest) fires before the
	// dialog is drawn and carries neither its prompt nor its choices, and
	// a waiting state without them can be neither answered nor notified
	// usefully. A dialog that never shows leaves the hook's state
	// published once the grace is over. 2 s, not less: Claude Code took
	// over 500 ms to draw its dialog at load 20, and the state then went
	// out (to notifications too) without its choices; a person told of a
	// dialog 2 s late loses nothing.
	HookWaitGrace = 2 * time.Second
	// LinePoll is how often the terminal's mode is looked at while an
	// agent that read its keys raw has its terminal back in line mode
	// (agent.Screen.LineMode): a program that takes raw mode again need
	// not draw anything, so no output pokes the tracker.
	LinePoll = 50 * time.Millisecond
)

// agentTracker derives the agent state of a harness from its screen with
// the adapter's rules, off the actor: the PTY reader and the terminal's
// busy/idle changes poke it, a timer examines the screen through the
// terminal's public snapshot, and a state that held for AgentDebounce is
// published (AgentStatus) and sent as an EventAgent. An agent without
// rules (generic) follows busy/idle at once, with no timer and no
// snapshot.
type agentTracker struct {
	u       *Unit
	now     func() time.Time
	onEvent func(Event)

	adapter atomic.Pointer[agent.Adapter]
	view    atomic.Pointer[AgentStatus]

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every published change
	run     uint64        // the run being tracked; 0 before the first
	shown   bool          // the run has drawn something
	shownAt time.Time     // when it first did (Adapter.KeysAfter)
	raw     bool          // the run's terminal was seen in raw mode
	// restart follows the run's restarts in its terminal.
	restart   restartWatch
	timer     *time.Timer
	cand      *AgentStatus // a state seen but not yet held long enough
	candSince time.Time
	closed    bool
	// hookState is the state the last hook call told, at hookAt.
	hookState api.AgentState
	hookAt    time.Time
	// hookWait is a waiting state a hook told, held for HookWaitGrace
	// until the screen shows its dialog.
	hookWait *AgentStatus
	// read is how the adapter read the run's screen at the last look.
	read ScreenRead
	// session and transcript are the run's agent session as its hooks
	// said (AgentSession).
	session, transcript string
}

// AgentStatus is the agent state of a harness's current run, with what
// answering its dialog needs.
type AgentStatus struct {
	api.AgentView
	RunID uint64
	// Rule is the rule that matched (nil for the floor); Selected the
	// index of the choice the dialog's cursor is on, -1 if unknown.
	Rule     *agent.Rule
	Selected int
	// PromptAt is when the waiting prompt (PromptID) was first seen.
	PromptAt time.Time
	// Hook says the state is the agent's own word, from a hook call,
	// not read off its screen.
	Hook bool
}

func newAgentTracker(u *Unit, cfg UnitConfig, deps Deps) *agentTracker {
	t := &agentTracker{u: u, now: deps.Now, onEvent: deps.OnEvent, changed: make(chan struct{})}
	t.adapter.Store(agent.MustLookup(cfg.Agent))
	return t
}

// AgentStatus returns the agent state of the harness (the zero value for
// an upstream, or before its first run). It is for the current run only
// while Status().RunID is RunID.
func (u *Unit) AgentStatus() AgentStatus {
	if u.agent == nil {
		return AgentStatus{}
	}
	if v := u.agent.view.Load(); v != nil {
		return *v
	}
	return AgentStatus{AgentView: api.AgentView{Agent: u.agent.adapter.Load().Name}}
}

// Adapter is the agent adapter the harness's runs are read with now (the
// generic one for an upstream).
func (u *Unit) Adapter() *agent.Adapter {
	if u.agent == nil {
		return agent.MustLookup(agent.Generic)
	}
	return u.agent.adapter.Load()
}

// AgentSnapshot is the published AgentStatus itself, nil for an upstream
// or before the first; as StatusSnapshot, it is shared and read-only, and
// a new pointer is a new view.
func (u *Unit) AgentSnapshot() *AgentStatus {
	if u.agent == nil {
		return nil
	}
	return u.agent.view.Load()
}

// AgentChanged returns a channel closed at the next change of
// AgentStatus (nil for an upstream): read AgentStatus, then wait on it.
func (u *Unit) AgentChanged() <-chan struct{} {
	if u.agent == nil {
		return nil
	}
	u.agent.mu.Lock()
	defer u.agent.mu.Unlock()
	return u.agent.changed
}

// setAdapter applies a changed `agent` at once; the next screen change is
// read with the new rules.
func (t *agentTracker) setAdapter(name string) {
	if t.adapter.Load().Name != name {
		t.adapter.Store(agent.MustLookup(name))
		t.poke()
	}
}

// begin starts tracking a new run: starting for an agent with rules, the
// floor otherwise, published at once.
func (t *agentTracker) begin(run uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.run, t.shown, t.raw, t.cand = run, false, false, nil
	t.read = ScreenRead{}
	t.restart = restartWatch{}
	t.hookState, t.hookWait, t.session, t.transcript = "", nil, "", ""
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	a := t.adapter.Load()
	st := t.statusLocked(a, agent.Screen{})
	t.commitLocked(st)
}

// output is called by the PTY reader for every piece of output.
func (t *agentTracker) output() {
	t.mu.Lock()
	if !t.shown {
		t.shown, t.shownAt = true, t.now()
	}
	t.mu.Unlock()
	t.poke()
}

// poke schedules an examination of the screen unless one is pending.
func (t *agentTracker) poke() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.run == 0 {
		return
	}
	if len(t.adapter.Load().Rules) == 0 {
		// The floor only: busy/idle changes call check directly.
		return
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(AgentSample, t.check)
	}
}

// activity is told of every busy/idle change of the terminal, under the
// terminal's lock: an agent without rules takes its state from act at
// once; one with rules has its screen examined soon, off that lock.
func (t *agentTracker) activity(act term.Activity) {
	a := t.adapter.Load()
	if len(a.Rules) > 0 {
		t.poke()
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.run == 0 {
		return
	}
	st := t.statusLocked(a, agent.Screen{Busy: act.State == term.Busy, Shown: t.shown})
	if cur := t.view.Load(); cur == nil || !sameAgent(cur, st) {
		t.commitLocked(st)
	}
}

// check examines the screen now and publishes a state that held.
func (t *agentTracker) check() {
	a := t.adapter.Load()
	var s agent.Screen
	act := t.u.term.Activity()
	s.Busy = act.State == term.Busy
	var modeRun uint64 // the run whose terminal mode canonical is
	var canonical, paste bool
	if len(a.Rules) > 0 {
		snap := t.u.term.Snapshot(term.SnapshotOptions{})
		s.Lines, s.Cols = snap.Lines, snap.Cols
		paste = t.u.term.BracketedPaste()
		modeRun, canonical = t.u.lineMode()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timer = nil
	if t.closed || t.run == 0 {
		return
	}
	s.Shown = t.shown
	s.Paste = paste
	if modeRun == t.run {
		t.raw = t.raw || !canonical
		s.LineMode = t.raw && canonical
	}
	now := t.now()
	s.Restarting = t.restart.look(a, s, now)
	if left := a.KeysAfter - now.Sub(t.shownAt); t.shown && left > 0 {
		s.Settling = true
		// Look again when it ends: nothing on screen need change then.
		defer t.lookAgainLocked(left)
	}
	if s.LineMode || s.Restarting {
		// Look again soon whatever happens below: raw mode comes back
		// without output, and a restart's hold ends or times out.
		defer t.lookAgainLocked(LinePoll)
	}
	st := t.statusLocked(a, s)
	t.noteReadLocked(a, s, now)
	cur := t.view.Load()
	if hw := t.hookWait; hw != nil && st.AgentState != api.AgentWaiting {
		if left := HookWaitGrace - now.Sub(t.hookAt); left > 0 {
			// The dialog the hook told of is not drawn yet.
			t.cand = nil
			t.timer = time.AfterFunc(min(left, AgentSample), t.check)
			return
		}
		// It never showed: the hook's word stands, as long as a hook's does.
		t.hookWait, t.cand = nil, nil
		if cur == nil || !sameAgent(cur, hw) {
			t.commitLocked(hw)
		}
		if left := HookHold - now.Sub(t.hookAt); left > 0 {
			t.timer = time.AfterFunc(left, t.check)
		}
		return
	}
	// A dialog on screen (debounced below like any) replaces a held hook
	// state.
	t.hookWait = nil
	if t.hookState != "" && st.AgentState != t.hookState && now.Sub(t.hookAt) < HookHold &&
		(st.AgentState == api.AgentWorking || st.AgentState == api.AgentReady || st.AgentState == api.AgentStarting) {
		// The hook is fresher than this screen: look again once it is not.
		t.cand = nil
		t.timer = time.AfterFunc(HookHold-now.Sub(t.hookAt), t.check)
		return
	}
	switch {
	case cur != nil && sameAgent(cur, st):
		t.cand = nil
		t.refreshLocked(cur, st)
	case len(a.Rules) == 0:
		t.commitLocked(st) // busy/idle is debounced already
	case t.cand != nil && sameAgent(t.cand, st):
		if held := now.Sub(t.candSince); held >= AgentDebounce {
			t.cand = nil
			t.commitLocked(st)
		} else {
			t.timer = time.AfterFunc(AgentDebounce-held, t.check)
		}
	default:
		t.cand, t.candSince = st, now
		t.timer = time.AfterFunc(AgentDebounce, t.check)
	}
}

// lookAgainLocked schedules a look at the screen in d unless one is
// pending: for what changes with no output (the terminal's mode, a hold
// that ends).
func (t *agentTracker) lookAgainLocked(d time.Duration) {
	if t.timer == nil && !t.closed {
		t.timer = time.AfterFunc(d, t.check)
	}
}

// lineMode reports whether the running program's terminal is in line
// (canonical) mode, as the program set it, and which run that is; run is
// 0 when it cannot be told. The master shares its terminal's modes, so no
// path to the terminal side is needed.
func (u *Unit) lineMode() (run uint64, canonical bool) {
	in := u.input.Load()
	if in == nil {
		return 0, false
	}
	rc, err := in.master.SyscallConn()
	if err != nil {
		return 0, false
	}
	_ = rc.Control(func(fd uintptr) {
		if tio, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios); err == nil {
			run, canonical = in.run, tio.Lflag&unix.ICANON != 0
		}
	})
	return run, canonical
}

// hook applies one hook call of run's agent: its session, and its state
// at once (no debounce: a hook is the agent's own word). A waiting hook
// does not replace a waiting state read off the screen, which has the
// prompt and the choices. It reports the state after, and false when run
// is not the run being tracked.
func (t *agentTracker) hook(run uint64, sig agent.HookSignal) (AgentStatus, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || run == 0 || run != t.run {
		return AgentStatus{}, false
	}
	if sig.SessionID != "" {
		t.session = sig.SessionID
	}
	if sig.Transcript != "" {
		t.transcript = sig.Transcript
	}
	cur := t.view.Load()
	if sig.State == "" {
		if cur == nil {
			return AgentStatus{}, true
		}
		return *cur, true
	}
	t.hookState, t.hookAt = sig.State, t.now()
	if !t.shown {
		t.shown, t.shownAt = true, t.hookAt
	}
	if sig.State == api.AgentWaiting && cur != nil && cur.AgentState == api.AgentWaiting {
		return *cur, true
	}
	a := t.adapter.Load()
	st := &AgentStatus{AgentView: api.AgentView{Agent: a.Name, AgentState: sig.State}, RunID: run, Selected: -1, Hook: true}
	t.hookWait = nil
	if sig.State == api.AgentLimited {
		st.AgentMessage = sig.Message
	}
	if sig.State == api.AgentWaiting {
		st.WaitingFor, st.Prompt = sig.WaitingFor, sig.Message
		if len(a.Rules) > 0 {
			// Published when the screen shows the dialog, with its prompt
			// and choices, or after HookWaitGrace.
			t.hookWait, t.cand = st, nil
			if t.timer == nil {
				t.timer = time.AfterFunc(AgentSample, t.check)
			}
			if cur == nil {
				return AgentStatus{}, true
			}
			return *cur, true
		}
	}
	t.cand = nil
	if cur == nil || !sameAgent(cur, st) {
		t.commitLocked(st)
	}
	if t.timer == nil {
		// The screen is looked at again after the hold.
		t.timer = time.AfterFunc(HookHold, t.check)
	}
	return *t.view.Load(), true
}

// AgentHook applies a call of the agent's hooks (`harness hook`) made by
// run: false when run is not the harness's current run.
func (u *Unit) AgentHook(run uint64, sig agent.HookSignal) (AgentStatus, bool) {
	if u.agent == nil {
		return AgentStatus{}, false
	}
	return u.agent.hook(run, sig)
}

// AgentSession returns the agent session of the current run as its hooks
// told it: the run, the agent's session id and the path of its transcript
// file ("" when no hook said).
func (u *Unit) AgentSession() (run uint64, session, transcript string) {
	if u.agent == nil {
		return 0, "", ""
	}
	u.agent.mu.Lock()
	defer u.agent.mu.Unlock()
	return u.agent.run, u.agent.session, u.agent.transcript
}

// ScreenRead is how an agent's adapter read the current run's screen at
// the last look (describe's agent_screen): the rule that matched, or
// since when none has (a version of the program whose screens differ
// from those the adapter knows: its state is then the floor, working or
// ready from activity, never waiting).
type ScreenRead struct {
	// Looked: the screen of this run was read with rules at least once.
	Looked bool
	// Rule is the name of the rule that matched at the last look, ""
	// when none did.
	Rule string
	// Unrecognised is when the looks that matched no rule began (zero
	// while the last look matched one).
	Unrecognised time.Time
}

// noteReadLocked records which rule of a read s (a screen shown and not
// blank: a starting agent is no unknown screen).
func (t *agentTracker) noteReadLocked(a *agent.Adapter, s agent.Screen, now time.Time) {
	if len(a.Rules) == 0 || !s.Shown || blankRows(s.Lines) {
		return
	}
	t.read.Looked = true
	if r, ok := a.Rule(s); ok {
		t.read.Rule, t.read.Unrecognised = r.Name, time.Time{}
		return
	}
	if t.read.Rule != "" || t.read.Unrecognised.IsZero() {
		t.read.Rule, t.read.Unrecognised = "", now
	}
}

// AgentScreenRead returns how the adapter read the current run's screen
// at its last look, and the run it is of (0 before the first run or for
// an upstream).
func (u *Unit) AgentScreenRead() (run uint64, r ScreenRead) {
	if u.agent == nil {
		return 0, ScreenRead{}
	}
	u.agent.mu.Lock()
	defer u.agent.mu.Unlock()
	return u.agent.run, u.agent.read
}

func blankRows(lines []string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return false
		}
	}
	return true
}

// statusLocked classifies s with a.
func (t *agentTracker) statusLocked(a *agent.Adapter, s agent.Screen) *AgentStatus {
	v := a.Classify(s, t.now())
	st := &AgentStatus{AgentView: v, RunID: t.run, Selected: -1}
	if r, ok := a.Rule(s); ok && r.State == v.AgentState {
		st.Rule = r
		st.Selected = r.Selected(s.Lines)
	}
	return st
}

// refreshLocked puts st, which reads as the published cur does
// (sameAgent), in cur's place when another rule read it: a text typed
// into an input box that is still ready, but no longer by the rule that
// reads the empty box. Whoever reads the status (a send's safety Enter,
// an answer's keys) sees the rule that reads the screen now, and those
// waiting on AgentChanged look again. Nothing a subscriber sees changed:
// no event. A hook's word stays until a rule reads the screen.
func (t *agentTracker) refreshLocked(cur, st *AgentStatus) {
	if cur.Rule == st.Rule || cur.Hook && st.Rule == nil {
		return
	}
	st.PromptID, st.PromptAt = cur.PromptID, cur.PromptAt
	t.view.Store(st)
	close(t.changed)
	t.changed = make(chan struct{})
}

// promptSeq numbers the waiting prompts of every harness of the daemon
// (AgentView.PromptID).
var promptSeq atomic.Uint64

// commitLocked publishes st and tells the subscribers, unless the run it
// is about has ended. A waiting state gets its prompt's id: the one
// published before while the same dialog stays, a new one otherwise.
func (t *agentTracker) commitLocked(st *AgentStatus) {
	if st.AgentState == api.AgentWaiting {
		if cur := t.view.Load(); cur != nil && samePrompt(cur, st) {
			st.PromptID, st.PromptAt = cur.PromptID, cur.PromptAt
		} else {
			st.PromptID, st.PromptAt = promptSeq.Add(1), t.now()
		}
	} else {
		st.PromptID = 0
	}
	t.view.Store(st)
	close(t.changed)
	t.changed = make(chan struct{})
	ss := t.u.status.Load()
	if ss == nil || ss.RunID != st.RunID || !ss.HasRun() {
		return
	}
	v := st.AgentView
	t.onEvent(Event{Kind: api.EventAgent, Unit: t.u.name, State: string(ss.State), RunID: st.RunID, Agent: &v, Time: t.now()})
}

// close stops the timer for good.
func (t *agentTracker) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

// samePrompt reports whether b is still the waiting prompt a was: the
// same run, what it waits for, its text and its choices (the cursor and
// anything else may have moved).
func samePrompt(a, b *AgentStatus) bool {
	return a.AgentState == api.AgentWaiting && b.AgentState == api.AgentWaiting && a.RunID == b.RunID &&
		a.WaitingFor == b.WaitingFor && a.Prompt == b.Prompt && slices.Equal(a.Choices, b.Choices)
}

// sameAgent reports whether two states would show the same.
func sameAgent(a, b *AgentStatus) bool {
	x, y := a.AgentView, b.AgentView
	if x.Agent != y.Agent || x.AgentState != y.AgentState || x.WaitingFor != y.WaitingFor ||
		x.Prompt != y.Prompt || x.AgentMessage != y.AgentMessage || !slices.Equal(x.Choices, y.Choices) ||
		a.Selected != b.Selected || a.RunID != b.RunID {
		return false
	}
	if (x.Until == nil) != (y.Until == nil) {
		return false
	}
	// A reset read as "in 2 hours" moves with every look: a minute apart
	// is the same time.
	return x.Until == nil || x.Until.Sub(*y.Until).Abs() < time.Minute
}
