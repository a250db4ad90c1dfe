package control

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/supervise"
)

// A gateway you can trust (docs/gateway.md): the broker pins upstream
// tools and applies rate limits; control finds the upstream an operator
// names, applies the harnesses' mcp_rate, and turns a held-back tool
// into a tool_changed event (and with it a notification).

// UpstreamPins is what the broker offers for `mcp_pins` and `mcp_approve`;
// an UpstreamHooks without it pins nothing.
type UpstreamPins interface {
	Pins(unit string, diff bool) (api.MCPPinsResult, error)
	Approve(unit, tool string) (api.MCPApproveResult, error)
}

// callerRates is an UpstreamHooks that applies per-harness rates.
type callerRates interface {
	SetCallerRates(map[string]api.Rate)
}

// MCPPins answers `mcp_pins`: an upstream's pinned tools and the ones
// held back, with a diff of each change when asked.
func (c *Control) MCPPins(_ context.Context, a api.MCPPinsArgs) (api.MCPPinsResult, error) {
	u, p, err := c.pinnedUpstream(a.Key)
	if err != nil {
		return api.MCPPinsResult{}, err
	}
	return p.Pins(u.name, a.Diff)
}

// MCPApprove answers `mcp_approve`: the named held tool, or every one,
// is pinned as the upstream lists it now and served again.
func (c *Control) MCPApprove(_ context.Context, a api.MCPApproveArgs) (api.MCPApproveResult, error) {
	u, p, err := c.pinnedUpstream(a.Key)
	if err != nil {
		return api.MCPApproveResult{}, err
	}
	res, err := p.Approve(u.name, a.Tool)
	if err != nil {
		return api.MCPApproveResult{}, err
	}
	if len(res.Approved) > 0 {
		u.log.Event(u.sup.Status().RunID, "approved tools: "+strings.Join(res.Approved, ", "))
	}
	return res, nil
}

// pinnedUpstream finds the upstream KEY or PROJECT/KEY.
func (c *Control) pinnedUpstream(key string) (*unit, UpstreamPins, error) {
	if key == "" {
		return nil, nil, errcode.Errorf(errcode.InvalidArgument, "an upstream key is required")
	}
	project, k, ok := strings.Cut(key, "/")
	if !ok {
		project, k = "", key
	}
	u, err := c.lookup(UpstreamUnitName(project, k))
	if err != nil || u.kind != supervise.KindUpstream || u.upstream() == nil {
		return nil, nil, errcode.Errorf(errcode.UnknownNamespace, "no upstream %s", errcode.Quote(key))
	}
	p, ok := c.opt.Upstreams.(UpstreamPins)
	if !ok {
		return nil, nil, errcode.Errorf(errcode.Internal, "this daemon keeps no tool pins")
	}
	return u, p, nil
}

// ToolChanged publishes that the upstream unit holds back tool: changed
// (what lists the fields) or new under pin = "strict". It is the broker's
// report (Options.OnToolChanged) and must not block: publish never does.
func (c *Control) ToolChanged(unitName, key, tool, state string, what []string) {
	msg := fmt.Sprintf("tool %s of upstream %s is new and held until approved", tool, key)
	if state == api.PinChanged {
		msg = fmt.Sprintf("tool %s of upstream %s changed (%s) and is quarantined until approved", tool, key, strings.Join(what, ", "))
	}
	c.mu.RLock()
	u := c.units[unitName]
	c.mu.RUnlock()
	var run uint64
	if u != nil {
		st := u.sup.Status()
		run = st.RunID
		u.log.Event(run, msg)
	}
	c.publish(api.Event{Kind: api.EventToolChanged, Unit: unitName, RunID: run, Message: msg, Time: time.Now()})
}

// applyCallerRates hands the broker every harness's mcp_rate.
func (c *Control) applyCallerRates() {
	cr, ok := c.opt.Upstreams.(callerRates)
	if !ok {
		return
	}
	rates := map[string]api.Rate{}
	c.mu.RLock()
	for name, u := range c.units {
		if h := u.harness(); h != nil && h.MCPRate.PerSecond > 0 {
			rates[name] = h.MCPRate
		}
	}
	c.mu.RUnlock()
	cr.SetCallerRates(rates)
}
