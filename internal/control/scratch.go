package control

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
)

// scratchDescription marks a scratch harness in list and describe.
const scratchDescription = "scratch (harness run): forgotten when it ends"

// Run answers run (docs/design/agents.md, `harness run`): a scratch harness, built
// from the arguments instead of the config file, started once and never
// restarted. It is forgotten when its program ends or it is stopped; a
// reload keeps it while it lives; it is never in the state file, so a
// daemon restart does not bring it back.
func (c *Control) Run(ctx context.Context, a api.RunArgs) (api.RunResult, error) {
	if a.Cmd == "" {
		return api.RunResult{}, errcode.Errorf(errcode.InvalidArgument, "run: a command is required (harness run -- CMD ARGS…)")
	}
	// reconcileMu: no reload may take the name between the check and
	// the unit's registration.
	c.reconcileMu.Lock()
	c.mu.RLock()
	name, err := c.scratchNameLocked(a.Name, a.Cmd)
	c.mu.RUnlock()
	if err != nil {
		c.reconcileMu.Unlock()
		return api.RunResult{}, err
	}
	h, err := config.Scratch(name, a.Cmd, a.Args, a.Workdir)
	if err != nil {
		c.reconcileMu.Unlock()
		return api.RunResult{}, fmt.Errorf("run: %w: %w", err, errcode.ErrInvalidArgument)
	}
	h.Description = scratchDescription
	ucfg, files := c.harnessUnitConfig(name, h)
	c.mu.Lock()
	if c.closing.Load() {
		c.mu.Unlock()
		c.reconcileMu.Unlock()
		return api.RunResult{}, errcode.Errorf(errcode.DaemonUnavailable, "the daemon is shutting down")
	}
	u, err := c.newUnitLocked(name, ucfg)
	if err != nil {
		c.mu.Unlock()
		c.reconcileMu.Unlock()
		return api.RunResult{}, err
	}
	u.scratch = true
	u.setTables(h, nil)
	c.units[name] = u
	c.mu.Unlock()
	c.writeWirings(map[string]unitSpec{name: {wire: files}})
	c.reconcileMu.Unlock()
	c.keepRuns(u)
	if err := c.admit(u, false); err != nil {
		c.forgetScratch(u)
		return api.RunResult{}, err
	}
	if err := c.startUnit(ctx, u, api.CauseManual); err != nil {
		c.forgetScratch(u)
		return api.RunResult{}, fmt.Errorf("run %s: %w", name, err)
	}
	st := u.sup.Status()
	c.log.Info("scratch harness started", logkey.Unit, name, logkey.Run, st.RunID, logkey.PID, st.PID)
	return api.RunResult{Name: name, RunID: st.RunID, PID: st.PID}, nil
}

// scratchNameLocked is the name asked for, refused when a unit or a
// configured harness has it, or one derived from cmd's base name, made
// unique with -2, -3, …. Caller holds c.mu.
func (c *Control) scratchNameLocked(asked, cmd string) (string, error) {
	taken := func(n string) string {
		if _, ok := c.cfg.Harnesses[n]; ok {
			return fmt.Sprintf("a harness of the config file (%s) is named %s; pick another --name", c.cfg.Path, n)
		}
		if u, ok := c.units[n]; ok {
			if u.scratch {
				return fmt.Sprintf("a scratch harness named %s is running; pick another --name", n)
			}
			return fmt.Sprintf("a harness named %s exists; pick another --name", n)
		}
		return ""
	}
	if asked != "" {
		if why := taken(asked); why != "" {
			return "", errcode.Errorf(errcode.InvalidArgument, "run: %s", why)
		}
		return asked, nil
	}
	base := scratchBase(cmd)
	for i := 1; ; i++ {
		n := base
		if i > 1 {
			n = fmt.Sprintf("%s-%d", base, i)
		}
		if taken(n) == "" {
			return n, nil
		}
	}
}

// scratchBase derives a harness name from a command: its base name with
// every character a name may not have turned into '-'.
func scratchBase(cmd string) string {
	b := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, filepath.Base(cmd))
	if b = strings.Trim(b, "-"); b == "" {
		b = "run"
	}
	return b
}

// scratchEnded forgets a scratch harness whose state says it has no
// process and will get none. It runs on the unit's actor goroutine, so
// the forgetting (which takes c.mu and waits for the actor) runs apart.
func (c *Control) scratchEnded(u *unit, ev supervise.Event) {
	if !u.scratch || ev.Kind != supervise.EventState || u.sup.Status().State.Active() {
		return
	}
	go c.goBackground(func() { c.forgetScratch(u) })
}

// forgetScratch unregisters a scratch harness and retires its supervisor
// and log; its runs stay in the history. Idempotent.
func (c *Control) forgetScratch(u *unit) {
	c.mu.Lock()
	if c.closing.Load() || c.units[u.name] != u {
		c.mu.Unlock()
		return
	}
	u.gone.Store(true)
	delete(c.units, u.name)
	c.retiring.Add(1) // under c.mu, closing not set: Close cannot be waiting yet
	c.mu.Unlock()
	c.retire([]*unit{u})
	c.log.Info("scratch harness forgotten", logkey.Unit, u.name)
}

// refuseScratchRestart: a scratch harness is never restarted (docs/design/agents.md).
func refuseScratchRestart(u *unit) error {
	if u.scratch {
		return errcode.Errorf(errcode.InvalidArgument, "%s is a scratch harness (harness run): it is never restarted; run it again", u.name)
	}
	return nil
}

// scratchClashLocked refuses a configuration that declares a harness named
// like a scratch harness that still runs. Caller holds c.mu.
func (c *Control) scratchClashLocked(cfg *config.Config) error {
	for _, name := range sortedKeys(c.units) {
		if c.units[name].scratch {
			if _, ok := cfg.Harnesses[name]; ok {
				return errcode.Errorf(errcode.ConfigInvalid, "%s: harness.%s: the name is taken by a scratch harness (harness run) that still runs; stop it first", cfg.Path, name)
			}
		}
	}
	return nil
}
