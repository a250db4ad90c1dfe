package control

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/supervise"
)

// TestOpTableAnswersExactlyTheWireOps holds the op table to api.Ops: an op
// named on the wire without a handler, or a handler the wire cannot name,
// fails here (the facade and CLI tests hold themselves to api.Ops).
func TestOpTableAnswersExactlyTheWireOps(t *testing.T) {
	table := slices.Sorted(maps.Keys(opTable))
	wire := slices.Sorted(slices.Values(api.Ops()))
	if !slices.Equal(table, wire) {
		t.Fatalf("op table %v\napi.Ops    %v", table, wire)
	}
	// The method's types are the spec's: the facade derives its schema
	// from the spec's Args, so they must be what control decodes.
	for _, sp := range api.Specs() {
		fn := opTable[sp.Op]
		if fn.args != sp.Args || fn.result != sp.Result {
			t.Errorf("op %q: method takes %v and answers %v; spec says %v and %v", sp.Op, fn.args, fn.result, sp.Args, sp.Result)
		}
	}
}

func TestCall_UnknownOpAndStrictArguments(t *testing.T) {
	f := newFixture(t, "")
	if err := f.call("frobnicate", struct{}{}, nil); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Errorf("unknown op: %v", err)
	}
	if err := f.call(api.OpDescribe, map[string]any{"name": "x", "nmae": "y"}, nil); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Errorf("misspelt argument: %v", err)
	}
	if err := f.call(api.OpJobs, map[string]any{"all": true}, nil); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Errorf("argument to an op that takes none: %v", err)
	}
	if err := f.call(api.OpDescribe, api.NameArg{Name: "ghost"}, nil); !errors.Is(err, errcode.ErrUnknownHarness) {
		t.Errorf("unknown harness: %v", err)
	}
}

func TestReload_AddsRemovesAndChangesUnits(t *testing.T) {
	f := newFixture(t, sleeper("keep", "enabled = true")+sleeper("edit", "enabled = true")+sleeper("drop", "enabled = true"))
	f.waitStates(map[string]string{"keep": "running", "edit": "running", "drop": "running"})

	f.write(sleeper("keep", "enabled = true") +
		"[harness.edit]\ncmd = \"sh\"\nargs = [\"-c\", \"exec sleep 200000\"]\nenabled = true\n" +
		sleeper("new", "enabled = true") + sleeper("idle", ""))
	var res api.ReloadResult
	f.mustCall(api.OpReload, struct{}{}, &res)
	if !slices.Equal(res.Added, []string{"idle", "new"}) || !slices.Equal(res.Removed, []string{"drop"}) || !slices.Equal(res.Changed, []string{"edit"}) {
		t.Fatalf("reload = %+v", res)
	}
	// Added units start by their intent, removed ones stop and go, a
	// changed one keeps running on its old config until its next start.
	f.waitStates(map[string]string{"keep": "running", "edit": "running", "new": "running", "idle": "stopped", "drop": ""})
	var d api.Description
	f.mustCall(api.OpDescribe, api.NameArg{Name: "edit"}, &d)
	if !d.ConfigChanged || !slices.Equal(d.Config.Args, []string{"-c", "exec sleep 200000"}) {
		t.Errorf("edit after reload: config_changed=%v args=%v", d.ConfigChanged, d.Config.Args)
	}
	f.mustCall(api.OpRestart, api.NamesArgs{Name: "edit"}, nil)
	f.mustCall(api.OpDescribe, api.NameArg{Name: "edit"}, &d)
	if d.ConfigChanged || d.State != "running" {
		t.Errorf("edit after restart: config_changed=%v state=%s", d.ConfigChanged, d.State)
	}
	f.mustCall(api.OpDescribe, api.NameArg{Name: "keep"}, &d)
	if d.ConfigChanged {
		t.Error("an unchanged unit is flagged config_changed")
	}
}

func TestReload_BadFileKeepsTheLastGoodConfig(t *testing.T) {
	f := newFixture(t, sleeper("a", "enabled = true"))
	f.waitStates(map[string]string{"a": "running"})
	f.write(sleeper("a", "enabled = true") + "[harness.b]\nargs = [\"x\"]\n")
	err := f.call(api.OpReload, struct{}{}, nil)
	if !errors.Is(err, errcode.ErrConfigInvalid) || !strings.Contains(err.Error(), "harness.toml:") || !strings.Contains(err.Error(), "harness.b: cmd is required") {
		t.Fatalf("reload of a bad file: %v", err)
	}
	if got := f.states(); len(got) != 1 || got["a"] != "running" {
		t.Errorf("fleet after a refused reload: %v", got)
	}
}

func TestUseProfile_StartsMembersStopsOthersAndPersists(t *testing.T) {
	toml := sleeper("a", "") + sleeper("b", "") + sleeper("c", "enabled = true") +
		"[harness.job]\ncmd = \"true\"\nschedule = \"@every 1h\"\n" +
		"[profile.work]\nharnesses = [\"a\", \"b\"]\n[profile.play]\nharnesses = [\"c\"]\n"
	f := newFixture(t, toml)
	f.waitStates(map[string]string{"a": "stopped", "b": "stopped", "c": "running"})

	var res api.ActionResult
	f.mustCall(api.OpUseProfile, api.NameArg{Name: "work"}, &res)
	f.waitStates(map[string]string{"a": "running", "b": "running", "c": "stopped", "job": "stopped"})
	var profiles []api.ProfileInfo
	f.mustCall(api.OpProfiles, struct{}{}, &profiles)
	for _, p := range profiles {
		if p.Active != (p.Name == "work") {
			t.Errorf("profile %s active=%v", p.Name, p.Active)
		}
	}
	if err := f.call(api.OpUseProfile, api.NameArg{Name: "nope"}, nil); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Errorf("unknown profile: %v", err)
	}

	// The choice and the intent it implies survive a daemon restart.
	f.close()
	if st := f.saved(); st.Profile != "work" || !st.Enabled["a"] || st.Enabled["c"] {
		t.Errorf("saved state = %+v", st)
	}
	f.open()
	f.waitStates(map[string]string{"a": "running", "b": "running", "c": "stopped"})
}

func TestIntent_StopAndStartSurviveARestart(t *testing.T) {
	f := newFixture(t, sleeper("on", "enabled = true")+sleeper("off", ""))
	f.waitStates(map[string]string{"on": "running", "off": "stopped"})
	f.mustCall(api.OpStop, api.NamesArgs{Name: "on"}, nil)
	f.mustCall(api.OpStart, api.NamesArgs{Name: "off"}, nil)
	f.waitStates(map[string]string{"on": "stopped", "off": "running"})

	f.close() // a daemon shutdown stops units without changing intent
	if st := f.saved(); st.Enabled["on"] || !st.Enabled["off"] {
		t.Fatalf("saved state = %+v", st)
	}
	f.open()
	f.waitStates(map[string]string{"on": "stopped", "off": "running"})
}

// writeProject writes a project file named name declaring harnesses (and
// upstream keys, as `sh` processes) and returns its path.
func writeProject(t *testing.T, name string, harnesses, upstreams []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	toml := "[project]\nname = \"" + name + "\"\n"
	for _, h := range harnesses {
		toml += sleeper(h, "")
	}
	for _, k := range upstreams {
		toml += "[mcp." + k + "]\ncmd = \"cat\"\n" // exits when its stdin closes
	}
	path := filepath.Join(dir, "harness.toml")
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProject_UpDownAndCollisions(t *testing.T) {
	global := sleeper("solo", "") + "[mcp.shared]\ncmd = \"cat\"\n"
	f := newFixture(t, global)
	path := writeProject(t, "web", []string{"agent", "helper"}, []string{"local"})

	var up api.ProjectResult
	f.mustCall(api.OpProjectUp, api.ProjectArgs{Path: path}, &up)
	if up.Project != "web" || !slices.Equal(up.Started, []string{"web/agent", "web/helper", "web/mcp.local"}) {
		t.Fatalf("up = %+v", up)
	}
	f.waitStates(map[string]string{"web/agent": "running", "web/helper": "running", "solo": "stopped"})
	var mine []api.UnitInfo
	f.mustCall(api.OpList, api.ListArgs{ProjectPath: path}, &mine)
	if len(mine) != 2 || mine[0].Project != "web" {
		t.Errorf("list by project file = %+v", mine)
	}

	// Re-running up reconciles: nothing changed, nothing restarted.
	f.mustCall(api.OpProjectUp, api.ProjectArgs{Path: path}, &up)
	if len(up.Added)+len(up.Removed)+len(up.Changed)+len(up.Started) != 0 {
		t.Errorf("second up = %+v", up)
	}

	for _, tc := range []struct {
		name string
		path string
		code error
	}{
		{"same name, other file", writeProject(t, "web", []string{"x"}, nil), errcode.ErrInvalidArgument},
		{"named like a global harness", writeProject(t, "solo", []string{"x"}, nil), errcode.ErrInvalidArgument},
		{"overrides a global upstream", writeProject(t, "other", []string{"x"}, []string{"shared"}), errcode.ErrInvalidArgument},
		{"the global config", f.cfgPath, errcode.ErrInvalidArgument},
	} {
		if err := f.call(api.OpProjectUp, api.ProjectArgs{Path: tc.path}, nil); !errors.Is(err, tc.code) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// The global file may not take a name or key a project that is up holds.
	f.write(sleeper("solo", "") + sleeper("web", ""))
	if err := f.call(api.OpReload, struct{}{}, nil); !errors.Is(err, errcode.ErrConfigInvalid) {
		t.Errorf("global harness named like a project: %v", err)
	}
	f.write(sleeper("solo", "") + "[mcp.local]\ncmd = \"true\"\n")
	if err := f.call(api.OpReload, struct{}{}, nil); !errors.Is(err, errcode.ErrConfigInvalid) {
		t.Errorf("global upstream keyed like a project's: %v", err)
	}

	// Projects stay up across a daemon restart, until down.
	f.write(global)
	f.close()
	if st := f.saved(); st.Projects["web"] != path {
		t.Fatalf("saved projects = %v", st.Projects)
	}
	f.open()
	f.waitStates(map[string]string{"web/agent": "running", "web/helper": "running"})

	var down api.ProjectResult
	f.mustCall(api.OpProjectDown, api.ProjectArgs{Name: "web"}, &down)
	if !slices.Equal(down.Removed, []string{"web/agent", "web/helper", "web/mcp.local"}) {
		t.Errorf("down = %+v", down)
	}
	f.waitStates(map[string]string{"web/agent": "", "web/helper": ""})
	if err := f.call(api.OpProjectDown, api.ProjectArgs{Name: "web"}, nil); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Errorf("second down: %v", err)
	}
	f.close() // the state file is written behind; Close writes it last
	if st := f.saved(); len(st.Projects) != 0 {
		t.Errorf("projects after down = %v", st.Projects)
	}
}

// TestTrigger_TimeoutIsBounded: a timeout_s too large for time.Duration
// used to overflow and report timed_out at once while the job ran on.
func TestTrigger_TimeoutIsBounded(t *testing.T) {
	f := newFixture(t, "[harness.job]\ncmd = \"sh\"\nargs = [\"-c\", \"exit 0\"]\nschedule = \"@every 1h\"\n")
	for _, timeout := range []float64{1e10, MaxTriggerTimeout.Seconds() + 1, -1} {
		err := f.call(api.OpTrigger, api.TriggerArgs{Name: "job", Wait: true, TimeoutS: timeout}, nil)
		if !errors.Is(err, errcode.ErrInvalidArgument) || !strings.Contains(err.Error(), "timeout_s") {
			t.Errorf("timeout_s %g: %v", timeout, err)
		}
	}
	var runs []api.Run
	f.mustCall(api.OpRuns, api.RunsArgs{Name: "job"}, &runs)
	if len(runs) != 0 {
		t.Fatalf("a refused trigger started runs: %+v", runs)
	}
	var res api.TriggerResult
	f.mustCall(api.OpTrigger, api.TriggerArgs{Name: "job", Wait: true, TimeoutS: MaxTriggerTimeout.Seconds()}, &res)
	if res.TimedOut || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Errorf("trigger at the largest timeout: %+v", res)
	}
}

// fakeBroker records what control tells the broker about upstreams.
type fakeBroker struct {
	mu      sync.Mutex
	detachs []detach
}

type detach struct {
	unit      string
	run       uint64
	nextRetry time.Time
}

func (b *fakeBroker) Configure(map[string]api.UpstreamRef) {}
func (b *fakeBroker) Serve(_ context.Context, r api.UpstreamRun) {
	p, ok := r.Link.(api.Pipes)
	if !ok {
		r.Ended(errors.New("fakeBroker serves no remote upstreams"))
		return
	}
	p.Stdin.Close()
	go io.Copy(io.Discard, p.Stdout)
}
func (b *fakeBroker) Detach(unit string, run uint64, next time.Time, _ string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.detachs = append(b.detachs, detach{unit, run, next})
}
func (b *fakeBroker) Status() []api.UpstreamSession { return nil }
func (b *fakeBroker) Warnings() []string            { return nil }

func (b *fakeBroker) last() (detach, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.detachs) == 0 {
		return detach{}, false
	}
	return b.detachs[len(b.detachs)-1], true
}

// A degraded upstream that exits again stays degraded; the broker must
// still learn when it is next tried, or upstream_unavailable says "next
// attempt not scheduled" while one is due.
func TestUpstream_DegradedRetryReachesTheBroker(t *testing.T) {
	brk := &fakeBroker{}
	f := newFixture(t, "[mcp.flaky]\ncmd = \"sh\"\nargs = [\"-c\", \"exit 1\"]\nrestart_delay = 0\n", func(f *fixture) {
		f.upstreams = brk
		f.limits = supervise.Limits{CrashThreshold: 2, CrashWindow: time.Minute, MinBackoff: 300 * time.Millisecond,
			MaxDelay: 300 * time.Millisecond, MaxAttempts: 100, HealthyAfter: time.Minute}
	})
	deadline := time.After(15 * time.Second)
	for {
		var st []api.UpstreamStatus
		f.mustCall(api.OpMCPStatus, struct{}{}, &st)
		// Several exits inside degraded: the last thing the broker heard
		// of the latest run carries its retry.
		if len(st) == 1 && st[0].State == "degraded" && st[0].Restarts >= 4 && st[0].NextRetry != nil {
			if d, ok := brk.last(); ok && !d.nextRetry.IsZero() {
				return
			}
		}
		select {
		case <-f.changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			d, _ := brk.last()
			t.Fatalf("status %+v; last detach %+v: the broker never learned of the retry", st, d)
		}
	}
}
