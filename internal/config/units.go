package config

import (
	"slices"
	"strconv"
	"strings"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
)

// globalOnly is the message for keys and tables a project file may not
// declare: a cloned repository must not grant itself authority or change
// the daemon.
const globalOnly = "not allowed in a project file (global config only)"

// harness decodes [harness.NAME]; project is "" for the global file. It
// returns nil only when the value is not a table.
func (d *decoder) harness(name string, v any, project string) *Harness {
	path := []string{"harness", name}
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	if !harnessNameRE.MatchString(name) {
		d.add(path, `invalid harness name %q: use letters, digits, "-" and "_" ("/" is reserved for project/name)`, name)
	}
	h := &Harness{
		Name:     name,
		Process:  Process{RestartDelay: DefaultRestartDelay, StopGrace: DefaultStopGrace, Resources: Resources{TasksMax: DefaultTasksMax}},
		MCPAllow: api.DefaultGrant(),
		MCPTools: api.ToolsAll,
		Project:  project,
		TermCols: DefaultTermCols, TermRows: DefaultTermRows, IdleAfter: DefaultIdleAfter,
		MCPWire: true, Hooks: true,
		Sandbox: defaultSandbox(),
	}
	if d.sandboxBase != nil {
		h.Sandbox = *d.sandboxBase
	}
	restartSet := false
	for _, k := range sortedKeys(t) {
		kp, val := child(path, k), t[k]
		if d.processKey(k, kp, val, &h.Process) || d.jobKey(k, kp, val, &h.Job) || d.holdKey(k, kp, val, &h.Holds) ||
			d.agentRunKey(k, kp, val, &h.AgentRun) || d.bootstrapKey(k, kp, val, &h.Bootstrap) {
			continue
		}
		switch k {
		case "description":
			h.Description, _ = d.str(kp, val)
		case "enabled":
			h.Enabled = d.boolean(kp, val)
		case "restart":
			if s, ok := d.str(kp, val); ok {
				if r := RestartPolicy(s); r.Valid() {
					h.Restart, restartSet = r, true
				} else {
					d.add(kp, `invalid restart policy %q (want "always", "unless-stopped", "on-failure" or "no")`, s)
				}
			}
		case "mcp_allow":
			if project != "" {
				d.add(kp, globalOnly)
				continue
			}
			h.MCPAllow = d.grant(kp, val)
		case "schedule":
			if project != "" {
				d.add(kp, globalOnly)
				continue
			}
			if s, ok := d.str(kp, val); ok {
				if err := checkSchedule(s); err != nil {
					d.add(kp, "%v", err)
				}
				h.Schedule = s
			}
		case "harvest_trajectory":
			h.HarvestTrajectory = d.boolean(kp, val)
		case "mcp_tools":
			// Not authority: how tools are listed, so a project may set it.
			h.MCPTools = d.toolMode(kp, val)
		case "worktree":
			d.worktree(kp, val, h)
		case "term_size":
			h.TermCols, h.TermRows = d.termSize(kp, val)
		case "idle_after":
			h.IdleAfter = d.idleAfter(kp, val)
		case "agent":
			h.Agent = d.agent(kp, val)
		case "mcp_wire":
			h.MCPWire = d.boolean(kp, val)
		case "hooks":
			h.Hooks = d.boolean(kp, val)
		case "prices":
			h.Prices = d.prices(kp, val)
		case "mcp_rate":
			// Not authority: a bound on its own calls, so a project may set it.
			if s, ok := d.str(kp, val); ok {
				h.MCPRate = d.rate(kp, s, 0)
			}
		case "sandbox":
			if project != "" {
				// A cloned repository must not loosen its own confinement.
				d.add(kp, globalOnly)
				continue
			}
			h.Sandbox = d.sandbox(kp, val, h.Sandbox)
		default:
			d.unknown(kp, val)
		}
	}
	d.requireCmd(path, t, h.Cmd)
	if h.Agent == "" {
		h.Agent = agent.Infer(h.Cmd)
	}
	if !restartSet {
		h.Restart = RestartAlways
		if h.Schedule != "" {
			h.Restart = RestartNo
		}
	}
	if h.Schedule != "" {
		// A schedule owns when the job runs; anything that also starts it or
		// keeps it running would fight the scheduler (docs/design/runs.md).
		sp := child(path, "schedule")
		if h.Enabled {
			d.add(sp, "cannot be combined with enabled = true")
		}
		if restartSet && (h.Restart == RestartAlways || h.Restart == RestartUnlessStopped) {
			d.add(sp, "cannot be combined with restart = %q", h.Restart)
		}
	}
	d.checkJob(path, t, h)
	d.checkAgentRun(path, t, h)
	d.checkResources(path, h.Resources)
	d.checkWorktree(path, t, h)
	d.checkSandbox(path, h)
	d.checkBootstrap(path, t, h)
	return h
}

// requireCmd reports a missing or blank cmd under the table's own key, as
// in `harness.toml:14: mcp.broken: cmd is required`.
func (d *decoder) requireCmd(path []string, t map[string]any, cmd string) {
	if strings.TrimSpace(cmd) != "" {
		return
	}
	if _, present := t["cmd"]; present {
		if _, isStr := t["cmd"].(string); !isStr {
			return // already reported as the wrong type
		}
		d.list = append(d.list, &Error{File: d.file, Line: d.pos.line(child(path, "cmd")), Key: keyName(path), Msg: "cmd is required (it is empty)"})
		return
	}
	d.add(path, "cmd is required")
}

// upstream decodes [mcp.KEY] for KEY != "prompts".
func (d *decoder) upstream(key string, v any, project string) *Upstream {
	path := []string{"mcp", key}
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	switch {
	case strings.HasPrefix(key, "harness"):
		d.add(path, "key %q is reserved: it would shadow the facade's harness_* tools", key)
	case !api.ValidNamespace(key):
		d.add(path, `invalid upstream key %q: use lowercase letters, digits and "-"`, key)
	}
	u := &Upstream{
		Key:       key,
		Process:   Process{RestartDelay: DefaultRestartDelay, StopGrace: DefaultStopGrace, Resources: Resources{TasksMax: DefaultTasksMax}},
		Project:   project,
		MaxResult: DefaultMaxResult,
	}
	var gw gatewayRaw
	for _, k := range sortedKeys(t) {
		kp, val := child(path, k), t[k]
		switch {
		case d.processKey(k, kp, val, &u.Process):
		case d.toolKey(k, kp, val, &u.Tools):
		case k == "call_timeout_s":
			// 0 had no documented meaning: leave the key out
			// for the default.
			if u.CallTimeout = d.seconds(kp, val, 0); u.CallTimeout <= 0 && isZero(val) {
				d.add(kp, "must be > 0 seconds (leave it out for the default)")
			}
		case k == "max_result_bytes":
			u.MaxResult = d.byteCount(kp, val, MinMaxResult, MaxMaxResult)
		case d.remoteKey(k, kp, val, u):
		case d.gatewayKey(k, kp, val, u, &gw):
		default:
			d.unknown(kp, val)
		}
	}
	d.finishGateway(path, gw, u)
	d.upstreamTarget(path, t, u)
	d.overlaps(path, u.Tools)
	d.checkResources(path, u.Resources)
	return u
}

// prompts decodes [mcp.prompts].
func (d *decoder) prompts(v any, out *Prompts) {
	path := []string{"mcp", "prompts"}
	t, ok := d.table(path, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(t) {
		kp, val := child(path, k), t[k]
		if k != "paths" {
			d.unknown(kp, val)
			continue
		}
		out.Paths = d.paths(kp, val)
	}
}

// profile decodes [profile.NAME]; members must be known harnesses without
// a schedule.
func (d *decoder) profile(name string, v any, harnesses map[string]*Harness) *Profile {
	path := []string{"profile", name}
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	if !harnessNameRE.MatchString(name) {
		d.add(path, `invalid profile name %q: use letters, digits, "-" and "_"`, name)
	}
	p := &Profile{Name: name, Harnesses: []string{}}
	for _, k := range sortedKeys(t) {
		kp, val := child(path, k), t[k]
		switch k {
		case "harnesses":
			members, _ := d.strs(kp, val)
			for _, m := range members {
				h, known := harnesses[m]
				switch {
				case slices.Contains(p.Harnesses, m):
					d.add(kp, "harness %q is listed twice", m)
					continue
				case !known:
					d.add(kp, "unknown harness %q", m)
				case h.Schedule != "":
					d.add(kp, "harness %q has a schedule, which cannot be combined with profile membership", m)
				}
				p.Harnesses = append(p.Harnesses, m)
			}
		case "autostart":
			p.Autostart = d.boolean(kp, val)
		default:
			d.unknown(kp, val)
		}
	}
	return p
}

// processKey decodes one of the keys [harness.*] and [mcp.*] share into p
// and reports whether k was one of them.
func (d *decoder) processKey(k string, kp []string, val any, p *Process) bool {
	switch k {
	case "cmd":
		p.Cmd, _ = d.str(kp, val)
	case "args":
		p.Args, _ = d.strs(kp, val)
	case "workdir":
		p.Workdir = d.path(kp, val)
	case "env_file":
		p.EnvFile = d.path(kp, val)
	case "env":
		p.Env = d.env(kp, val)
	case "restart_delay":
		p.RestartDelay = d.seconds(kp, val, DefaultRestartDelay)
	case "stop_grace":
		p.StopGrace = d.seconds(kp, val, DefaultStopGrace)
	default:
		return d.resourceKey(k, kp, val, &p.Resources)
	}
	return true
}

// agent decodes agent = "NAME": a registered adapter. A bad value is
// reported and the harness falls back to inference.
func (d *decoder) agent(path []string, v any) string {
	s, ok := d.str(path, v)
	if !ok {
		return ""
	}
	if _, known := agent.Lookup(s); !known {
		names := agent.Names()
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = strconv.Quote(n)
		}
		d.add(path, "unknown agent %q (want one of %s)", s, strings.Join(quoted, ", "))
		return ""
	}
	return s
}

// toolMode decodes mcp_tools and mcp_http_operator_tools.
func (d *decoder) toolMode(path []string, v any) api.ToolMode {
	s, ok := d.str(path, v)
	if !ok {
		return api.ToolsAll
	}
	if m := api.ToolMode(s); m != "" && m.Valid() {
		return m
	}
	d.add(path, `invalid tool mode %q (want "all" or "search")`, s)
	return api.ToolsAll
}

// isZero reports whether a TOML number is 0.
func isZero(v any) bool {
	switch n := v.(type) {
	case int64:
		return n == 0
	case float64:
		return n == 0
	}
	return false
}
