package control

import "github.com/harness-dev/harness/internal/logkey"

// UpstreamStarted tells the supervisor of upstream unit whether run
// completed its MCP initialize (err nil) or never will: a failure ends the
// run as a failed start. A unit that left the config meanwhile is skipped.
func (c *Control) UpstreamStarted(unit string, run uint64, err error) {
	u, lerr := c.lookup(unit)
	if lerr != nil {
		c.log.Debug("upstream start reported for an unknown unit", logkey.Unit, unit, logkey.Run, run)
		return
	}
	u.sup.Started(run, err)
}
