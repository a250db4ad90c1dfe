package control

// Ownership says how the daemon holds its units' process trees, for
// daemon_info: "cgroup" (a cgroup v2 leaf per run) or "fallback" (process
// groups, markers and ancestry tracking), and why.
type Ownership struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
	// Cgroup is the daemon's subtree in cgroup mode.
	Cgroup string `json:"cgroup,omitempty"`
}

// UpstreamStarted tells the supervisor of upstream unit whether run
// completed its MCP initialize (err nil) or never will: a failure ends the
// run as a failed start. A unit that left the config meanwhile is skipped.
func (c *Control) UpstreamStarted(unit string, run uint64, err error) {
	u, lerr := c.lookup(unit)
	if lerr != nil {
		c.log.Debug("upstream start reported for an unknown unit", "unit", unit, "run", run)
		return
	}
	u.sup.Started(run, err)
}
