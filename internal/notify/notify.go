// Package notify tells a person when a harness needs them (docs/design/events.md):
// it reads the daemon's events, finds what matters (a Detector), and
// sends a Message through each [notify.NAME] table that wants it, to a
// command (JSON on stdin) or a URL (json, slack, discord or ntfy).
//
// Sending never blocks supervision: Observe only appends to a bounded
// queue (a full one drops and counts), one router goroutine decides and
// builds messages, and each table has a worker with a bounded queue of
// its own, retrying with backoff on 5xx, 408, 429 and no answer, never on
// another 4xx. Counters are in Stats (daemon_info) and, as a Prometheus
// collector, at /metrics.
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/actionlink"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/cgroup"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/proctree"
)

// Queue bounds: events waiting for the router, and messages waiting for
// one table's worker.
const (
	EventQueue = 4096
	SinkQueue  = 256
)

// LastLines is how many of a run's last lines a failure message carries.
const LastLines = 10

// HarnessInfo is what a message says about a harness besides the event.
type HarnessInfo struct {
	Project string
	// Scheduled: it has a schedule, so every run of it is a job's run.
	Scheduled bool
	// Remote: the harness is another machine's ([host.NAME] notify),
	// named "HOST:NAME"; its messages carry no action links (a link
	// answers this machine's agents only).
	Remote bool
	// For a remote harness: its host's name and address, and its own name
	// there; the message is titled and its commands written for it
	// (`harness --host ADDR answer NAME …`).
	HostName, HostAddr, Unit string
}

// Source answers the notifier's questions about harnesses; the daemon
// implements it on control. It is called from the router goroutine, never
// from Observe.
type Source interface {
	// Harness reports whether name is a harness (not an upstream) and
	// what the message says about it.
	Harness(name string) (HarnessInfo, bool)
	// Tail is up to n last output lines of run.
	Tail(name string, run uint64, n int) []string
	// Cause is why run was started ("" when unknown).
	Cause(name string, run uint64) api.Cause
}

// Options configure a Notifier.
type Options struct {
	Source Source
	// Host names this machine in messages.
	Host string
	// Mask hides env-file values and credential shapes in every text a
	// message carries (reason, prompt, choices, last lines); nil shows
	// them as they are.
	Mask func(string) string
	// Dashboard is the dashboard page of a harness, "" when none is served.
	Dashboard func(harness string) string
	// Links keeps the action links of the tables with action_links, and
	// PublicURL is their base ("" when none is served); either nil: no
	// links.
	Links     *actionlink.Store
	PublicURL func() string
	// Reaper registers command sinks' processes (nil: none needed).
	Reaper Reaper
	// Cgroups, in the daemon's cgroup mode, holds each command sink run
	// in a cgroup leaf of its own; nil holds them by Instance's tree
	// markers alone (a random instance when "").
	Cgroups  *cgroup.Tree
	Instance string
	// Now is the clock of cooldowns (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger
	// Backoff overrides the wait between tries (tests); nil is Backoff.
	Backoff func(attempt int, retryAfter time.Duration) time.Duration
	// RemindAfter overrides RemindAfter (tests); 0 is RemindAfter.
	RemindAfter time.Duration
}

// Notifier is the daemon's one notifier.
type Notifier struct {
	opt    Options
	own    *ownership
	events chan api.Event
	quit   chan struct{}
	wg     sync.WaitGroup
	on     atomic.Bool   // some table is configured
	drops  atomic.Uint64 // events dropped before the router

	mu      sync.Mutex
	workers map[string]*worker
	stats   map[string]*counters // by table name, across reloads
	// router-owned
	detect *Detector
	sent   map[cooldownKey]time.Time
	remind reminders
}

// cooldownKey is what a cooldown keeps from being said twice: a table's
// message of a harness's event and, for a waiting agent, its prompt
// (occurrenceKey).
type cooldownKey struct{ table, harness, event, what string }

// counters of one table; atomics so Stats never waits for a worker.
type counters struct {
	sent, failed, dropped, retries, suppressed atomic.Uint64
	lastErr                                    atomic.Pointer[string]
	lastSent                                   atomic.Pointer[time.Time]
}

// New starts a Notifier with no tables; Apply gives it some.
func New(opt Options) *Notifier {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Mask == nil {
		opt.Mask = func(s string) string { return s }
	}
	if opt.Backoff == nil {
		opt.Backoff = Backoff
	}
	if opt.Instance == "" {
		id, err := proctree.NewInstanceID()
		if err != nil {
			// crypto/rand failing leaves every marker of this daemon alike,
			// which still keeps them apart from any unit's.
			opt.Logger.Error("notify: instance id", logkey.Err, err)
		}
		opt.Instance = "notify-" + id
	}
	if opt.RemindAfter == 0 {
		opt.RemindAfter = RemindAfter
	}
	n := &Notifier{opt: opt, own: &ownership{cgroups: opt.Cgroups, instance: opt.Instance}, events: make(chan api.Event, EventQueue), quit: make(chan struct{}),
		workers: map[string]*worker{}, stats: map[string]*counters{}, detect: NewDetector(), sent: map[cooldownKey]time.Time{},
		remind: reminders{}}
	n.wg.Add(1)
	go n.route()
	return n
}

// Observe takes one daemon event. It never blocks: with no table it
// returns at once, and a full queue drops the event (counted).
func (n *Notifier) Observe(ev api.Event) {
	if !n.on.Load() || !Relevant(ev.Kind) {
		return
	}
	select {
	case n.events <- ev:
	default:
		n.drops.Add(1)
	}
}

// Apply puts tables in force (at start and after every reload): a table
// whose config is unchanged keeps its worker and queue, a changed one
// gets a new worker (its queue is dropped), a removed one stops.
func (n *Notifier) Apply(tables map[string]*config.Notify) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, w := range n.workers {
		if t, ok := tables[name]; !ok || !reflect.DeepEqual(t, w.sink.cfg) {
			w.close()
			delete(n.workers, name)
		}
	}
	for name, t := range tables {
		if _, ok := n.workers[name]; ok {
			continue
		}
		c := n.stats[name]
		if c == nil {
			c = &counters{}
			n.stats[name] = c
		}
		w := &worker{n: n, sink: newSink(t, n.opt.Reaper, n.own, n.opt.Logger), c: c, queue: make(chan *Message, SinkQueue), quit: make(chan struct{})}
		n.workers[name] = w
		n.wg.Add(1)
		go w.run()
	}
	n.on.Store(len(n.workers) > 0)
}

func newSink(t *config.Notify, r Reaper, own *ownership, logger *slog.Logger) *sink {
	return &sink{cfg: t, reaper: r, own: own, logger: logger, client: &http.Client{
		// A redirect could carry the headers elsewhere: a receiver that
		// moved is a configuration to fix, not to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Close stops the router and every worker; queued messages are dropped.
func (n *Notifier) Close() {
	n.mu.Lock()
	for name, w := range n.workers {
		w.close()
		delete(n.workers, name)
	}
	n.on.Store(false)
	n.mu.Unlock()
	close(n.quit)
	n.wg.Wait()
}

// route is the router goroutine: events in, messages to the workers,
// and the reminders of prompts still waiting when they are due.
func (n *Notifier) route() {
	defer n.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-n.quit:
			return
		case ev := <-n.events:
			n.handle(ev)
		case <-timer.C:
		}
		out, next := n.remind.due(n.opt.Now())
		for _, o := range out {
			if info, ok := n.opt.Source.Harness(o.Harness); ok {
				n.dispatch(o, info)
			}
		}
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(next.Sub(n.opt.Now()))
		}
	}
}

func (n *Notifier) handle(ev api.Event) {
	info, ok := n.opt.Source.Harness(ev.Unit)
	if !ok {
		n.detect.Forget(ev.Unit)
		n.remind.forget(ev.Unit)
		return
	}
	n.remind.seen(ev)
	for _, o := range n.detect.Next(ev, n.isJobRun(ev, info)) {
		if n.dispatch(o, info) && o.Event == config.NotifyWaiting {
			n.remind.told(o, n.opt.Now(), n.opt.RemindAfter)
		}
	}
}

// isJobRun reports whether ev's run is a job's run (a failure of it is
// job_failed): a scheduled harness's, or one a trigger or a webhook
// started. A harness started by hand that fails has failed.
func (n *Notifier) isJobRun(ev api.Event, info HarnessInfo) bool {
	if info.Scheduled {
		return true
	}
	if ev.Kind != api.EventExit && !(ev.Kind == api.EventState && ev.State == "failed") {
		return false // only exits and failures ask
	}
	switch n.opt.Source.Cause(ev.Unit, ev.RunID) {
	case api.CauseSchedule, api.CauseTrigger, api.CauseWebhook:
		return true
	}
	return false
}

// dispatch sends o through every table that wants it and is not cooling
// down for it (the same harness, event and prompt). It reports whether
// some table wants it, sent now or sent within its cooldown.
func (n *Notifier) dispatch(o Occurrence, info HarnessInfo) bool {
	n.mu.Lock()
	var targets []*worker
	wanted := false
	now := n.opt.Now()
	n.pruneSentLocked(now)
	for _, name := range slices.Sorted(maps.Keys(n.workers)) {
		w := n.workers[name]
		if !w.sink.cfg.Wants(o.Event, o.Harness) {
			continue
		}
		wanted = true
		key := cooldownKey{name, o.Harness, o.Event, occurrenceKey(o)}
		if w.sink.cfg.ActionLinks && o.Event == config.NotifyWaiting && !info.Remote {
			// The links of an earlier message of a prompt that looks the
			// same no longer answer: each prompt is news.
			key.what += fmt.Sprintf("\x00%d", o.PromptID)
		}
		if last, ok := n.sent[key]; ok && !CooledDown(last, now, w.sink.cfg.Cooldown) {
			w.c.suppressed.Add(1)
			continue
		}
		n.sent[key] = now
		targets = append(targets, w)
	}
	n.mu.Unlock()
	if len(targets) == 0 {
		return wanted
	}
	m := n.build(o, info)
	for _, w := range targets {
		mm := *m
		mm.Notifier = w.sink.cfg.Name
		if w.sink.cfg.ActionLinks && !info.Remote {
			mm.Actions = append(n.links(o, m, w.sink.cfg), mm.Actions...)
		}
		w.enqueue(&mm)
	}
	return true
}

// links are the action links of a waiting message for table t: one per
// choice, each answering o's prompt with it, once (internal/actionlink).
// None when no base URL is known or the prompt has no choices or no id.
func (n *Notifier) links(o Occurrence, m *Message, t *config.Notify) []Action {
	if o.Event != config.NotifyWaiting || o.PromptID == 0 || len(o.Choices) == 0 || n.opt.Links == nil || n.opt.PublicURL == nil {
		return nil
	}
	base := strings.TrimRight(n.opt.PublicURL(), "/")
	if base == "" {
		return nil
	}
	p := actionlink.Prompt{Harness: o.Harness, RunID: o.RunID, PromptID: o.PromptID}
	ids, err := n.opt.Links.Mint(p, o.Agent, m.Prompt, m.Choices, t.ActionTTL)
	if err != nil {
		n.opt.Logger.Error("notify: action links", logkey.Notifier, t.Name, logkey.Err, err)
		return nil
	}
	out := make([]Action, len(ids))
	for i, id := range ids {
		out[i] = Action{Label: m.Choices[i], URL: base + "/a/" + id, Method: http.MethodPost}
	}
	return out
}

// maxSent bounds the cooldowns remembered before those that ended are
// dropped: one a prompt, and an agent may ask many.
const maxSent = 1024

// pruneSentLocked drops the cooldowns that ended (or whose table went)
// once there are many.
func (n *Notifier) pruneSentLocked(now time.Time) {
	if len(n.sent) < maxSent {
		return
	}
	for k, last := range n.sent {
		if w, ok := n.workers[k.table]; !ok || CooledDown(last, now, w.sink.cfg.Cooldown) {
			delete(n.sent, k)
		}
	}
}

// CooledDown reports whether a message sent at last may be followed by
// another at now under cooldown.
func CooledDown(last, now time.Time, cooldown time.Duration) bool {
	return now.Sub(last) >= cooldown
}

// build is the message of o, masked.
func (n *Notifier) build(o Occurrence, info HarnessInfo) *Message {
	mask := n.opt.Mask
	host, unit := n.opt.Host, o.Harness
	if info.Remote {
		host, unit = info.HostName, info.Unit
	}
	m := &Message{Event: o.Event, Harness: o.Harness, Project: info.Project, Host: host,
		Time: o.Time, Title: unit + " " + titles[o.Event], Reason: mask(o.Reason), State: o.State,
		RunID: o.RunID, ExitCode: o.ExitCode, Signal: o.Signal, WaitingFor: o.WaitingFor,
		Prompt: mask(o.Prompt), Suggested: mask(o.Suggested), Until: o.Until, Diff: o.Diff}
	if m.Time.IsZero() {
		m.Time = n.opt.Now()
	}
	if host != "" {
		m.Title += " on " + host
	}
	for _, c := range o.Choices {
		m.Choices = append(m.Choices, mask(c))
	}
	if o.Event == config.NotifyFailed || o.Event == config.NotifyJobFailed || o.Event == config.NotifyDegraded {
		for _, l := range n.opt.Source.Tail(o.Harness, o.RunID, LastLines) {
			m.LastLines = append(m.LastLines, mask(l))
		}
	}
	dash := ""
	if n.opt.Dashboard != nil {
		dash = n.opt.Dashboard(o.Harness)
	}
	m.Actions = actions(o.Event, unit, m.Choices, m.Suggested, dash)
	if info.Remote {
		for i := range m.Actions {
			if rest, ok := strings.CutPrefix(m.Actions[i].Command, "harness "); ok {
				m.Actions[i].Command = "harness --host " + shellQuote(info.HostAddr) + " " + rest
			}
		}
	}
	return m
}

// Test sends a sample message through table name now, bypassing the
// queue and the cooldown, and says how it went.
func (n *Notifier) Test(ctx context.Context, name string) (api.NotifyTestResult, error) {
	n.mu.Lock()
	w, ok := n.workers[name]
	n.mu.Unlock()
	if !ok {
		return api.NotifyTestResult{}, errcode.Errorf(errcode.InvalidArgument, "no [notify.%s] table in the configuration", errcode.Clip(name, errcode.QuoteMax))
	}
	dash := ""
	if n.opt.Dashboard != nil {
		dash = n.opt.Dashboard("example")
	}
	m := &Message{Notifier: name, Event: config.NotifyWaiting, Harness: "example", Host: n.opt.Host, Time: n.opt.Now(),
		Title:  "example " + titles[config.NotifyWaiting] + " (a test of notify." + name + ")",
		Reason: "a test message from `harness notify test " + name + "`", State: "running", WaitingFor: "permission",
		Prompt: "Do you want to run `make test`?", Choices: []string{"Yes", "No"}, Suggested: "Yes", Test: true}
	m.Actions = actions(m.Event, m.Harness, m.Choices, m.Suggested, dash)
	if w.sink.cfg.ActionLinks && n.opt.PublicURL != nil {
		// What the buttons look like; their links answer nothing (404).
		if base := strings.TrimRight(n.opt.PublicURL(), "/"); base != "" {
			var links []Action
			for _, c := range m.Choices {
				links = append(links, Action{Label: c, URL: base + "/a/sample-of-notify-test", Method: http.MethodPost})
			}
			m.Actions = append(links, m.Actions...)
		}
	}
	start := time.Now()
	attempts, o := w.deliver(ctx, m)
	res := api.NotifyTestResult{Name: name, Attempts: attempts, Status: o.status, DurationMS: time.Since(start).Milliseconds()}
	if o.err != nil {
		return res, errcode.Errorf(errcode.UpstreamUnavailable, "notify.%s: %v", name, o.err)
	}
	return res, nil
}

// Stats are every table's counters, by name; Dropped includes the events
// the router could not take, shared by all (one total line per table
// would double count them, so they go to the first).
func (n *Notifier) Stats() []api.NotifyStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := []api.NotifyStats{}
	for _, name := range slices.Sorted(maps.Keys(n.workers)) {
		w := n.workers[name]
		c := w.c
		s := api.NotifyStats{Name: name, Sink: w.sink.kind(), Sent: c.sent.Load(), Failed: c.failed.Load(),
			Dropped: c.dropped.Load(), Retries: c.retries.Load(), Suppressed: c.suppressed.Load(), Queued: len(w.queue)}
		if len(out) == 0 {
			s.Dropped += n.drops.Load()
		}
		if e := c.lastErr.Load(); e != nil {
			s.LastError = *e
		}
		s.LastSent = c.lastSent.Load()
		out = append(out, s)
	}
	return out
}

// worker delivers one table's messages, in order.
type worker struct {
	n     *Notifier
	sink  *sink
	c     *counters
	queue chan *Message
	quit  chan struct{}
	once  sync.Once
}

func (w *worker) close() { w.once.Do(func() { close(w.quit) }) }

func (w *worker) enqueue(m *Message) {
	select {
	case w.queue <- m:
	default:
		w.c.dropped.Add(1)
	}
}

func (w *worker) run() {
	defer w.n.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-w.quit:
			return
		case m := <-w.queue:
			w.deliver(ctx, m)
		}
	}
}

// deliver tries m until it is delivered, refused for good, out of tries,
// or ctx ends, and counts the result.
func (w *worker) deliver(ctx context.Context, m *Message) (attempts int, o outcome) {
	for attempts = 1; ; attempts++ {
		o = w.sink.try(ctx, m)
		if o.err == nil {
			now := time.Now()
			w.c.sent.Add(1)
			w.c.lastSent.Store(&now)
			return attempts, o
		}
		if !o.retry || attempts == MaxAttempts || ctx.Err() != nil {
			break
		}
		w.c.retries.Add(1)
		t := time.NewTimer(w.n.opt.Backoff(attempts, o.retryAfter))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		if ctx.Err() != nil {
			break
		}
	}
	w.c.failed.Add(1)
	msg := o.err.Error()
	w.c.lastErr.Store(&msg)
	w.n.opt.Logger.Warn("notify: not delivered", logkey.Notifier, w.sink.cfg.Name, logkey.Attempts, attempts, logkey.Err, msg)
	return attempts, o
}
