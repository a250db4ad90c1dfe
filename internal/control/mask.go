package control

import (
	"slices"
	"strings"

	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/supervise"
)

// Masker is the daemon's one masker (docs/design/masking.md), nil-safe: what every
// door that renders text for a reader passes that text through
// (notifications, process-upstream results).
func (c *Control) Masker() *mask.Masker { return c.opt.Masker }

// refreshMask loads the masker with the secrets of the fleet as it is
// now: every value of every unit's env_file (harnesses and upstreams, all
// scopes), and every header value of a remote upstream, expanded as a
// connect would. Called after each configuration takes effect, before
// anything it adds starts. Files are read without c.mu; an unreadable
// env_file adds nothing (its unit fails to spawn, saying why).
func (c *Control) refreshMask() {
	if c.opt.Masker == nil {
		return
	}
	var procs []config.Process
	var ups []*config.Upstream
	c.mu.RLock()
	for _, u := range c.units {
		if h := u.harness(); h != nil {
			procs = append(procs, h.Process)
		} else if up := u.upstream(); up != nil {
			procs = append(procs, up.Process)
			if up.URL != "" {
				ups = append(ups, up)
			}
		}
	}
	c.mu.RUnlock()
	var secrets []string
	files := map[string][]string{}
	for _, p := range procs {
		if p.EnvFile == "" {
			continue
		}
		if _, done := files[p.EnvFile]; done {
			continue
		}
		kvs, err := supervise.ParseEnvFile(p.EnvFile)
		if err != nil {
			files[p.EnvFile] = nil
			continue
		}
		files[p.EnvFile] = kvs
		for _, kv := range kvs {
			if _, v, ok := strings.Cut(kv, "="); ok {
				secrets = append(secrets, v)
			}
		}
	}
	for _, up := range ups {
		vars := map[string]string{}
		for _, kv := range files[up.EnvFile] {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		for k, v := range up.Env {
			vars[k] = v
		}
		t, err := endpoint.Resolve(up.URL, up.Headers, func(n string) (string, bool) { v, ok := vars[n]; return v, ok })
		if err != nil {
			// A header that cannot be expanded yet: its literal parts
			// are still secrets.
			for _, v := range up.Headers {
				secrets = append(secrets, v)
			}
			continue
		}
		secrets = append(secrets, t.Secrets...)
	}
	c.maskMu.Lock()
	defer c.maskMu.Unlock()
	c.maskBase = secrets
	c.maskSeen = map[string]struct{}{}
	for _, v := range secrets {
		c.maskSeen[v] = struct{}{}
	}
	for _, v := range c.maskExtra {
		c.maskSeen[v] = struct{}{}
	}
	c.opt.Masker.Set(append(slices.Clone(secrets), c.maskExtra...))
}

// maskSpawnSecrets adds the secrets a spawn reads (an env_file changed
// since the last applied configuration, a rotated token) to the masker
// before the program starts, so they are masked from its first line on.
// It runs on the unit's actor: a value already masked costs a map lookup;
// only a new one rebuilds the masker. Values first seen at a spawn stay
// masked across reloads (a rotated-out token is still a secret).
func (c *Control) maskSpawnSecrets(values []string) {
	if c.opt.Masker == nil {
		return
	}
	c.maskMu.Lock()
	defer c.maskMu.Unlock()
	if c.maskSeen == nil {
		c.maskSeen = map[string]struct{}{}
	}
	added := false
	for _, v := range values {
		if len(v) < mask.MinLen {
			continue
		}
		if _, ok := c.maskSeen[v]; ok {
			continue
		}
		c.maskSeen[v] = struct{}{}
		c.maskExtra = append(c.maskExtra, v)
		added = true
	}
	if added {
		c.opt.Masker.Set(append(slices.Clone(c.maskBase), c.maskExtra...))
	}
}
