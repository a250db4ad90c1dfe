package supervise

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

func TestTokens(t *testing.T) {
	tk := NewTokens()
	a := tk.Mint("a", 1)
	b := tk.Mint("b", 7)
	if len(a) != 64 || a == b {
		t.Fatalf("tokens %q %q", a, b)
	}
	if u, r, ok := tk.Lookup(b); !ok || u != "b" || r != 7 {
		t.Fatalf("lookup b: %s %d %v", u, r, ok)
	}
	if _, _, ok := tk.Lookup(a[:63] + "x"); ok {
		t.Fatal("a forged token was accepted")
	}
	if got, ok := tk.TokenFor("a", 1); !ok || got != a {
		t.Fatal("TokenFor")
	}
	a2 := tk.Mint("a", 1) // a re-mint replaces the old token
	if _, _, ok := tk.Lookup(a); ok {
		t.Fatal("replaced token still valid")
	}
	tk.Revoke("a", 1)
	if _, _, ok := tk.Lookup(a2); ok {
		t.Fatal("revoked token still valid")
	}
	if _, _, ok := tk.Lookup(b); !ok {
		t.Fatal("revoking a dropped b")
	}
}

func TestUpdateSetsConfigChanged(t *testing.T) {
	cfg := helperCfg("upd", "sleep", nil)
	cfg.Restart = RestartAlways
	cfg.StopGrace = 2 * time.Second
	e := newEnv(t, cfg)
	e.start()
	e.waitLog("ready")

	// Policy-only changes apply at once and do not mark the config changed.
	policyOnly := cfg
	policyOnly.Restart = RestartNo
	policyOnly.RestartDelay = time.Hour
	e.u.Update(policyOnly)
	if e.u.Status().ConfigChanged {
		t.Fatal("a policy change marked the config changed")
	}
	spawnChange := policyOnly
	spawnChange.Args = []string{"--new-flag"}
	e.u.Update(spawnChange)
	st := e.u.Status()
	if !st.ConfigChanged || st.State != StateRunning {
		t.Fatalf("status %+v", st)
	}
	// The new policy ("no") already governs the running process.
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.waitState(StateFailed)
	if st := e.u.Status(); st.Enabled || st.ConfigChanged {
		t.Fatalf("after kill %+v", st)
	}
	// The next start uses the new args; the change is no longer pending.
	e.start()
	if st := e.u.Status(); st.ConfigChanged || st.State != StateRunning {
		t.Fatalf("after start %+v", st)
	}
	b, err := os.ReadFile("/proc/" + itoa(e.u.Status().PID) + "/cmdline")
	if err != nil || !strings.Contains(string(b), "--new-flag") {
		t.Fatalf("cmdline %q, %v", b, err)
	}
}

func itoa(n int) string {
	var b []byte
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func TestStaleExitEventIgnored(t *testing.T) {
	cfg := helperCfg("stale", "sleep", nil)
	cfg.StopGrace = 2 * time.Second
	e := newEnv(t, cfg)
	e.start()
	if err := e.u.Restart(context.Background(), api.CauseManual); err != nil {
		t.Fatal(err)
	}
	before := e.u.Status()
	if before.State != StateRunning || before.RunID < 2 {
		t.Fatalf("status %+v", before)
	}
	// Generation 1 was the first run, long gone; 0 was never handed out.
	one := 1
	e.u.post(exitEv{gen: 1, code: &one})
	e.u.post(exitEv{gen: 0, signal: "SIGKILL"})
	e.u.post(timerEv{gen: 1, kind: timerKill})
	e.u.post(reapedEv{gen: 1})
	e.u.Update(cfg) // a round trip: the events above were handled first
	after := e.u.Status()
	if after.State != StateRunning || after.PID != before.PID || after.RunID != before.RunID ||
		after.LastExitCode != nil || after.LastSignal != before.LastSignal {
		t.Fatalf("stale events changed the unit: before %+v after %+v", before, after)
	}
	if r, _ := e.runs.Get(before.RunID); r.Ended() {
		t.Fatalf("current run ended: %+v", r)
	}
}

func upstreamCfg(name string) UnitConfig {
	return UnitConfig{Name: name, Kind: KindUpstream, Cmd: os.Args[0], Env: map[string]string{helperEnv: "echo"},
		Restart: RestartAlways, StopGrace: 10 * time.Second}
}

func TestUpstreamPipesAndStdinCloseStop(t *testing.T) {
	type pipes struct {
		run    uint64
		stdin  io.WriteCloser
		stdout io.ReadCloser
	}
	got := make(chan pipes, 2)
	e := newEnv(t, upstreamCfg("gitea"), func(d *Deps) {
		d.OnLink = func(_ context.Context, r api.UpstreamRun) {
			p := r.Link.(api.Pipes)
			got <- pipes{r.Run, p.Stdin, p.Stdout}
		}
	})
	e.start()
	var p pipes
	select {
	case p = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("OnLink not called")
	}
	defer p.stdout.Close()
	if p.run != e.u.Status().RunID {
		t.Fatalf("OnLink run %d, status %d", p.run, e.u.Status().RunID)
	}
	var wg sync.WaitGroup
	lines := make(chan string, 4)
	wg.Go(func() {
		sc := bufio.NewScanner(p.stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	})
	if _, err := io.WriteString(p.stdin, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if l := <-lines; l != `{"jsonrpc":"2.0","id":1,"method":"ping"}` {
		t.Fatalf("echo %q", l)
	}
	e.waitLog("echo helper on stderr")
	if st := e.u.Status(); st.Cols != 0 || st.Rows != 0 {
		t.Fatalf("upstream has a pty size: %+v", st)
	}

	begin := time.Now()
	e.stop()
	took := time.Since(begin)
	st := e.u.Status()
	if st.LastExitCode == nil || *st.LastExitCode != 0 || st.LastSignal != "" || took >= 5*time.Second {
		t.Fatalf("stop took %s, status %+v (want exit 0 on stdin EOF, no signal)", took, st)
	}
	wg.Wait()
	if _, err := io.WriteString(p.stdin, "late\n"); err == nil {
		t.Fatal("stdin still writable after the run ended")
	}
}

func TestUpstreamWithoutOnLinkLogsStdout(t *testing.T) {
	cfg := upstreamCfg("plain")
	cfg.Env = map[string]string{helperEnv: "print", "HELPER_TEXT": "from stdout"}
	cfg.StopGrace = 400 * time.Millisecond
	e := newEnv(t, cfg)
	e.start()
	e.waitLog("from stdout")
	e.stop()
	// stdin EOF does not end "print"; SIGTERM after half the grace does.
	if st := e.u.Status(); st.LastSignal != "SIGTERM" {
		t.Fatalf("status %+v", st)
	}
}

func TestCloseEndsActorAndRejectsCalls(t *testing.T) {
	e := newEnv(t, helperCfg("closer", "sleep", nil))
	e.start()
	pid := e.u.Status().PID
	if err := e.u.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-e.u.Done()
	if st := e.u.Status(); st.State != StateStopped || st.PID != 0 {
		t.Fatalf("status after close %+v", st)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		// A zombie until the test reaper gets to it is fine; a live one is not.
		if b, _ := os.ReadFile("/proc/" + itoa(pid) + "/stat"); !strings.Contains(string(b), ") Z") {
			t.Fatalf("process %d survived close", pid)
		}
	}
	if err := e.u.Start(context.Background(), api.CauseManual); err == nil {
		t.Fatal("start after close succeeded")
	}
}
