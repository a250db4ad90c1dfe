package control

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
)

// projectSpecs is what a project file asks for: units named PROJECT/NAME
// and PROJECT/mcp.KEY. The caller holds c.mu.
func (c *Control) projectSpecs(p *config.Project) map[string]unitSpec {
	want := map[string]unitSpec{}
	for name, h := range p.Harnesses {
		unitName := p.Name + "/" + name
		if c.cfg != nil && c.cfg.Defaults.Sandbox.Active() {
			// A project may not set its own sandbox: it takes the global
			// [defaults] one (the caller holds c.mu, which guards c.cfg).
			boxed := *h
			boxed.Sandbox = c.cfg.Defaults.Sandbox
			h = &boxed
		}
		ucfg, files := c.harnessUnitConfig(unitName, h)
		want[unitName] = unitSpec{cfg: ucfg, h: h, wire: files}
	}
	for key, u := range p.Upstreams {
		unitName := UpstreamUnitName(p.Name, key)
		want[unitName] = unitSpec{cfg: upstreamUnitConfig(unitName, u), up: u}
	}
	return want
}

// checkProjectLocked refuses a project that would collide with the global fleet:
// its name may not be a global harness name and its upstream keys may not
// be global upstream keys (project upstreams add, never override). The
// caller holds c.mu.
func (c *Control) checkProjectLocked(p *config.Project) error {
	if c.closing.Load() {
		return errcode.Errorf(errcode.DaemonUnavailable, "the daemon is shutting down")
	}
	if _, ok := c.cfg.Harnesses[p.Name]; ok {
		return errcode.Errorf(errcode.InvalidArgument, "project %q: the name is a global harness's; set [project] name", p.Name)
	}
	var clash []string
	for key := range p.Upstreams {
		if _, ok := c.cfg.Upstreams[key]; ok {
			clash = append(clash, "mcp."+key)
		}
	}
	if len(clash) > 0 {
		sort.Strings(clash)
		return errcode.Errorf(errcode.InvalidArgument, "project %q: %s already declared globally; a project upstream cannot override a global one", p.Name, strings.Join(clash, ", "))
	}
	if other, ok := c.projects[p.Name]; ok && !config.SameFile(other.Path, p.Path) {
		return errcode.Errorf(errcode.InvalidArgument, "project %q is already up from %s", p.Name, other.Path)
	}
	return nil
}

// ProjectUp answers project_up: register the project's units and start
// them. Re-running reconciles: new units start, removed ones stop and go,
// changed ones are flagged config_changed.
func (c *Control) ProjectUp(ctx context.Context, a api.ProjectArgs) (api.ProjectResult, error) {
	if a.Path == "" {
		return api.ProjectResult{}, errcode.Errorf(errcode.InvalidArgument, "project_up needs the project file's path")
	}
	if c.opt.ConfigPath != "" && config.SameFile(a.Path, c.opt.ConfigPath) {
		return api.ProjectResult{}, errcode.Errorf(errcode.InvalidArgument, "%s is the daemon's global config, not a project file", a.Path)
	}
	p, err := config.LoadProject(a.Path)
	if err != nil {
		return api.ProjectResult{}, err
	}
	return c.registerProject(p)
}

func (c *Control) registerProject(p *config.Project) (api.ProjectResult, error) {
	c.reconcileMu.Lock()
	defer c.reconcileMu.Unlock()
	res := api.ProjectResult{Project: p.Name, Path: p.Path}
	var rr api.ReloadResult
	c.mu.Lock()
	if err := c.checkProjectLocked(p); err != nil {
		c.mu.Unlock()
		return res, err
	}
	specs := c.projectSpecs(p)
	ch, err := c.reconcileLocked(p.Name, specs, &rr)
	if err != nil {
		c.mu.Unlock()
		c.finish(ch)
		return res, err
	}
	c.projects[p.Name] = p
	delete(c.unrestored, p.Name)
	var toStart []*unit
	for _, u := range c.units {
		if u.project != p.Name {
			continue
		}
		if st := u.sup.Status(); isActive(st.State) || st.State == supervise.StateRestarting {
			continue
		}
		if u.kind == supervise.KindUpstream || c.wantsAutostartLocked(u) {
			toStart = append(toStart, u)
		}
	}
	c.mu.Unlock()
	c.writeWirings(specs)
	c.configureBroker()
	c.finish(ch)
	c.refreshMask()
	c.startAll(toStart, api.CauseManual, true)
	for _, u := range toStart {
		res.Started = append(res.Started, u.name)
	}
	sort.Strings(res.Started)
	res.Added, res.Removed, res.Changed = nonNil(rr.Added), nonNil(rr.Removed), nonNil(rr.Changed)
	c.saveState()
	c.reloaded()
	c.log.Info("project up", logkey.Project, p.Name, logkey.Path, p.Path, logkey.Added, rr.Added, logkey.Removed, rr.Removed, logkey.Changed, rr.Changed)
	return res, nil
}

// ProjectDown answers project_down: stop the project's units and forget
// the project. The global config file is never touched.
func (c *Control) ProjectDown(ctx context.Context, a api.ProjectArgs) (api.ProjectResult, error) {
	c.reconcileMu.Lock()
	locked := true
	defer func() {
		if locked {
			c.reconcileMu.Unlock()
		}
	}()
	name := a.Name
	c.mu.Lock()
	if c.closing.Load() {
		c.mu.Unlock()
		return api.ProjectResult{}, errcode.Errorf(errcode.DaemonUnavailable, "the daemon is shutting down")
	}
	if name == "" && a.Path != "" {
		for n, p := range c.projects {
			if config.SameFile(p.Path, a.Path) {
				name = n
			}
		}
	}
	p, ok := c.projects[name]
	if path, unrestored := c.unrestored[name]; !ok && unrestored {
		// Registered but never restored: forgetting it is all there is.
		delete(c.unrestored, name)
		c.mu.Unlock()
		c.saveState()
		return api.ProjectResult{Project: name, Path: path, Added: []string{}, Removed: []string{}, Changed: []string{}, Started: []string{}}, nil
	}
	if !ok {
		c.mu.Unlock()
		if name == "" {
			return api.ProjectResult{}, errcode.Errorf(errcode.InvalidArgument, "no project is up from %s", a.Path)
		}
		return api.ProjectResult{}, errcode.Errorf(errcode.InvalidArgument, "no project named %s is up", errcode.Quote(name))
	}
	var rr api.ReloadResult
	ch, _ := c.reconcileLocked(name, nil, &rr) // removing builds nothing: no error
	delete(c.projects, name)
	c.mu.Unlock()
	c.configureBroker()
	// Down waits for its own units to stop: the caller asked for them
	// gone. Other reconciles may go on meanwhile.
	stopped := c.finish(ch)
	c.reconcileMu.Unlock()
	locked = false
	stopped.Wait()
	c.saveState()
	c.reloaded()
	c.log.Info("project down", logkey.Project, name)
	return api.ProjectResult{Project: name, Path: p.Path, Added: []string{}, Removed: nonNil(rr.Removed), Changed: []string{}, Started: []string{}}, nil
}

// restoreProjects re-registers, at daemon start, the projects that were up
// when the previous daemon ended. A project whose file is gone or broken
// is reported and dropped, never fatal.
func (c *Control) restoreProjects(paths map[string]string) {
	c.reconcileMu.Lock()
	defer c.reconcileMu.Unlock()
	for _, name := range sortedKeys(paths) {
		p, err := config.LoadProject(paths[name])
		if err == nil && p.Name != name {
			err = fmt.Errorf("project file now names the project %q", p.Name)
		}
		if err == nil {
			c.mu.Lock()
			err = c.checkProjectLocked(p)
			var ch reconciled
			var specs map[string]unitSpec
			if err == nil {
				var rr api.ReloadResult
				specs = c.projectSpecs(p)
				if ch, err = c.reconcileLocked(p.Name, specs, &rr); err == nil {
					c.projects[p.Name] = p
				} else {
					specs = nil
				}
			}
			c.mu.Unlock()
			c.writeWirings(specs)
			c.finish(ch)
			c.configureBroker()
		}
		if err != nil {
			// Kept registered (but not running) so that fixing the
			// file and running `harness up` again brings it back.
			w := fmt.Sprintf("project %s (%s) was not restored: %v", name, paths[name], err)
			c.log.Warn("project not restored", logkey.Project, name, logkey.Path, paths[name], logkey.Err, err)
			c.mu.Lock()
			c.projectWarnings = append(c.projectWarnings, w)
			c.unrestored[name] = paths[name]
			c.mu.Unlock()
		}
	}
	c.saveState()
}

// HarnessConfig returns the configuration in force of a harness, global
// (NAME) or of a project (PROJECT/NAME).
func (c *Control) HarnessConfig(name string) (*config.Harness, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if u, ok := c.units[name]; ok && u.harness() != nil {
		return u.harness(), true
	}
	return nil, false
}
