package supervise

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/endpoint"
)

// fakeBroker serves connection runs the way the broker does: it keeps
// each run's api.UpstreamRun, and a run it has not ended by itself ends (Ended
// nil) when the supervisor cancels its context.
type fakeBroker struct {
	mu    sync.Mutex
	conns []*fakeConn
}

type fakeConn struct {
	ctx context.Context
	r   api.UpstreamRun
}

// target is the connection's link: a remote run hands over its URL and
// expanded headers.
func (c *fakeConn) target() endpoint.Target { return c.r.Link.(endpoint.Target) }

func (b *fakeBroker) connect(ctx context.Context, r api.UpstreamRun) {
	b.mu.Lock()
	b.conns = append(b.conns, &fakeConn{ctx: ctx, r: r})
	b.mu.Unlock()
	go func() {
		<-ctx.Done()
		r.Ended(nil)
	}()
}

func (b *fakeBroker) last(t *testing.T) *fakeConn {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.conns) == 0 {
		t.Fatal("no connection was handed over")
	}
	return b.conns[len(b.conns)-1]
}

func (b *fakeBroker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

func remoteCfg(t *testing.T, token string) (UnitConfig, string) {
	envFile := filepath.Join(t.TempDir(), "remote.env")
	if err := os.WriteFile(envFile, []byte("TOKEN="+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return UnitConfig{Name: "mcp.remote", Kind: KindUpstream, URL: "https://mcp.example.com/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}, EnvFile: envFile,
		Env: map[string]string{"UNUSED": "x"}, Restart: RestartAlways, RestartDelay: time.Second}, envFile
}

// TestScenario_RemoteUpstreamSupervisedLikeAProcess follows a remote
// upstream's connection through the unit's own actor and policy, on a
// fake clock: starting until the broker reports it ready; a dropped
// session restarts after restart_delay with the env_file read again (a
// rotated token is picked up); refused connects (a 401) count as failed
// starts, degrade with the process backoff and latch failed; an explicit
// start clears it.
func TestScenario_RemoteUpstreamSupervisedLikeAProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, envFile := remoteCfg(t, "tok-one-1111")
		brk := &fakeBroker{}
		e := newEnv(t, cfg, func(d *Deps) {
			d.OnLink = brk.connect
			d.AwaitReady = true
			d.Rand = func() float64 { return 0.5 } // no jitter
			d.Limits = Limits{CrashThreshold: 3, CrashWindow: time.Minute, MinBackoff: time.Second,
				MaxDelay: time.Minute, Jitter: -1, HealthyAfter: 30 * time.Second, MaxAttempts: 2}
		})
		e.start()
		synctest.Wait()
		c := brk.last(t)
		if st := e.u.Status(); st.State != StateStarting || st.PID != 0 {
			t.Fatalf("before ready: %+v", st)
		}
		if got := c.target().Header.Get("Authorization"); got != "Bearer tok-one-1111" || c.target().URL != cfg.URL {
			t.Fatalf("handed %q to %s", got, c.target().URL)
		}
		c.r.Started(nil) // the run's own report, as the broker makes it
		synctest.Wait()
		if st := e.u.Status(); st.State != StateRunning || st.LastError != "" {
			t.Fatalf("after ready: %+v", st)
		}

		// The session drops: restart_delay, then a new connect that reads
		// the env_file again.
		if err := os.WriteFile(envFile, []byte("TOKEN=tok-two-2222\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		dropped := time.Now()
		c.r.Ended(errors.New("session closed by the server"))
		synctest.Wait()
		st := e.u.Status()
		if st.State != StateRestarting || !strings.Contains(st.LastError, "session closed by the server") ||
			!st.NextRetry.Equal(dropped.Add(time.Second)) {
			t.Fatalf("after the drop: %+v", st)
		}
		if c.ctx.Err() == nil {
			t.Fatal("the ended run's context is still live")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		c = brk.last(t)
		if brk.count() != 2 || c.target().Header.Get("Authorization") != "Bearer tok-two-2222" {
			t.Fatalf("reconnect %d with %q", brk.count(), c.target().Header.Get("Authorization"))
		}
		if st := e.u.Status(); st.State != StateStarting || st.RestartCount != 1 {
			t.Fatalf("reconnecting: %+v", st)
		}

		// Refused: every start fails. The drop and the first refusal are
		// 2 exits in the window: a plain restart; the 3rd exit degrades;
		// 2 degraded attempts (2 s, 4 s), then failed.
		begin := time.Now()
		var states []State
		for {
			c = brk.last(t)
			e.u.Started(c.r.Run, errors.New("HTTP 401 Unauthorized from https://mcp.example.com/mcp: check the headers"))
			synctest.Wait()
			if c.ctx.Err() == nil {
				t.Fatal("a failed start left its connection's context live")
			}
			st := e.u.Status()
			states = append(states, st.State)
			if !strings.Contains(st.LastError, "HTTP 401 Unauthorized") {
				t.Fatalf("last error %q", st.LastError)
			}
			if st.State == StateFailed {
				break
			}
			time.Sleep(time.Until(st.NextRetry))
			synctest.Wait()
		}
		want := []State{StateRestarting, StateDegraded, StateDegraded, StateFailed}
		if strings.Join(stateStrings(states), ",") != strings.Join(stateStrings(want), ",") {
			t.Fatalf("states %v, want %v", states, want)
		}
		if got := time.Since(begin); got != (1+2+4)*time.Second {
			t.Fatalf("gave up after %s of backoff", got)
		}
		if st := e.u.Status(); st.Enabled {
			t.Fatalf("a latched failed unit is still enabled: %+v", st)
		}
		// Latched: nothing retries by itself.
		n := brk.count()
		time.Sleep(time.Hour)
		synctest.Wait()
		if brk.count() != n {
			t.Fatal("a failed unit reconnected by itself")
		}
		e.start()
		synctest.Wait()
		c = brk.last(t)
		e.u.Started(c.r.Run, nil)
		synctest.Wait()
		if st := e.u.Status(); st.State != StateRunning || st.LastError != "" || st.RestartCount != 0 {
			t.Fatalf("after an explicit start: %+v", st)
		}
		e.stop()
		synctest.Wait()
		if st := e.u.Status(); st.State != StateStopped || c.ctx.Err() == nil {
			t.Fatalf("after stop: %+v", st)
		}
		for _, en := range e.logEntries() {
			if strings.Contains(en, "tok-one") || strings.Contains(en, "tok-two") {
				t.Fatalf("the log holds a header value: %q", en)
			}
		}
		if !e.logHas("connecting to https://mcp.example.com/mcp") || !e.logHas("connection lost: session closed by the server") {
			t.Fatalf("lifecycle entries: %q", e.logEntries())
		}
		var r api.Run
		for _, run := range e.runs.List(cfg.Name, 0) {
			if run.ID == st.RunID {
				r = run
			}
		}
		if r.PID != 0 || !r.Ended() {
			t.Fatalf("a connection's run: %+v", r)
		}
	})
}

func stateStrings(ss []State) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func (e *env) logEntries() []string {
	ents, _ := e.log.EntriesAfter(0, 100000)
	var out []string
	for _, en := range ents {
		out = append(out, en.Text)
	}
	return out
}

// A header variable neither the env_file nor env defines fails the
// connect, naming the variable and where it was looked for, never a value;
// the daemon's own environment is not consulted.
func TestRemoteUnsetVariableFailsTheConnect(t *testing.T) {
	cfg, _ := remoteCfg(t, "tok-present-9999")
	cfg.Headers = map[string]string{"Authorization": "Bearer ${TOKEN}", "X-Home": "${HOME}"}
	cfg.Restart = RestartNo
	brk := &fakeBroker{}
	e := newEnv(t, cfg, func(d *Deps) { d.OnLink = brk.connect; d.AwaitReady = true })
	err := e.u.Start(context.Background(), api.CauseManual)
	if err == nil || !strings.Contains(err.Error(), "headers.X-Home: ${HOME} is not set (not in env_file "+cfg.EnvFile+" or env)") {
		t.Fatalf("start: %v", err)
	}
	if strings.Contains(err.Error(), "tok-present") || strings.Contains(err.Error(), os.Getenv("HOME")+"\"") {
		t.Fatalf("error shows a value: %v", err)
	}
	if st := e.u.Status(); st.State != StateFailed || !strings.Contains(st.LastError, "${HOME} is not set") {
		t.Fatalf("status %+v", st)
	}
	if brk.count() != 0 {
		t.Fatal("a connection was handed over without its headers")
	}

	cfg.EnvFile = filepath.Join(t.TempDir(), "missing.env")
	cfg.Headers = map[string]string{"Authorization": "Bearer ${TOKEN}"}
	e.u.Update(cfg)
	if err := e.u.Start(context.Background(), api.CauseManual); err == nil || !strings.Contains(err.Error(), "env_file") {
		t.Fatalf("missing env_file: %v", err)
	}
}

// A connection whose server never lets go is abandoned after the stop
// grace, so a stop always completes.
func TestRemoteStopAbandonsAStuckConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, _ := remoteCfg(t, "tok-stuck-0000")
		cfg.StopGrace = 3 * time.Second
		var got []api.UpstreamRun
		e := newEnv(t, cfg, func(d *Deps) {
			d.OnLink = func(_ context.Context, r api.UpstreamRun) { got = append(got, r) } // never ends it
		})
		e.start()
		synctest.Wait()
		if st := e.u.Status(); st.State != StateRunning || len(got) != 1 {
			t.Fatalf("without AwaitReady a connection runs at once: %+v", st)
		}
		begin := time.Now()
		if err := e.u.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d != cfg.StopGrace {
			t.Fatalf("stop took %s, want the stop grace %s", d, cfg.StopGrace)
		}
		if st := e.u.Status(); st.State != StateStopped {
			t.Fatalf("after stop: %+v", st)
		}
		if !e.logHas("stop grace over: abandoning the connection") {
			t.Fatalf("log: %q", e.logEntries())
		}
	})
}
