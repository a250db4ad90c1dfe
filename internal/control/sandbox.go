package control

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/sandbox"
)

// sandboxPolicy is what h's sandbox asks of each run (docs/sandbox.md):
// the configured keys, the default deny list with the daemon's state
// directory (every harness's worktree and wiring is below it), the
// agent's own state paths, a private /tmp (or TMPDIR), the socket to
// keep in sight, and the agent's model API for network =
// "allow".
func (c *Control) sandboxPolicy(name string, h *config.Harness) sandbox.Policy {
	s := h.Sandbox
	if !s.Active() {
		return sandbox.Policy{}
	}
	pol := sandbox.Policy{FS: s.FS, Network: s.Network, Allow: slices.Clone(s.Allow), RW: slices.Clone(s.RW), Required: s.Required}
	pol.Deny = append(slices.Clone(config.DefaultDeny), s.Deny...)
	if state := c.opt.Paths.StateDir; state != "" {
		pol.Deny = append(pol.Deny, state)
		pol.TmpDir = filepath.Join(state, "sandbox", logs.EscapeUnit(name), "tmp")
		if dir := c.agentDir(name); dir != "" {
			pol.Read = append(pol.Read, dir) // its wiring: MCP config, hooks
		}
	}
	if sock := c.opt.SocketPath; sock != "" {
		// Its `harness mcp` and hooks dial the socket: a private /tmp
		// must not hide it.
		pol.Keep = append(pol.Keep, sock)
	}
	ad := agent.MustLookup(h.Agent)
	pol.StateDirs, pol.StateFiles = slices.Clone(ad.Sandbox.State), slices.Clone(ad.Sandbox.StateFiles)
	if s.Network == sandbox.NetAllow && s.AllowAgentAPI {
		if api := agentAPI(ad.Sandbox, h.Env); api != "" && !slices.Contains(pol.Allow, api) {
			pol.Allow = append(pol.Allow, api)
		}
	}
	return pol
}

// agentAPI is the host:port of the agent's model API: the first of its
// base-URL variables set (the harness's env, else the daemon's), else its
// default; "" for an agent without one.
func agentAPI(n agent.SandboxNeeds, env map[string]string) string {
	for _, k := range n.APIEnv {
		v, ok := env[k]
		if !ok {
			v = os.Getenv(k)
		}
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Hostname() == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = "443"
			if u.Scheme == "http" {
				port = "80"
			}
		}
		return net.JoinHostPort(u.Hostname(), port)
	}
	return n.DefaultAPI
}
