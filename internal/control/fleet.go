package control

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/mcp/prompts"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/supervise"
)

// unit is one supervised harness or upstream with its log and the
// configuration it was built from. Exactly one of h and up is set.
type unit struct {
	name    string
	project string // "" for units of the global config file
	kind    supervise.Kind
	sup     *supervise.Unit
	log     *logs.Log
	h       *config.Harness
	up      *config.Upstream
	// harvest is h.HarvestTrajectory, for the log's OnEntry hook.
	harvest *harvestFlag
}

// UpstreamUnitName is the unit name of an upstream: "mcp.KEY", or
// "PROJECT/mcp.KEY" for a project's. Harness names cannot contain '.', so
// the two never collide.
func UpstreamUnitName(project, key string) string {
	if project == "" {
		return "mcp." + key
	}
	return project + "/mcp." + key
}

func (c *Control) harnessUnitConfig(name string, h *config.Harness) supervise.UnitConfig {
	extra := []string{"HARNESS_SOCKET=" + c.opt.SocketPath}
	if c.opt.MCPURL != "" {
		extra = append(extra, "HARNESS_MCP_URL="+c.opt.MCPURL)
	}
	return supervise.UnitConfig{
		Name:         name,
		Kind:         supervise.KindHarness,
		Cmd:          h.Cmd,
		Args:         h.Args,
		Dir:          h.Workdir,
		EnvFile:      h.EnvFile,
		Env:          h.Env,
		ExtraEnv:     extra,
		Restart:      supervise.Policy(h.Restart),
		RestartDelay: h.RestartDelay,
		StopGrace:    h.StopGrace,
	}
}

func upstreamUnitConfig(name string, u *config.Upstream) supervise.UnitConfig {
	return supervise.UnitConfig{
		Name:         name,
		Kind:         supervise.KindUpstream,
		Cmd:          u.Cmd,
		Args:         u.Args,
		Dir:          u.Workdir,
		EnvFile:      u.EnvFile,
		Env:          u.Env,
		Restart:      supervise.Policy("always"),
		RestartDelay: u.RestartDelay,
		StopGrace:    u.StopGrace,
	}
}

// apply makes the fleet match cfg: new units are created (and, after a
// reload, started when their intent says so), removed ones are stopped and
// forgotten, changed ones get the new config (applied at their next start,
// shown as config_changed). It is the one place a configuration takes
// effect, at boot and at every reload.
func (c *Control) apply(cfg *config.Config, boot bool) (ReloadResult, error) {
	var res ReloadResult
	ps, warns := prompts.Load(cfg.Prompts.Paths)

	wantCfg := map[string]supervise.UnitConfig{}
	harnessOf := map[string]*config.Harness{}
	upOf := map[string]*config.Upstream{}
	for _, name := range sortedKeys(cfg.Harnesses) {
		h := cfg.Harnesses[name]
		wantCfg[name] = c.harnessUnitConfig(name, h)
		harnessOf[name] = h
	}
	for _, key := range sortedKeys(cfg.Upstreams) {
		u := cfg.Upstreams[key]
		name := UpstreamUnitName(u.Project, key)
		wantCfg[name] = upstreamUnitConfig(name, u)
		upOf[name] = u
	}
	specs := map[string]string{}
	for name, h := range harnessOf {
		if h.Schedule != "" {
			specs[name] = h.Schedule
		}
	}
	// Schedules first: Reconcile is all-or-nothing, so a bad expression
	// leaves both the scheduler and the fleet untouched.
	if err := c.sched.Reconcile(specs); err != nil {
		return res, fmt.Errorf("%w: schedules: %v", errcode.ErrConfigInvalid, err)
	}

	want := map[string]unitSpec{}
	for name, ucfg := range wantCfg {
		want[name] = unitSpec{cfg: ucfg, h: harnessOf[name], up: upOf[name]}
	}
	c.mu.Lock()
	added, removed, err := c.reconcile("", want, &res)
	if err != nil {
		c.mu.Unlock()
		return res, err
	}
	restartOnly := !boot && c.cfg.Daemon.MCPHTTP != cfg.Daemon.MCPHTTP
	c.cfg = cfg
	c.prompts = ps
	c.warnings = c.warnings[:0]
	for _, w := range warns {
		c.warnings = append(c.warnings, w.String())
	}
	if restartOnly {
		c.warnings = append(c.warnings, "daemon.mcp_http: a changed address applies when the daemon restarts")
	}
	var toStart []*unit
	if !boot {
		// Units added by a reload start like they would at boot.
		for _, u := range added {
			if u.kind == supervise.KindUpstream || c.wantsAutostart(u) {
				toStart = append(toStart, u)
			}
		}
	}
	c.mu.Unlock()
	c.configureBroker()
	res.Warnings = c.Warnings()

	for _, w := range res.Warnings {
		c.log.Warn("config warning", "warning", w)
	}
	c.retire(removed)
	c.startAll(toStart, "autostart", false)
	c.saveState()
	return res, nil
}

// unitSpec is what one unit should be: its supervise config and the
// configuration table it came from.
type unitSpec struct {
	cfg supervise.UnitConfig
	h   *config.Harness
	up  *config.Upstream
}

// reconcile makes the units of one scope ("" for the global file, else a
// project name) match want: missing ones are created (not started), ones
// no longer wanted are unregistered and returned for retiring, changed
// ones get their new config, applied at their next start. Units of other
// scopes are never touched. Caller holds c.mu for writing.
func (c *Control) reconcile(scope string, want map[string]unitSpec, res *ReloadResult) (added, removed []*unit, err error) {
	for _, name := range sortedKeys(c.units) {
		u := c.units[name]
		if u.project != scope {
			continue
		}
		if _, ok := want[name]; !ok {
			removed = append(removed, u)
			delete(c.units, name)
			delete(c.enabled, name)
			res.Removed = append(res.Removed, name)
		}
	}
	for _, name := range sortedKeys(want) {
		spec := want[name]
		if u, ok := c.units[name]; ok {
			if !reflect.DeepEqual(u.h, spec.h) || !reflect.DeepEqual(u.up, spec.up) {
				u.sup.Update(spec.cfg)
				u.h, u.up = spec.h, spec.up
				u.syncHarvest()
				res.Changed = append(res.Changed, name)
			}
			continue
		}
		u, err := c.newUnit(name, spec.cfg)
		if err != nil {
			return added, removed, err
		}
		u.h, u.up, u.project = spec.h, spec.up, scope
		u.syncHarvest()
		c.units[name] = u
		added = append(added, u)
		res.Added = append(res.Added, name)
	}
	return added, removed, nil
}

// configureBroker tells the broker every upstream of every scope. It must
// be called WITHOUT c.mu held: the broker's change listeners refresh MCP
// sessions, which ask control about scopes. brokerMu orders concurrent
// calls, and each reads the fleet afresh, so the last one wins with the
// latest state.
func (c *Control) configureBroker() {
	if c.opt.Upstreams == nil {
		return
	}
	c.brokerMu.Lock()
	defer c.brokerMu.Unlock()
	refs := map[string]UpstreamRef{}
	c.mu.RLock()
	for name, u := range c.units {
		if u.up != nil {
			refs[name] = UpstreamRef{Key: u.up.Key, Project: u.up.Project}
		}
	}
	c.mu.RUnlock()
	c.opt.Upstreams.Configure(refs)
}

// retire stops and forgets units that left the configuration. It does not
// wait: stopping never blocks the control plane.
func (c *Control) retire(us []*unit) {
	for _, u := range us {
		go func(u *unit) {
			if err := u.sup.Close(context.Background()); err != nil {
				c.log.Error("close removed unit", "unit", u.name, "err", err)
			}
			if err := u.log.Close(); err != nil {
				c.log.Error("close removed unit log", "unit", u.name, "err", err)
			}
		}(u)
	}
}

// startAll starts units concurrently; with wait it returns once each start
// attempt has finished.
func (c *Control) startAll(us []*unit, cause runs.Cause, wait bool) {
	var wg sync.WaitGroup
	for _, u := range us {
		wg.Add(1)
		go func(u *unit) {
			defer wg.Done()
			if err := u.sup.Start(context.Background(), cause); err != nil {
				c.log.Error("start unit", "unit", u.name, "cause", cause, "err", err)
			}
		}(u)
	}
	if wait {
		wg.Wait()
	}
}

// newUnit builds (but does not start) one supervised unit. Caller holds c.mu.
func (c *Control) newUnit(name string, ucfg supervise.UnitConfig) (*unit, error) {
	harvest := new(harvestFlag)
	lg, err := c.opt.OpenLog(name, c.trajectoryHook(name, harvest))
	if err != nil {
		return nil, fmt.Errorf("unit %s: open log: %w", name, err)
	}
	deps, err := c.opt.NewDeps(name, ucfg.Kind)
	if err != nil {
		lg.Close()
		return nil, fmt.Errorf("unit %s: %w", name, err)
	}
	deps.Log = lg
	deps.Runs = c.opt.Runs
	u := &unit{name: name, kind: ucfg.Kind, log: lg, harvest: harvest}
	deps.OnEvent = func(ev supervise.Event) { c.onEvent(u, ev) }
	if ucfg.Kind == supervise.KindUpstream && c.opt.Upstreams != nil {
		hooks := c.opt.Upstreams
		deps.OnSpawn = func(run uint64, stdin io.WriteCloser, stdout io.ReadCloser) {
			hooks.Attach(name, run, stdin, stdout)
		}
	}
	u.sup = supervise.New(ucfg, deps)
	return u, nil
}

// onEvent runs on a unit's actor goroutine: it must not block.
func (c *Control) onEvent(u *unit, ev supervise.Event) {
	if u.kind == supervise.KindUpstream && c.opt.Upstreams != nil {
		switch st := u.sup.Status(); {
		case ev.Kind == "exit":
			c.opt.Upstreams.Detach(u.name, ev.RunID, st.NextRetry, ev.Message)
		case ev.Kind == "state" && st.PID == 0 && !st.NextRetry.IsZero():
			// The retry is scheduled after the exit event: tell the broker
			// when the next attempt is due, for upstream_unavailable.
			c.opt.Upstreams.Detach(u.name, st.RunID, st.NextRetry, "down: "+string(st.State))
		}
	}
	if ev.Kind == "state" {
		c.noteIntent(u.name, u.sup.Status().Enabled)
	}
	if c.opt.OnEvent != nil {
		c.opt.OnEvent(ev)
	}
}

// noteIntent records a unit's enabled intent and persists it on change.
func (c *Control) noteIntent(name string, enabled bool) {
	c.mu.Lock()
	old, had := c.enabled[name]
	_, exists := c.units[name]
	// A daemon shutdown stops units without changing what the operator
	// intends: they start again with the next daemon.
	if c.closed || !exists || (had && old == enabled) {
		c.mu.Unlock()
		return
	}
	c.enabled[name] = enabled
	c.mu.Unlock()
	c.saveState()
}

func (c *Control) saveState() {
	if c.opt.State == nil {
		return
	}
	c.mu.RLock()
	st := State{Enabled: map[string]bool{}, Profile: c.profile, Projects: map[string]string{}}
	for k, v := range c.enabled {
		st.Enabled[k] = v
	}
	for name, p := range c.projects {
		st.Projects[name] = p.Path
	}
	c.mu.RUnlock()
	if err := c.opt.State.Save(st); err != nil {
		c.log.Error("save state", "err", err)
	}
}

// lookup finds a unit by name, harness or upstream.
func (c *Control) lookup(name string) (*unit, error) {
	if name == "" {
		return nil, errcode.Errorf(errcode.InvalidArgument, "a harness name is required")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	u, ok := c.units[name]
	if !ok {
		return nil, errcode.Errorf(errcode.UnknownHarness, "no harness named %q", name)
	}
	return u, nil
}

// harnesses returns the harness units sorted by name.
func (c *Control) harnesses() []*unit {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*unit, 0, len(c.units))
	for _, u := range c.units {
		if u.kind == supervise.KindHarness {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// upstreams returns the upstream units sorted by name.
func (c *Control) upstreamUnits() []*unit {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*unit
	for _, u := range c.units {
		if u.kind == supervise.KindUpstream {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
