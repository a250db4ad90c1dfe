package supervise

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/kaudit"
	"github.com/harness-dev/harness/internal/sandbox"
	"github.com/harness-dev/harness/internal/testenv"
)

// fakeFileDenials stands for kaudit's watcher: it records what is
// watched, and the test plays the kernel's records.
type fakeFileDenials struct {
	mu      sync.Mutex
	pid     int
	since   time.Time
	on      func(kaudit.Denial)
	stopped bool
	status  kaudit.Status
}

func (f *fakeFileDenials) Watch(pid int, since time.Time, on func(kaudit.Denial)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pid, f.since, f.on = pid, since, on
	return func() { f.mu.Lock(); f.stopped = true; f.mu.Unlock() }
}

func (f *fakeFileDenials) Status() kaudit.Status { return f.status }

func (f *fakeFileDenials) watched() (int, func(kaudit.Denial), bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pid, f.on, f.stopped
}

// A sandboxed run is watched by its main pid from its spawn; each file
// refusal counts and keeps its path, and emits sandbox_denied with the
// path once per path per cooldown; the watch ends with the run.
func TestScenario_ASandboxedRunCountsItsFileRefusals(t *testing.T) {
	if abi, _ := sandbox.ABI(); abi < 1 {
		testenv.Missing(t, "Landlock", "the run's files are confined with it")
	}
	fd := &fakeFileDenials{status: kaudit.Status{Counting: true}}
	cfg := helperCfg("boxed", "sleep", nil)
	cfg.Dir = t.TempDir()
	cfg.Sandbox = sandbox.Policy{FS: sandbox.FSWorkdir, Network: sandbox.NetHost, Required: true}
	before := time.Now()
	e := newEnv(t, cfg, func(d *Deps) { d.FileDenials = fd })
	e.start()
	e.waitState(StateRunning)
	st := e.u.Status()
	pid, on, _ := fd.watched()
	if on == nil || pid != st.PID || fd.since.Before(before) || fd.since.After(time.Now()) {
		t.Fatalf("watched pid %d since %v, want the run's pid %d since its spawn", pid, fd.since, st.PID)
	}
	on(kaudit.Denial{Path: "/home/u/.ssh/id_ed25519", Blockers: []string{"fs.read_file"}})
	on(kaudit.Denial{Path: "/home/u/.ssh/id_ed25519", Blockers: []string{"fs.read_file"}})
	on(kaudit.Denial{Path: "/etc", Blockers: []string{"fs.make_reg"}})
	sb := e.u.Status().Sandbox
	if n, last := sb.FilesDenied(), sb.LastFileDenied(); n != 3 || last != "/etc" {
		t.Fatalf("counted %d, last %q; want 3, /etc", n, last)
	}
	if counting, why := sb.FilesCounted(); !counting || why != "" {
		t.Errorf("FilesCounted = %v %q", counting, why)
	}
	var msgs []string
	for _, ev := range e.rec.all() {
		if ev.Kind == EventSandboxDenied {
			msgs = append(msgs, ev.Message)
		}
	}
	if want := []string{"/home/u/.ssh/id_ed25519: fs.read_file", "/etc: fs.make_reg"}; !slices.Equal(msgs, want) {
		t.Fatalf("sandbox_denied events %q, want %q", msgs, want)
	}
	fd.status = kaudit.Status{Why: kaudit.WhyAuditOff}
	if counting, why := sb.FilesCounted(); counting || why != kaudit.WhyAuditOff {
		t.Errorf("FilesCounted with audit off = %v %q", counting, why)
	}
	e.stop()
	e.waitState(StateStopped)
	if _, _, stopped := fd.watched(); !stopped {
		t.Error("the watch outlived the run")
	}
}
