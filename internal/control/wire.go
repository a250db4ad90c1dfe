package control

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
)

// wireAgent gives a harness of a known agent what its runs need to reach
// harness (docs/design/agents.md): its MCP server as "harness" unless mcp_wire is
// false, and the hook configuration calling `harness hook` unless hooks
// is false, in the agent's own format (agent.Adapter.Wiring). The wiring's arguments go
// before the harness's own, its variables after the daemon's, and its
// files, returned, go into STATE/agents/NAME once the configuration they
// belong to is taken (writeWirings): a reload that is refused writes
// none. A wiring that fails is logged and left out: the agent still runs,
// unwired.
func (c *Control) wireAgent(name string, h *config.Harness, uc *supervise.UnitConfig) []agent.File {
	if c.opt.Exe == "" {
		return nil
	}
	a := agent.MustLookup(h.Agent)
	if a.Wiring == nil && a.NoWiring != "" && h.MCPWire {
		c.log.Info("agent wiring left out", logkey.Unit, name, logkey.Reason, a.NoWiring)
		return nil
	}
	spec := agent.WireSpec{
		Harness: name, Exe: c.opt.Exe, MCP: h.MCPWire, Hooks: h.Hooks,
		Env: h.Env, ReadFile: os.ReadFile,
		Home: c.agentHome(h), Workdir: c.agentWorkdir(name, h), Args: h.Args,
	}
	spec.Dir = c.agentDir(name)
	w, err := a.Wire(spec)
	if err != nil {
		c.log.Warn("agent wiring left out", logkey.Unit, name, logkey.Err, err)
		return nil
	}
	if len(w.Args) > 0 {
		uc.Args = append(slices.Clone(w.Args), uc.Args...)
	}
	uc.ExtraEnv = append(uc.ExtraEnv, w.Env...)
	return w.Files
}

// writeWirings writes the wiring files of the harnesses of a configuration
// that was just taken. The caller holds reconcileMu (and not mu): retire
// checks under it whether a removed harness came back before it removes
// the harness's files, so a harness removed and added again keeps the
// files its new unit was given.
func (c *Control) writeWirings(specs map[string]unitSpec) {
	for _, name := range sortedKeys(specs) {
		if files := specs[name].wire; len(files) > 0 {
			if err := writeWiring(files); err != nil {
				c.log.Warn("agent wiring files not written", logkey.Unit, name, logkey.Err, err)
			}
		}
	}
}

// agentDir is where a harness's wiring files go (WireSpec.Dir): "" with
// no state dir.
func (c *Control) agentDir(name string) string {
	if c.opt.Paths.StateDir == "" {
		return ""
	}
	return filepath.Join(c.opt.Paths.StateDir, "agents", name)
}

// unwire removes what wireAgent wrote for a harness that is gone (removed
// from the configuration, a forgotten scratch harness, every harness when
// the daemon stops), once its agent has ended: nothing harness wrote for
// an agent outlives the harness.
func (c *Control) unwire(name string) {
	dir := c.agentDir(name)
	if dir == "" {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		c.log.Warn("agent wiring not removed", logkey.Unit, name, logkey.Err, err)
		return
	}
	if parent := filepath.Dir(dir); parent != filepath.Join(c.opt.Paths.StateDir, "agents") {
		_ = os.Remove(parent) // a project's folder, once empty
	}
}

// unwireDone removes STATE/agents once every harness's wiring is gone
// (the daemon stopping).
func (c *Control) unwireDone() {
	if c.opt.Paths.StateDir != "" {
		_ = os.Remove(filepath.Join(c.opt.Paths.StateDir, "agents")) // only if empty
	}
}

// writeWiring writes a wiring's files (private to the daemon's user).
func writeWiring(files []agent.File) error {
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			return err
		}
		tmp := f.Path + ".tmp"
		if err := os.WriteFile(tmp, f.Data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, f.Path); err != nil {
			return err
		}
	}
	return nil
}
