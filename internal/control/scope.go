package control

import (
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

// HarnessGrant returns the grant in force for the MCP sessions of a
// harness (global NAME or PROJECT/NAME): its mcp_allow for a global
// harness, the project rule for a project's (config.Project.Grant). False
// when no such harness is configured.
func (c *Control) HarnessGrant(name string) (api.Grant, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u, ok := c.units[name]
	if !ok || u.harness() == nil {
		return api.Grant{}, false
	}
	return c.grantLocked(u.harness()), true
}

// grantLocked is h's grant. Caller holds c.mu (read or write).
func (c *Control) grantLocked(h *config.Harness) api.Grant {
	if h.Project == "" {
		return h.MCPAllow
	}
	if p := c.projects[h.Project]; p != nil {
		return p.Grant()
	}
	// The project is going down: its harnesses are being retired.
	return api.DefaultGrant()
}

// grantView is describe's effective grant of h: its classes in the facade
// and in every upstream its sessions see (the global ones, plus its
// project's own).
func (c *Control) grantView(h *config.Harness) map[string][]api.Class {
	c.mu.RLock()
	defer c.mu.RUnlock()
	namespaces := []string{api.FacadeNamespace}
	for _, u := range c.units {
		if up := u.upstream(); up != nil && (up.Project == "" || up.Project == h.Project) {
			namespaces = append(namespaces, up.Key)
		}
	}
	return c.grantLocked(h).PerNamespace(namespaces)
}
