package control

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sort"
	"time"

	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/mcp/prompts"
	"github.com/harness-dev/harness/internal/supervise"
)

// unit is one supervised harness or upstream with its log and the
// configuration it was built from. Exactly one of h and up is set.
type unit struct {
	name string
	kind supervise.Kind
	sup  *supervise.Unit
	log  *logs.Log
	h    *config.Harness
	up   *config.Upstream
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

func (c *Control) harnessUnitConfig(h *config.Harness) supervise.UnitConfig {
	extra := []string{"HARNESS_SOCKET=" + c.opt.SocketPath}
	if c.opt.MCPURL != "" {
		extra = append(extra, "HARNESS_MCP_URL="+c.opt.MCPURL)
	}
	return supervise.UnitConfig{
		Name:         h.Name,
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

	want := map[string]supervise.UnitConfig{}
	harnessOf := map[string]*config.Harness{}
	upOf := map[string]*config.Upstream{}
	for _, name := range sortedKeys(cfg.Harnesses) {
		h := cfg.Harnesses[name]
		want[name] = c.harnessUnitConfig(h)
		harnessOf[name] = h
	}
	for _, key := range sortedKeys(cfg.Upstreams) {
		u := cfg.Upstreams[key]
		name := UpstreamUnitName(u.Project, key)
		want[name] = upstreamUnitConfig(name, u)
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

	c.mu.Lock()
	var removed []*unit
	for name, u := range c.units {
		if _, ok := want[name]; !ok {
			removed = append(removed, u)
			delete(c.units, name)
			delete(c.enabled, name)
			res.Removed = append(res.Removed, name)
		}
	}
	var added []*unit
	for _, name := range sortedKeys(want) {
		ucfg := want[name]
		if u, ok := c.units[name]; ok {
			if !reflect.DeepEqual(u.h, harnessOf[name]) || !reflect.DeepEqual(u.up, upOf[name]) {
				u.sup.Update(ucfg)
				u.h, u.up = harnessOf[name], upOf[name]
				u.syncHarvest()
				res.Changed = append(res.Changed, name)
			}
			continue
		}
		u, err := c.newUnit(name, ucfg)
		if err != nil {
			c.mu.Unlock()
			return res, err
		}
		u.h, u.up = harnessOf[name], upOf[name]
		u.syncHarvest()
		c.units[name] = u
		added = append(added, u)
		res.Added = append(res.Added, name)
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
	if c.opt.Upstreams != nil {
		refs := map[string]UpstreamRef{}
		for name, u := range upOf {
			refs[name] = UpstreamRef{Key: u.Key, Project: u.Project}
		}
		c.opt.Upstreams.Configure(refs)
		c.warnings = append(c.warnings, c.opt.Upstreams.Warnings()...)
	}
	res.Warnings = append([]string{}, c.warnings...)
	c.mu.Unlock()

	for _, w := range res.Warnings {
		c.log.Warn("config warning", "warning", w)
	}
	ctx := context.Background()
	for _, u := range removed {
		go func(u *unit) {
			if err := u.sup.Close(ctx); err != nil {
				c.log.Error("close removed unit", "unit", u.name, "err", err)
			}
			if err := u.log.Close(); err != nil {
				c.log.Error("close removed unit log", "unit", u.name, "err", err)
			}
		}(u)
	}
	if !boot {
		// Units added by a reload start like they would at boot.
		for _, u := range added {
			c.mu.RLock()
			start := u.kind == supervise.KindUpstream || c.wantsAutostart(u)
			c.mu.RUnlock()
			if start {
				go func(u *unit) {
					if err := u.sup.Start(ctx, "autostart"); err != nil {
						c.log.Error("start added unit", "unit", u.name, "err", err)
					}
				}(u)
			}
		}
	}
	c.saveState()
	return res, nil
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
	if !exists || (had && old == enabled) {
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
	st := State{Enabled: map[string]bool{}, Profile: c.profile}
	for k, v := range c.enabled {
		st.Enabled[k] = v
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
