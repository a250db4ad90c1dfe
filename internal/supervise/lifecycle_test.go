package supervise

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/proctree"
)

func TestRestartNoSpawnFailureFails(t *testing.T) {
	cfg := UnitConfig{Name: "ghost", Kind: KindHarness, Cmd: "/nonexistent/harness-bin", Restart: RestartNo}
	e := newEnv(t, cfg)
	err := e.u.Start(context.Background(), api.CauseManual)
	if err == nil || !strings.Contains(err.Error(), "supervise: unit ghost: spawn:") ||
		!strings.Contains(err.Error(), "/nonexistent/harness-bin") {
		t.Fatalf("start error = %v", err)
	}
	st := e.u.Status()
	if st.State != StateFailed || st.Enabled || !strings.Contains(st.LastError, "/nonexistent/harness-bin") {
		t.Fatalf("status %+v", st)
	}
	if !e.logHas("spawn failed:") {
		t.Fatal("no spawn failed entry in the log")
	}
	var sawSpawnFailed bool
	for _, ev := range e.rec.all() {
		sawSpawnFailed = sawSpawnFailed || ev.Kind == EventSpawnFailed
	}
	if !sawSpawnFailed {
		t.Fatal("no spawn_failed event")
	}
}

func TestMissingWorkdirFailsClearly(t *testing.T) {
	cfg := helperCfg("nodir", "sleep", nil)
	cfg.Dir = filepath.Join(t.TempDir(), "missing")
	e := newEnv(t, cfg)
	err := e.u.Start(context.Background(), api.CauseManual)
	if err == nil || !strings.Contains(err.Error(), "workdir") || !strings.Contains(err.Error(), cfg.Dir) {
		t.Fatalf("start error = %v", err)
	}
	if e.u.Status().State != StateFailed {
		t.Fatalf("status %+v", e.u.Status())
	}
}

func TestOnFailureCleanExitStops(t *testing.T) {
	cfg := helperCfg("job", "exit", map[string]string{"HELPER_CODE": "0"})
	cfg.Restart = RestartOnFailure
	e := newEnv(t, cfg)
	e.start()
	e.waitFor("clean exit handled", func() bool {
		st := e.u.Status()
		return st.State == StateStopped && st.LastExitCode != nil
	})
	st := e.u.Status()
	if st.Enabled || *st.LastExitCode != 0 || st.PID != 0 {
		t.Fatalf("status %+v", st)
	}
	r, ok := e.runs.Get(st.RunID)
	if !ok || !r.Ended() || r.ExitCode == nil || *r.ExitCode != 0 || r.Cause != api.CauseManual || r.PID == 0 {
		t.Fatalf("run %+v", r)
	}
	if !e.logHas("exited with code 0") || !e.logHas("stopped") {
		t.Fatal("lifecycle entries missing")
	}
}

func TestNonZeroExitWithoutRestartFails(t *testing.T) {
	cfg := helperCfg("job", "exit", map[string]string{"HELPER_CODE": "7"})
	e := newEnv(t, cfg)
	e.start()
	e.waitState(StateFailed)
	st := e.u.Status()
	if st.Enabled || st.LastExitCode == nil || *st.LastExitCode != 7 {
		t.Fatalf("status %+v", st)
	}
	// Not latched: a plain start runs it again.
	e.start()
	e.waitFor("second run ended", func() bool { return e.u.Status().RunID > st.RunID && e.u.Status().State == StateFailed })
}

func crashLimits(d *Deps) {
	d.Limits.CrashThreshold = 3
	d.Limits.CrashWindow = time.Minute
	d.Limits.MinBackoff = 5 * time.Millisecond
	d.Limits.MaxDelay = 40 * time.Millisecond
	d.Limits.MaxAttempts = 2
	d.Limits.HealthyAfter = time.Minute
}

func TestCrashLoopDegradesThenFailsAndRestartClears(t *testing.T) {
	cfg := helperCfg("crashy", "exit", map[string]string{"HELPER_CODE": "1"})
	cfg.Restart = RestartAlways
	cfg.RestartDelay = time.Millisecond
	e := newEnv(t, cfg, crashLimits)
	e.start()
	e.waitFor("failed", func() bool { return e.u.Status().State == StateFailed })
	st := e.u.Status()
	if st.Enabled || st.RestartCount != 4 {
		t.Fatalf("status %+v (want 2 plain + 2 degraded restarts)", st)
	}
	var states []State
	var flapping int
	for _, ev := range e.rec.all() {
		if ev.Kind == EventState {
			states = append(states, State(ev.State))
		}
		if ev.Kind == EventFlapping {
			flapping++
		}
	}
	joined := strings.Join(func() []string {
		var s []string
		for _, x := range states {
			s = append(s, string(x))
		}
		return s
	}(), ",")
	if !strings.Contains(joined, "restarting") || !strings.Contains(joined, "degraded") ||
		!strings.HasSuffix(joined, "failed") || flapping != 1 {
		t.Fatalf("states %s, flapping %d", joined, flapping)
	}
	if !e.logHas("degraded: 3 exits in 60s") || !e.logHas("failed: giving up after 2 attempts") {
		t.Fatal("degraded/failed entries missing")
	}
	if got := len(e.runs.List("crashy", 0)); got != 5 {
		t.Fatalf("%d runs, want 5", got)
	}
	for _, r := range e.runs.List("crashy", 0) {
		if r.ID != e.runs.List("crashy", 0)[len(e.runs.List("crashy", 0))-1].ID && r.Cause != api.CauseRestart &&
			r.Cause != api.CauseManual {
			t.Fatalf("run cause %q", r.Cause)
		}
	}

	// Latched: a manual restart clears failed and the crash history.
	next := helperCfg("crashy", "sleep", nil)
	next.Restart = RestartAlways
	e.u.Update(next)
	if err := e.u.Restart(context.Background(), api.CauseManual); err != nil {
		t.Fatal(err)
	}
	st = e.u.Status()
	if st.State != StateRunning || !st.Enabled || st.RestartCount != 0 || st.LastError != "" {
		t.Fatalf("after restart %+v", st)
	}
}

func TestHealthyRunResetsBackoff(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "count")
	cfg := helperCfg("flaky", "flaky", map[string]string{"HELPER_COUNTER": counter, "HELPER_FAILS": "3"})
	cfg.Restart = RestartAlways
	cfg.RestartDelay = 20 * time.Millisecond
	e := newEnv(t, cfg, crashLimits, func(d *Deps) {
		d.Limits.MaxAttempts = 10
		// Longer than a helper needs to start and fail under -race.
		d.Limits.HealthyAfter = 2 * time.Second
		d.Limits.MaxDelay = time.Second
		d.Limits.MinBackoff = 200 * time.Millisecond
	})
	e.start()
	// Three fast exits degrade; the fourth run stays up.
	e.waitLog("degraded: 3 exits")
	e.waitFor("running after the healthy period", func() bool {
		st := e.u.Status()
		return st.State == StateRunning && st.PID != 0 && e.logHas("ready")
	})
	pid := e.u.Status().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The reset history restarts with the plain delay, not the backoff.
	afterKill := func() []Event {
		evs := e.rec.all()
		for i, ev := range evs {
			if ev.Kind == EventExit && ev.Signal == "SIGKILL" {
				return evs[i:]
			}
		}
		return nil
	}
	e.waitFor("restarting after the kill", func() bool {
		for _, ev := range afterKill() {
			if ev.Kind == EventState && (State(ev.State) == StateRestarting || State(ev.State) == StateDegraded) {
				return true
			}
		}
		return false
	})
	for _, ev := range afterKill() {
		if ev.Kind == EventState && State(ev.State) == StateDegraded {
			t.Fatalf("degraded again after a healthy run: %+v", ev)
		}
	}
	ents, _ := e.log.EntriesAfter(0, 100000)
	if last := lastEvent(ents, "restarting in "); last != "restarting in 20ms" {
		t.Fatalf("restart after the healthy run: %q", last)
	}
	e.waitFor("running again", func() bool { st := e.u.Status(); return st.State == StateRunning && st.PID != pid })
}

func TestStopKillsChildIgnoringSIGTERMAfterGrace(t *testing.T) {
	cfg := helperCfg("stubborn", "ignore-term", nil)
	cfg.StopGrace = 300 * time.Millisecond
	e := newEnv(t, cfg)
	e.start()
	e.waitLog("ready")
	begin := time.Now()
	e.stop()
	took := time.Since(begin)
	st := e.u.Status()
	if took < cfg.StopGrace || st.State != StateStopped || st.LastSignal != "SIGKILL" || st.Enabled {
		t.Fatalf("stop took %s, status %+v", took, st)
	}
	r, _ := e.runs.Get(st.RunID)
	if r.Signal != "SIGKILL" || r.ExitCode != nil {
		t.Fatalf("run %+v", r)
	}
	if !e.logHas("killed by SIGKILL") {
		t.Fatal("no kill entry")
	}
	// Stop is idempotent.
	e.stop()
}

func TestStopFiftyUnitsConcurrently(t *testing.T) {
	const n = 50
	grace := time.Second
	envs := make([]*env, n)
	for i := range envs {
		cfg := helperCfg("u"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26)), "ignore-term", nil)
		cfg.StopGrace = grace
		envs[i] = newEnv(t, cfg)
		envs[i].start()
	}
	for _, e := range envs {
		e.waitLog("ready")
	}
	begin := time.Now()
	var wg sync.WaitGroup
	for _, e := range envs {
		wg.Go(func() {
			if err := e.u.Stop(context.Background()); err != nil {
				t.Errorf("stop: %v", err)
			}
		})
	}
	wg.Wait()
	took := time.Since(begin)
	if took < grace || took >= 3*grace {
		t.Fatalf("stopping %d units took %s, want about one grace (%s)", n, took, grace)
	}
	for _, e := range envs {
		if st := e.u.Status(); st.State != StateStopped || st.LastSignal != "SIGKILL" {
			t.Fatalf("status %+v", st)
		}
	}
}

func TestStopEndsSetsidGrandchild(t *testing.T) {
	out := filepath.Join(t.TempDir(), "grandchild.pid")
	cfg := helperCfg("forker", "double-fork", map[string]string{"HELPER_OUT": out})
	cfg.StopGrace = 2 * time.Second
	e := newEnv(t, cfg)
	e.start()
	e.waitLog("ready")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var gpid int
	for _, c := range strings.TrimSpace(string(b)) {
		gpid = gpid*10 + int(c-'0')
	}
	marker := proctree.NewMarker(testInstance, "forker", e.u.Status().RunID)
	found := proctree.Find(marker)
	if len(found) != 2 || !contains(found, gpid) || !contains(found, e.u.Status().PID) {
		t.Fatalf("marker %s finds %v, want main %d and grandchild %d", marker, found, e.u.Status().PID, gpid)
	}
	e.stop()
	if left := proctree.Find(marker); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	if proctree.Alive(gpid) {
		t.Fatalf("grandchild %d still alive", gpid)
	}
}

// lastEvent returns the newest entry text starting with prefix.
func lastEvent(ents []logs.Entry, prefix string) string {
	for i := len(ents) - 1; i >= 0; i-- {
		if strings.HasPrefix(ents[i].Text, prefix) {
			return ents[i].Text
		}
	}
	return ""
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestOutputReachesLogAndTokenDiesWithRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "token")
	cfg := helperCfg("talker", "env", map[string]string{"HELPER_VAR": "HARNESS_MCP_TOKEN", "HELPER_OUT": out})
	cfg.StopGrace = time.Second
	e := newEnv(t, cfg)
	e.start()
	e.waitLog("ready")
	tok, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	unit, run, ok := e.tokens.Lookup(string(tok))
	if !ok || unit != "talker" || run != e.u.Status().RunID || len(tok) != 64 {
		t.Fatalf("token %q -> %s %d %v", tok, unit, run, ok)
	}
	if !e.logHas("spawned pid ") {
		t.Fatal("no spawned entry")
	}
	raw, _, _ := e.log.Raw(0, 1<<20)
	if !strings.Contains(string(raw), "ready") {
		t.Fatalf("raw output %q", raw)
	}
	e.stop()
	if _, _, ok := e.tokens.Lookup(string(tok)); ok {
		t.Fatal("token survived its run")
	}
}

func TestPTYSizeAndTerm(t *testing.T) {
	out := filepath.Join(t.TempDir(), "term")
	cfg := helperCfg("tty", "env", map[string]string{"HELPER_VAR": "TERM", "HELPER_OUT": out})
	cfg.Cols, cfg.Rows = 100, 30
	e := newEnv(t, cfg, func(d *Deps) { d.BaseEnv = []string{"PATH=/usr/bin:/bin"} })
	e.start()
	e.waitLog("ready")
	if b, _ := os.ReadFile(out); string(b) != "xterm-256color" {
		t.Fatalf("TERM = %q", b)
	}
	if st := e.u.Status(); st.Cols != 100 || st.Rows != 30 {
		t.Fatalf("size %dx%d", st.Cols, st.Rows)
	}
}

// Every scheduled retry is announced: a degraded unit that exits again
// stays degraded, yet the daemon must learn when it is next tried (the
// broker answers upstream_unavailable with that time). Each retry is
// followed by a state event at which Status shows no process and the
// retry's time.
func TestEveryRetryIsAnnouncedWhileDegraded(t *testing.T) {
	cfg := helperCfg("crashy", "exit", map[string]string{"HELPER_CODE": "1"})
	cfg.Restart = RestartAlways
	cfg.RestartDelay = time.Millisecond
	var unit atomic.Pointer[Unit]
	var announced atomic.Int32
	e := newEnv(t, cfg, crashLimits, func(d *Deps) {
		d.Limits.MaxAttempts = 3
		inner := d.OnEvent
		d.OnEvent = func(ev Event) {
			if u := unit.Load(); u != nil && ev.Kind == EventState {
				if st := u.Status(); st.PID == 0 && !st.NextRetry.IsZero() {
					announced.Add(1)
				}
			}
			inner(ev)
		}
	})
	unit.Store(e.u)
	e.start()
	e.waitFor("failed", func() bool { return e.u.Status().State == StateFailed })
	if st := e.u.Status(); int(announced.Load()) != st.RestartCount {
		t.Fatalf("%d retries announced for %d restarts (2 plain, 3 degraded)", announced.Load(), st.RestartCount)
	}
}
