package control

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/sandbox"
	"github.com/harness-dev/harness/internal/supervise"
)

// Describe answers `describe`.
func (c *Control) Describe(ctx context.Context, a api.NameArg) (api.Description, error) {
	u, err := c.lookup(a.Name)
	if err != nil {
		return api.Description{}, err
	}
	row, in := c.info(u)
	st := in.status // the row's own snapshot: shared, read only
	d := api.Description{
		UnitInfo:      row,
		ConfigChanged: st.ConfigChanged,
		LastSignal:    st.LastSignal,
		LastError:     st.LastError,
		NextRetry:     timePtr(st.NextRetry),
	}
	if h := u.harness(); h != nil {
		d.Config = processView(h.Process, string(h.Restart), h.MCPAllow.Strings())
		d.Config.Schedule, d.Config.HarvestTrajectory = h.Schedule, h.HarvestTrajectory
		d.Config.Worktree = c.worktreeView(u.name, h.Worktree)
		if h.Bootstrap.Ports > 0 {
			d.Config.Ports = c.portsFor(u.name, h.Bootstrap.Ports)
		}
		d.Config.TermSize = fmt.Sprintf("%dx%d", h.TermCols, h.TermRows)
		d.Config.IdleAfterS = h.IdleAfter.Seconds()
		hooks := h.Hooks
		d.Config.Hooks = &hooks
		d.Grant = c.grantView(h)
	}
	if up := u.upstream(); up != nil {
		d.Config = processView(up.Process, string(config.RestartAlways), []string{})
		remoteView(up, &d.Config)
		d.Config.MaxResultBytes = up.MaxResult
	}
	if callerOf(ctx).Kind != api.Operator {
		// Any read session may describe every harness: it sees which
		// variables a harness sets, not their values (tokens, URLs with
		// credentials). The operator's CLI shows them.
		d.Config.Env = hiddenValues(d.Config.Env)
	}
	if st.RunID != 0 && isActive(st.State) {
		if r, ok := c.opt.Runs.Get(st.RunID); ok {
			d.CurrentRun = &r
		}
	}
	if st.Cgroup != nil && st.HasRun() {
		n := st.Cgroup.Counters()
		d.Resources = &api.ResourceEvents{PidsMax: n.PidsMax, MemoryHigh: n.MemoryHigh, MemoryMax: n.MemoryMax, OOMKills: n.OOMKills}
	}
	if sb := st.Sandbox; sb != nil && st.HasRun() {
		d.Sandbox = &api.SandboxView{FS: sb.Levels.FS, Network: sb.Levels.Network, Tmp: sb.Levels.Tmp,
			Missing: sb.Levels.Missing, Denied: sb.Denied(), LastDenied: sb.LastDenied()}
		if fs := sb.Levels.FS; fs != sandbox.FSOff && fs != sandbox.FSNotBuilt {
			counting, why := sb.FilesCounted()
			d.Sandbox.FilesDenied = why
			if n := sb.FilesDenied(); counting || n > 0 {
				d.Sandbox.FilesDeniedCount = &n
				d.Sandbox.LastFileDenied = sb.LastFileDenied()
			}
		}
	}
	if run, read := u.sup.AgentScreenRead(); read.Looked && run == st.RunID && st.HasRun() {
		d.AgentScreen = agentScreenView(d.Agent, read)
	}
	return d, nil
}

// agentScreenView is describe's agent_screen of a read.
func agentScreenView(agent string, r supervise.ScreenRead) *api.AgentScreen {
	v := &api.AgentScreen{Recognised: r.Rule != "", Rule: r.Rule}
	if !v.Recognised {
		v.UnrecognisedSince = timePtr(r.Unrecognised)
		v.Note = fmt.Sprintf("the %s adapter does not recognise this screen (another version of the program?): "+
			"its state is working or ready from activity, never waiting", agent)
	}
	return v
}

// processView shows the spawn configuration; env_file is a path, never
// anything read from it.
func processView(p config.Process, restart string, allow []string) api.UnitConfigView {
	return api.UnitConfigView{
		Cmd: p.Cmd, Args: nonNil(p.Args), Workdir: p.Workdir, EnvFile: p.EnvFile, Env: p.Env,
		Restart: restart, RestartDelayS: p.RestartDelay.Seconds(), StopGraceS: p.StopGrace.Seconds(),
		MCPAllow: allow,
		TasksMax: p.Resources.TasksMax, MemoryMax: p.Resources.MemoryMax, MemoryHigh: p.Resources.MemoryHigh,
		CPUWeight: p.Resources.CPUWeight,
	}
}

// hiddenValues keeps env's keys with every value replaced.
func hiddenValues(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k := range env {
		out[k] = endpoint.Hidden
	}
	return out
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// isActive: the unit has (or is about to have) a live process.
func isActive(s supervise.State) bool {
	switch s {
	case supervise.StateStarting, supervise.StateRunning, supervise.StateDegraded, supervise.StateStopping:
		return true
	}
	return false
}

// selectUnits resolves start/stop/restart arguments to units. Every name is
// checked before anything acts, so a typo changes nothing.
func (c *Control) selectUnits(a api.NamesArgs, skipJobs bool) ([]*unit, error) {
	names := append([]string{}, a.Names...)
	if a.Name != "" {
		names = append(names, a.Name)
	}
	if a.All {
		if len(names) > 0 {
			return nil, errcode.Errorf(errcode.InvalidArgument, "give names or all, not both")
		}
		var out []*unit
		for _, u := range c.harnesses() {
			// start/restart --all never fire jobs: they run on their
			// schedule or by trigger. stop --all stops them too.
			if h := u.harness(); skipJobs && h != nil && h.IsJob() {
				continue
			}
			out = append(out, u)
		}
		return out, nil
	}
	if len(names) == 0 {
		return nil, errcode.Errorf(errcode.InvalidArgument, "name a harness or pass all")
	}
	out := make([]*unit, 0, len(names))
	for _, n := range names {
		u, err := c.lookup(n)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// each runs f on every unit concurrently: stopping fifty units takes one
// grace period, not fifty.
func (c *Control) each(us []*unit, f func(*unit) (bool, error)) api.ActionResult {
	res := api.ActionResult{Results: make([]api.ActionItem, len(us))}
	var wg sync.WaitGroup
	for i, u := range us {
		wg.Add(1)
		go func(i int, u *unit) {
			defer wg.Done()
			changed, err := f(u)
			item := api.ActionItem{Name: u.name, Changed: changed, State: string(u.sup.Status().State)}
			if err != nil {
				item.Error = err.Error()
				if code := errcode.Of(err); code != errcode.Internal {
					item.Code = string(code)
				}
				c.log.Error("unit action failed", logkey.Unit, u.name, logkey.Err, err)
			}
			res.Results[i] = item
		}(i, u)
	}
	wg.Wait()
	return res
}

// Start answers `start` (idempotent: an active unit is left alone).
func (c *Control) Start(ctx context.Context, a api.NamesArgs) (api.ActionResult, error) {
	us, err := c.selectUnits(a, true)
	if err != nil {
		return api.ActionResult{}, err
	}
	if len(us) == 1 && !isActive(us[0].sup.Status().State) {
		// One harness: a hold is the answer itself, code held.
		if err := c.admit(us[0], a.Force); err != nil {
			return api.ActionResult{}, err
		}
	}
	return c.each(us, func(u *unit) (bool, error) {
		if isActive(u.sup.Status().State) {
			return false, nil
		}
		if err := c.admit(u, a.Force); err != nil {
			return false, err
		}
		return true, c.startUnit(ctx, u, api.CauseManual)
	}), nil
}

// Stop answers `stop` (idempotent) and returns once the units are stopped.
func (c *Control) Stop(ctx context.Context, a api.NamesArgs) (api.ActionResult, error) {
	us, err := c.selectUnits(a, false)
	if err != nil {
		return api.ActionResult{}, err
	}
	return c.each(us, func(u *unit) (bool, error) {
		st := u.sup.Status()
		changed := isActive(st.State) || st.State == supervise.StateRestarting || st.Enabled
		return changed, u.sup.Stop(ctx)
	}), nil
}

// Restart answers `restart`; it also clears a latched failed state.
func (c *Control) Restart(ctx context.Context, a api.NamesArgs) (api.ActionResult, error) {
	us, err := c.selectUnits(a, true)
	if err != nil {
		return api.ActionResult{}, err
	}
	if len(us) == 1 {
		if err := c.admit(us[0], a.Force); err != nil {
			return api.ActionResult{}, err
		}
	}
	return c.each(us, func(u *unit) (bool, error) {
		if err := c.admit(u, a.Force); err != nil {
			return false, err
		}
		if a.Fresh {
			return true, c.restartFresh(ctx, u, api.CauseManual)
		}
		return true, c.restartUnit(ctx, u, api.CauseManual)
	}), nil
}

// Runs answers `runs`.
func (c *Control) Runs(_ context.Context, a api.RunsArgs) ([]runs.Run, error) {
	if a.Name != "" {
		if _, err := c.lookup(a.Name); err != nil && len(c.opt.Runs.List(a.Name, 1)) == 0 {
			return nil, err
		}
	}
	if a.Limit < 0 {
		return nil, errcode.Errorf(errcode.InvalidArgument, "limit must be >= 0")
	}
	rs := c.opt.Runs.List(a.Name, a.Limit)
	if rs == nil {
		rs = []runs.Run{}
	}
	return rs, nil
}

// Jobs answers `jobs`.
func (c *Control) Jobs(context.Context, api.NoArgs) ([]api.JobInfo, error) {
	out := []api.JobInfo{}
	for _, u := range c.harnesses() {
		h := u.harness()
		if h == nil || !h.IsJob() {
			continue
		}
		j := api.JobInfo{Name: u.name, Schedule: h.Schedule, State: string(u.sup.Status().State)}
		if t, ok := c.sched.Next(u.name); ok {
			j.NextFire = &t
		}
		if rs := c.opt.Runs.List(u.name, 1); len(rs) > 0 {
			r := rs[len(rs)-1]
			j.LastRun = &r
		}
		out = append(out, j)
	}
	return out, nil
}

// Triggers answers `triggers`: every armed schedule.
func (c *Control) Triggers(context.Context, api.NoArgs) ([]api.Trigger, error) {
	ts := c.sched.Triggers()
	if ts == nil {
		ts = []api.Trigger{}
	}
	return ts, nil
}

// runNow starts a job that is not active and returns its new run. From
// restarting it cancels the pending policy retry and runs at once (Start
// would leave the retry to its timer).
func (c *Control) runNow(ctx context.Context, u *unit, cause runs.Cause) (uint64, error) {
	before := u.sup.Status()
	var err error
	if before.State == supervise.StateRestarting {
		err = c.restartUnit(ctx, u, cause)
	} else {
		err = c.startUnit(ctx, u, cause)
	}
	if err != nil {
		return 0, err
	}
	after := u.sup.Status()
	if after.RunID == before.RunID {
		return 0, fmt.Errorf("%s did not start a new run (state %s)", u.name, after.State)
	}
	return after.RunID, nil
}

// Bounds of `trigger --wait`: the default when no timeout is given, and
// the largest accepted (a larger timeout_s would overflow time.Duration
// and time out at once).
const (
	DefaultTriggerTimeout = 10 * time.Minute
	MaxTriggerTimeout     = 24 * time.Hour
)

// Trigger answers `trigger`: start a job now, optionally following the run
// to its end.
func (c *Control) Trigger(ctx context.Context, a api.TriggerArgs) (api.TriggerResult, error) {
	u, err := c.lookup(a.Name)
	if err != nil {
		return api.TriggerResult{}, err
	}
	if h := u.harness(); h == nil || !h.IsJob() {
		return api.TriggerResult{}, errcode.Errorf(errcode.NotAJob, "%s is not a job (no schedule, restart %q)", a.Name, restartOf(u))
	}
	if a.TimeoutS < 0 || a.TimeoutS > MaxTriggerTimeout.Seconds() || math.IsNaN(a.TimeoutS) {
		return api.TriggerResult{}, errcode.Errorf(errcode.InvalidArgument, "timeout_s must be between 0 and %g (%s)", MaxTriggerTimeout.Seconds(), MaxTriggerTimeout)
	}
	res := api.TriggerResult{Name: a.Name}
	if err := c.refuseFiring(u, api.CauseTrigger); err != nil {
		return res, err
	}
	run, done, err := c.triggerFiring(ctx, u, &res)
	if err != nil || done {
		return res, err
	}
	res.RunID = run
	if !a.Wait {
		return res, nil
	}
	res.Waited = true
	timeout := DefaultTriggerTimeout
	if a.TimeoutS > 0 {
		timeout = time.Duration(a.TimeoutS * float64(time.Second))
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := c.opt.Runs.Wait(wctx, res.RunID)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			res.TimedOut = true
			res.Tail = c.runTail(u, res.RunID)
			return res, nil
		}
		return res, fmt.Errorf("trigger %s: wait for run %d: %w", a.Name, res.RunID, err)
	}
	res.ExitCode, res.Signal, res.Outcome, res.Note = r.ExitCode, r.Signal, r.Outcome, r.Note
	if r.EndedAt != nil {
		res.DurationMS = r.EndedAt.Sub(r.StartedAt).Milliseconds()
	}
	res.Tail = c.runTail(u, res.RunID)
	return res, nil
}

func restartOf(u *unit) string {
	if u.harness() == nil {
		return ""
	}
	return string(u.harness().Restart)
}

// runTail is the last activity entries of one run.
func (c *Control) runTail(u *unit, run uint64) []logs.Entry {
	u.log.Flush()
	all := u.log.Tail(500)
	var out []logs.Entry
	for _, e := range all {
		if e.RunID == run {
			out = append(out, e)
		}
	}
	if len(out) > 20 {
		out = out[len(out)-20:]
	}
	return out
}

// Profiles answers `profiles`.
func (c *Control) Profiles(context.Context, api.NoArgs) ([]api.ProfileInfo, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := []api.ProfileInfo{}
	for _, name := range sortedKeys(c.cfg.Profiles) {
		p := c.cfg.Profiles[name]
		out = append(out, api.ProfileInfo{Name: name, Harnesses: nonNil(p.Harnesses), Autostart: p.Autostart, Active: name == c.profile})
	}
	return out, nil
}

// UseProfile answers `use_profile`: the profile's members start, every
// other running harness (jobs aside) stops, and the choice is persisted.
func (c *Control) UseProfile(ctx context.Context, a api.NameArg) (api.ActionResult, error) {
	name := a.Name
	c.mu.RLock()
	p, ok := c.cfg.Profiles[name]
	c.mu.RUnlock()
	if !ok {
		return api.ActionResult{}, errcode.Errorf(errcode.InvalidArgument, "no profile named %s", errcode.Quote(name))
	}
	var us []*unit
	for _, u := range c.harnesses() {
		// Profiles are of the global file: project harnesses are left alone.
		if h := u.harness(); h != nil && u.project == "" && (contains(p.Harnesses, u.name) || !h.IsJob()) {
			us = append(us, u)
		}
	}
	res := c.each(us, func(u *unit) (bool, error) {
		active := isActive(u.sup.Status().State)
		if contains(p.Harnesses, u.name) {
			if active {
				return false, nil
			}
			return true, c.startUnit(ctx, u, api.CauseManual)
		}
		if !active {
			return false, nil
		}
		return true, u.sup.Stop(ctx)
	})
	c.mu.Lock()
	c.profile = name
	c.mu.Unlock()
	c.saveState()
	return res, nil
}

// Reload answers `reload`: a bad file keeps the last good config and says
// why (file:line); a good one is applied.
func (c *Control) Reload(context.Context, api.NoArgs) (api.ReloadResult, error) {
	cfg, err := config.Load(c.opt.ConfigPath)
	if err != nil {
		c.log.Error("reload refused; keeping the last good config", logkey.Config, c.opt.ConfigPath, logkey.Err, err)
		return api.ReloadResult{}, err
	}
	res, err := c.apply(cfg, false)
	if err != nil {
		c.log.Error("reload failed; keeping the last good config", logkey.Err, err)
		return res, err
	}
	c.log.Info("config reloaded", logkey.Added, res.Added, logkey.Removed, res.Removed, logkey.Changed, res.Changed)
	c.reloaded()
	return res, nil
}

// Warnings returns the current configuration warnings (prompts, broker).
// The broker's warnings are asked for live: a tool name over the length
// limit is only known once its upstream has listed its tools.
func (c *Control) Warnings() []string {
	c.mu.RLock()
	out := append([]string{}, c.warnings...)
	out = append(out, c.projectWarnings...)
	c.mu.RUnlock()
	if c.opt.Upstreams != nil {
		out = append(out, c.opt.Upstreams.Warnings()...)
	}
	return out
}

// DaemonInfo answers `daemon_info`.
func (c *Control) DaemonInfo(ctx context.Context, _ api.NoArgs) (api.DaemonInfo, error) {
	c.mu.RLock()
	profile := c.profile
	c.mu.RUnlock()
	var webURL, webFP, webErr string
	if c.opt.Devices != nil {
		webURL, webFP, webErr = c.opt.Devices.Info()
	}
	var tnURL, tnErr string
	if c.opt.Tailnet != nil {
		tnURL, tnErr = c.opt.Tailnet()
	}
	return api.DaemonInfo{
		TailnetURL:     tnURL,
		TailnetError:   tnErr,
		WebURL:         webURL,
		WebFingerprint: webFP,
		WebError:       webErr,
		Version:        c.opt.Version,
		Proto:          c.opt.Proto,
		PID:            os.Getpid(),
		StartedAt:      c.startedAt,
		Uptime:         time.Since(c.startedAt).Round(time.Second).String(),
		UptimeS:        time.Since(c.startedAt).Seconds(),
		Paths:          c.opt.Paths,
		Profile:        profile,
		MCPURL:         c.opt.MCPURL,
		DashboardURL:   c.opt.DashboardURL,
		Warnings:       c.Warnings(),
		Upstreams:      c.upstreamStatus(),
		Ownership:      c.opt.Ownership,
		CallLog:        c.callLogInfo(),
		Notify:         c.notifyStats(),
		Webhooks:       c.webhookInfo(),
		StateWrites:    c.stateWrites(),
		Telemetry:      c.telemetryInfo(),
	}, nil
}

func (c *Control) telemetryInfo() *api.TelemetryInfo {
	if c.opt.Telemetry == nil {
		return nil
	}
	return c.opt.Telemetry()
}

func (c *Control) stateWrites() api.StateWrites {
	if c.opt.StateWrites == nil {
		return api.StateWrites{Failing: []api.StateWriteError{}}
	}
	w := c.opt.StateWrites()
	if w.Failing == nil {
		w.Failing = []api.StateWriteError{}
	}
	return w
}

// MCPStatus answers `mcp_status`.
func (c *Control) MCPStatus(context.Context, api.NoArgs) ([]api.UpstreamStatus, error) {
	return c.upstreamStatus(), nil
}

// upstreamStatus is each upstream's supervision state merged with what the
// broker knows of its session.
func (c *Control) upstreamStatus() []api.UpstreamStatus {
	known := map[string]api.UpstreamSession{}
	if c.opt.Upstreams != nil {
		for _, s := range c.opt.Upstreams.Status() {
			known[s.Unit] = s
		}
	}
	out := []api.UpstreamStatus{}
	for _, u := range c.upstreamUnits() {
		st := u.sup.Status()
		b := known[u.name]
		us := api.UpstreamStatus{
			Key: u.upstream().Key, Project: u.upstream().Project, URL: shownURL(u.upstream()), State: string(st.State), PID: st.PID,
			Tools: b.Tools, Restarts: st.RestartCount, LastError: st.LastError, NextRetry: timePtr(st.NextRetry),
			ToolClasses: b.ToolClasses,
		}
		if us.ToolClasses == nil {
			us.ToolClasses = []api.ToolClass{}
		}
		if us.LastError == "" {
			us.LastError = b.LastError
		}
		if why, ok := c.loginState(u, us.State); ok {
			us.State, us.LastError = api.StateNeedsLogin, why
		}
		out = append(out, us)
	}
	c.addCallStats(out)
	return out
}
