package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ip(n int) *int { return &n }

// TestScenario_DetectorFindsWhatNeedsAPerson feeds the event sequences
// the actor emits and checks what a person hears of them.
func TestScenario_DetectorFindsWhatNeedsAPerson(t *testing.T) {
	ev := func(kind, state string, run uint64, code *int, msg string) api.Event {
		return api.Event{Kind: kind, Unit: "h", State: state, RunID: run, ExitCode: code, Message: msg}
	}
	events := func(occ []Occurrence) []string {
		var out []string
		for _, o := range occ {
			out = append(out, o.Event+": "+o.Reason)
		}
		return out
	}
	run := func(job bool, evs ...api.Event) []string {
		d := NewDetector()
		var out []string
		for _, e := range evs {
			out = append(out, events(d.Next(e, job))...)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		job  bool
		evs  []api.Event
		want []string
	}{
		{"service fails once, restart=no", false, []api.Event{
			ev("state", "running", 1, nil, ""),
			ev("exit", "running", 1, ip(3), "exited with code 3"),
			ev("state", "failed", 1, nil, ""),
		}, []string{"failed: exited with code 3"}},
		{"a stop is no failure", true, []api.Event{
			ev("state", "running", 1, nil, ""),
			ev("state", "stopping", 1, nil, ""),
			ev("exit", "stopping", 1, nil, "killed by SIGTERM"),
			ev("state", "stopped", 1, nil, ""),
		}, nil},
		{"job fails: one job_failed, not also failed", true, []api.Event{
			ev("state", "running", 4, nil, ""),
			ev("exit", "running", 4, ip(1), "exited with code 1"),
			ev("state", "failed", 4, nil, ""),
		}, []string{"job_failed: exited with code 1"}},
		{"job succeeds", true, []api.Event{
			ev("state", "running", 4, nil, ""),
			ev("exit", "running", 4, ip(0), "exited with code 0"),
			ev("state", "stopped", 4, nil, ""),
		}, nil},
		{"crash loop, recovery, then giving up", false, []api.Event{
			ev("state", "running", 1, nil, ""),
			ev("exit", "running", 1, ip(1), "exited with code 1"),
			ev("flapping", "running", 1, nil, "degraded: 3 exits in 1m"),
			ev("state", "degraded", 1, nil, ""),
			ev("state", "degraded", 2, nil, ""),
			ev("state", "running", 2, nil, ""),
			ev("exit", "running", 2, ip(2), "exited with code 2"),
			ev("flapping", "running", 2, nil, "degraded: 3 exits in 1m"),
			ev("state", "degraded", 2, nil, ""),
			ev("state", "failed", 2, nil, ""),
		}, []string{"degraded: degraded: 3 exits in 1m; restarting with backoff", "recovered: running steadily again",
			"degraded: degraded: 3 exits in 1m; restarting with backoff",
			"failed: gave up restarting after degraded: 3 exits in 1m; last run exited with code 2"}},
		{"never spawned", false, []api.Event{
			ev("state", "starting", 0, nil, ""),
			ev("spawn_failed", "starting", 0, nil, "exec: \"nope\": not found"),
			ev("state", "failed", 0, nil, ""),
		}, []string{"failed: could not start: exec: \"nope\": not found"}},
		{"agent waits, on a second prompt too, then hits a limit", false, []api.Event{
			agentEv(api.AgentWorking, "", nil),
			agentEv(api.AgentWaiting, "Run make?", []string{"Yes", "No"}),
			agentEv(api.AgentWaiting, "Run make?", []string{"Yes", "No"}), // a redraw
			agentEv(api.AgentWorking, "", nil),
			agentEv(api.AgentWaiting, "Edit main.go?", []string{"Yes", "No"}),
			agentEv(api.AgentWaiting, "Delete build/?", []string{"Yes", "No"}),
			agentEv(api.AgentLimited, "", nil),
			agentEv(api.AgentLimited, "", nil),
		}, []string{"waiting: needs you: permission", "waiting: needs you: permission", "waiting: needs you: permission",
			"limited: reached a usage limit; it resets at 2026-12-01T23:00:00Z"}},
		{"held, held again the same, lifted, held for another reason", false, []api.Event{
			holdEv(&api.Hold{Reason: api.HoldHours, Note: "Mon-Fri 08:00-19:00", Until: &tomorrow8}),
			holdEv(&api.Hold{Reason: api.HoldHours, Note: "Mon-Fri 08:00-19:00", Until: &tomorrow8}), // a re-evaluation
			holdEv(nil),
			holdEv(&api.Hold{Reason: api.HoldBudget, Note: "max_runs_per_day 3 reached"}),
		}, []string{"held: hold: hours (Mon-Fri 08:00-19:00) until 2026-12-02T08:00:00Z",
			"held: hold: budget (max_runs_per_day 3 reached)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := run(tt.job, tt.evs...)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

var tomorrow8 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

func holdEv(h *api.Hold) api.Event {
	return api.Event{Kind: api.EventHold, Unit: "h", State: "stopped", Hold: h}
}

func agentEv(st api.AgentState, prompt string, choices []string) api.Event {
	a := &api.AgentView{Agent: "claude-code", AgentState: st, Prompt: prompt, Choices: choices}
	switch st {
	case api.AgentWaiting:
		a.WaitingFor = api.WaitingPermission
	case api.AgentLimited:
		until := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
		a.Until = &until
	}
	return api.Event{Kind: api.EventAgent, Unit: "h", State: "running", RunID: 1, Agent: a}
}

func TestRetryPolicy(t *testing.T) {
	for status, want := range map[int]bool{0: true, 500: true, 502: true, 503: true, 408: true, 429: true,
		400: false, 401: false, 403: false, 404: false, 410: false, 422: false} {
		if Retryable(status) != want {
			t.Errorf("Retryable(%d) = %v", status, !want)
		}
	}
	if Backoff(1, 0) != BaseBackoff || Backoff(3, 0) != 4*BaseBackoff || Backoff(20, 0) != MaxBackoff ||
		Backoff(1, 3*time.Second) != 3*time.Second || Backoff(1, time.Hour) != MaxBackoff {
		t.Error("Backoff")
	}
	t0 := time.Unix(0, 0)
	if CooledDown(t0, t0.Add(59*time.Second), time.Minute) || !CooledDown(t0, t0.Add(time.Minute), time.Minute) {
		t.Error("CooledDown")
	}
}

func sampleMessage() *Message {
	return &Message{Notifier: "n", Event: config.NotifyWaiting, Harness: "rev", Project: "app", Host: "box",
		Title: "rev is waiting for you on box", Reason: "needs permission", WaitingFor: "permission",
		Prompt: "Run <rm -rf build> & co?", Choices: []string{"Yes", "No, and tell Claude"}, Suggested: "Yes",
		Actions: actions(config.NotifyWaiting, "rev", []string{"Yes", "No, and tell Claude"}, "Yes", "http://127.0.0.1:7330/h/rev")}
}

func TestRenderFormats(t *testing.T) {
	m := sampleMessage()
	body, ctype, _, err := Render(config.FormatJSON, m)
	var back Message
	if err != nil || ctype != "application/json" || json.Unmarshal(body, &back) != nil || back.Prompt != m.Prompt ||
		back.Actions[0].Command != "harness answer rev Yes" || back.Actions[3].URL != "http://127.0.0.1:7330/h/rev" {
		t.Errorf("json: %s %v", body, err)
	}
	body, _, _, _ = Render(config.FormatSlack, m)
	var slack struct{ Text string }
	json.Unmarshal(body, &slack)
	if !strings.Contains(slack.Text, "Run &lt;rm -rf build&gt; &amp; co?") || !strings.Contains(slack.Text, "harness answer rev Yes") {
		t.Errorf("slack: %s", slack.Text)
	}
	body, _, _, _ = Render(config.FormatDiscord, m)
	var discord struct {
		Content         string
		AllowedMentions struct{ Parse []string } `json:"allowed_mentions"`
	}
	json.Unmarshal(body, &discord)
	if !strings.HasPrefix(discord.Content, "**rev is waiting") || discord.AllowedMentions.Parse == nil {
		t.Errorf("discord: %s", body)
	}
	body, ctype, h, _ := Render(config.FormatNtfy, m)
	if !strings.HasPrefix(ctype, "text/plain") || h.Get("Title") != m.Title || h.Get("Click") != "http://127.0.0.1:7330/h/rev" ||
		h.Get("Priority") != "4" || !strings.Contains(string(body), "2. No, and tell Claude") {
		t.Errorf("ntfy: %v %s", h, body)
	}
	m.Title = "ü\nx"
	_, _, h, _ = Render(config.FormatNtfy, m)
	if strings.ContainsAny(h.Get("Title"), "\nü") {
		t.Errorf("ntfy title not header-safe: %q", h.Get("Title"))
	}
	if a := actions(config.NotifyWaiting, "p/it's", []string{"Yes, don't ask"}, "Yes, don't ask", ""); a[0].Command != `harness answer 'p/it'\''s' 'Yes, don'\''t ask'` {
		t.Errorf("quoting: %s", a[0].Command)
	}
}

// fakeSource answers about harnesses "svc" and the job "nightly".
type fakeSource struct{}

func (fakeSource) Harness(name string) (HarnessInfo, bool) {
	switch name {
	case "svc":
		return HarnessInfo{Project: ""}, true
	case "nightly":
		return HarnessInfo{Scheduled: true}, true
	}
	return HarnessInfo{}, false
}

func (fakeSource) Cause(name string, run uint64) api.Cause { return api.CauseManual }

func (fakeSource) Tail(name string, run uint64, n int) []string {
	return []string{"step 1", "error: token sk-secret-123 rejected"}
}

// receiver is a test HTTP receiver answering with the statuses given, then 200.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []*http.Request
	bodies   []string
	statuses []int
	arrived  chan struct{}
	hang     chan struct{}
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses, arrived: make(chan struct{}, 1000)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, req)
		r.bodies = append(r.bodies, string(b))
		status := 200
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		hang := r.hang
		r.mu.Unlock()
		r.arrived <- struct{}{}
		if hang != nil {
			select {
			case <-hang:
			case <-req.Context().Done():
			}
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *receiver) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-r.arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d requests arrived, want %d", r.count(), n)
		}
	}
}

func newTestNotifier(t *testing.T, tables ...*config.Notify) *Notifier {
	n := New(Options{Source: fakeSource{}, Host: "box", Backoff: func(int, time.Duration) time.Duration { return time.Millisecond },
		Mask: func(s string) string { return strings.ReplaceAll(s, "sk-secret-123", "[masked]") }})
	m := map[string]*config.Notify{}
	for _, tb := range tables {
		m[tb.Name] = tb
	}
	n.Apply(m)
	t.Cleanup(n.Close)
	return n
}

func table(name, url string) *config.Notify {
	return &config.Notify{Name: name, URL: url, Format: config.FormatJSON, On: config.NotifyEvents,
		Cooldown: time.Hour, Timeout: 2 * time.Second}
}

func failOf(unit string, run uint64) []api.Event {
	return []api.Event{
		{Kind: api.EventState, Unit: unit, State: "running", RunID: run},
		{Kind: api.EventExit, Unit: unit, State: "running", RunID: run, ExitCode: ip(2), Message: "exited with code 2"},
		{Kind: api.EventState, Unit: unit, State: "failed", RunID: run},
	}
}

func observe(n *Notifier, evs []api.Event) {
	for _, e := range evs {
		n.Observe(e)
	}
}

func TestScenario_FailureReachesReceiverOnceWithinCooldown(t *testing.T) {
	r := newReceiver(t)
	n := newTestNotifier(t, table("hook", r.URL))
	observe(n, failOf("svc", 1))
	r.wait(t, 1)
	var m Message
	if err := json.Unmarshal([]byte(r.bodies[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m.Event != "failed" || m.Harness != "svc" || m.Host != "box" || m.Reason != "exited with code 2" ||
		len(m.LastLines) != 2 || m.LastLines[1] != "error: token [masked] rejected" || m.Actions[0].Command != "harness logs svc --lines 50" {
		t.Errorf("message: %+v", m)
	}
	// A second failure inside the cooldown is suppressed; an upstream's
	// (not a harness) is never sent.
	observe(n, failOf("svc", 2))
	observe(n, failOf("mcp.gh", 1))
	observe(n, failOf("nightly", 3)) // a different harness and event: sent
	r.wait(t, 1)
	waitStats(t, n, func(s api.NotifyStats) bool { return s.Sent == 2 && s.Suppressed == 1 })
	if r.count() != 2 {
		t.Errorf("requests: %d", r.count())
	}
}

func waitStats(t *testing.T, n *Notifier, ok func(api.NotifyStats) bool) api.NotifyStats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := n.Stats()[0]
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestScenario_ServerErrorsAreRetriedClientErrorsAreNot(t *testing.T) {
	r5 := newReceiver(t, 500, 503)
	r4 := newReceiver(t, 400)
	n := newTestNotifier(t, table("five", r5.URL), table("four", r4.URL))
	observe(n, failOf("svc", 1))
	r5.wait(t, 3)
	r4.wait(t, 1)
	st := n.Stats()
	five, four := st[0], st[1] // by name
	waitStats(t, n, func(api.NotifyStats) bool {
		st = n.Stats()
		five, four = st[0], st[1]
		return five.Sent == 1 && four.Failed == 1
	})
	if five.Retries != 2 || four.Retries != 0 || four.Sent != 0 || !strings.Contains(four.LastError, "400") {
		t.Errorf("five %+v four %+v", five, four)
	}
	time.Sleep(50 * time.Millisecond) // a wrong retry would arrive by now
	if r4.count() != 1 {
		t.Errorf("400 retried: %d requests", r4.count())
	}
}

func TestScenario_HangingReceiverNeverBlocksObserve(t *testing.T) {
	r := newReceiver(t)
	r.hang = make(chan struct{})
	defer close(r.hang)
	tb := table("slow", r.URL)
	tb.Cooldown = 0
	n := newTestNotifier(t, tb)
	start := time.Now()
	for i := range 1000 {
		observe(n, failOf("svc", uint64(i+1)))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("3000 Observe calls took %s", d)
	}
	r.wait(t, 1)
	s := waitStats(t, n, func(s api.NotifyStats) bool { return s.Queued+int(s.Dropped) >= 999-1 })
	if s.Queued > SinkQueue {
		t.Errorf("queue beyond its bound: %+v", s)
	}
}

func TestScenario_HeadersComeFromEnvFileAndStaySecret(t *testing.T) {
	r := newReceiver(t, 401)
	envFile := filepath.Join(t.TempDir(), "n.env")
	os.WriteFile(envFile, []byte("TOKEN=hunter2-very-secret\n"), 0o600)
	tb := table("auth", r.URL)
	tb.Headers = map[string]string{"Authorization": "Bearer ${TOKEN}"}
	tb.EnvFile = envFile
	n := newTestNotifier(t, tb)
	_, err := n.Test(context.Background(), "auth")
	if errcode.Of(err) != errcode.UpstreamUnavailable || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
	if got := r.got[0].Header.Get("Authorization"); got != "Bearer hunter2-very-secret" {
		t.Errorf("Authorization %q", got)
	}
	if s := n.Stats()[0]; strings.Contains(s.LastError, "hunter2") {
		t.Errorf("stats show the secret: %s", s.LastError)
	}
	if _, err := n.Test(context.Background(), "nope"); errcode.Of(err) != errcode.InvalidArgument {
		t.Errorf("unknown table: %v", err)
	}
}

func TestScenario_CommandSinkGetsJSONAndIsKilledAtItsTimeout(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "got.json")
	good := &config.Notify{Name: "cmd", Command: []string{"sh", "-c", `cat > "$OUT"`}, Env: map[string]string{"OUT": out},
		On: config.NotifyEvents, Timeout: 5 * time.Second}
	pidFile := filepath.Join(dir, "pids")
	hang := &config.Notify{Name: "hang", Command: []string{"sh", "-c", `sleep 1000 & echo $! > "$P"; echo $$ >> "$P"; wait`},
		Env: map[string]string{"P": pidFile}, On: config.NotifyEvents, Timeout: 300 * time.Millisecond}
	n := newTestNotifier(t, good, hang)
	if _, err := n.Test(context.Background(), "cmd"); err != nil {
		t.Fatal(err)
	}
	var m Message
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &m); err != nil || !m.Test || m.Notifier != "cmd" || m.Prompt == "" {
		t.Errorf("stdin: %s %v", b, err)
	}
	start := time.Now()
	_, err := n.Test(context.Background(), "hang")
	if err == nil || !strings.Contains(err.Error(), "killed after 300ms") {
		t.Errorf("err = %v", err)
	}
	// Up to MaxAttempts tries of 300 ms each, with 1 ms between them.
	if d := time.Since(start); d > time.Duration(MaxAttempts)*time.Second {
		t.Errorf("took %s", d)
	}
	b, _ = os.ReadFile(pidFile)
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		if pid > 0 && running(pid) {
			t.Errorf("pid %d of the hanging sink still runs", pid)
		}
	}
}

// running reports whether pid is still there and not a zombie after up to
// 2 s (an orphan is reaped by whoever adopted it, shortly).
func running(pid int) bool {
	for range 200 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// A command that exits at once but leaves a child holding its output: the
// child is ended as soon as the command exits (its group is killed before
// the command is reaped), so the delivery does not wait out WaitDelay.
func TestScenario_CommandSinkLeftoversEndWithIt(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	left := &config.Notify{Name: "left", Command: []string{"sh", "-c", `sleep 1000 & echo $! > "$P"`},
		Env: map[string]string{"P": pidFile}, On: config.NotifyEvents, Timeout: 10 * time.Second}
	n := newTestNotifier(t, left)
	// A sink that waited for the leftover's pipe would wait out WaitDelay
	// and fail the delivery (exec.ErrWaitDelay): no clock is needed to see
	// it, and none is used (a loaded machine can take a second to fork).
	if _, err := n.Test(context.Background(), "left"); err != nil {
		t.Fatalf("the delivery failed (did it wait for the leftover's pipe?): %v", err)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("pid file: %q", b)
	}
	if running(pid) {
		t.Errorf("the sink's leftover %d still runs", pid)
	}
}
