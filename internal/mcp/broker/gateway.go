package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/pins"
	"github.com/harness-dev/harness/internal/ratelimit"
)

// A gateway you can trust (docs/gateway.md): the broker checks every
// listing against the pins (Options.Pins) and holds back what changed,
// and takes a token from each rate limit a call falls under before the
// call leaves. Both checks sit in resolve, the one step every tools/call
// takes on its way to an upstream (Call, StartFast and through them the
// sessions' direct calls, harness_call_tool and the byte fast path).

// ToolChange is a tool a listing held back: changed since its pin, or
// new where pin = "strict" holds new tools (Options.OnToolChanged).
type ToolChange struct {
	Unit, Key, Project string
	// Tool is the upstream's own name for it.
	Tool    string
	State   string   // api.PinChanged or api.PinNew
	Changed []string // what differs (changed only)
}

// callerKey carries the calling harness in a call's context.
type callerKey struct{}

// WithCaller marks ctx as a call made for harness, so its mcp_rate
// applies (SetCallerRates). No caller, no per-harness limit.
func WithCaller(ctx context.Context, harness string) context.Context {
	if harness == "" {
		return ctx
	}
	return context.WithValue(ctx, callerKey{}, harness)
}

// SetCallerRates replaces the per-harness rates (mcp_rate) by harness
// name; a harness not in rates is not limited.
func (b *Broker) SetCallerRates(rates map[string]api.Rate) {
	b.mu.Lock()
	b.callerRates = maps.Clone(rates)
	b.mu.Unlock()
	b.forgetBuckets()
}

// limits are the buckets a call of tool on u for harness takes from.
// Caller holds b.mu.
func (b *Broker) limitsLocked(u *upstream, tool, harness string) []ratelimit.Want {
	var ws []ratelimit.Want
	if r := u.rate; r.PerSecond > 0 {
		ws = append(ws, ratelimit.Want{Key: "upstream\x00" + u.unit, Limit: ratelimit.Limit(r)})
	}
	if r, ok := u.toolRates[tool]; ok && r.PerSecond > 0 {
		ws = append(ws, ratelimit.Want{Key: "tool\x00" + u.unit + "\x00" + tool, Limit: ratelimit.Limit(r)})
	}
	if r, ok := b.callerRates[harness]; ok && harness != "" && r.PerSecond > 0 {
		ws = append(ws, ratelimit.Want{Key: "harness\x00" + harness, Limit: ratelimit.Limit(r)})
	}
	return ws
}

// admit takes a token from each of ws, or answers rate_limited naming
// the limit and when to retry. It never blocks.
func (b *Broker) admit(ws []ratelimit.Want, key, tool string) error {
	if len(ws) == 0 {
		return nil
	}
	ok, wait, which := b.limiter.Take(b.opts.Now(), ws...)
	if ok {
		return nil
	}
	b.rateLimited.Add(1)
	what, name, _ := strings.Cut(which, "\x00")
	switch what {
	case "upstream":
		what = fmt.Sprintf("[mcp.%s] rate", key)
	case "tool":
		what = fmt.Sprintf("[mcp.%s] tools.%s rate", key, tool)
	default:
		what = fmt.Sprintf("harness %s's mcp_rate", name)
	}
	err := errcode.ErrRateLimited.Errorf("broker: upstream %s: tools/call %s: over %s; retry after %dms", key, tool, what, max(wait.Milliseconds(), 1))
	return &errcode.RetryAfter{After: wait, Err: err}
}

// forgetBuckets drops the buckets of limits no longer configured, so the
// limiter's memory follows the configuration.
func (b *Broker) forgetBuckets() {
	b.mu.Lock()
	keep := map[string]bool{}
	for _, u := range b.ups {
		keep["upstream\x00"+u.unit] = true
		for t := range u.toolRates {
			keep["tool\x00"+u.unit+"\x00"+t] = true
		}
	}
	for h := range b.callerRates {
		keep["harness\x00"+h] = true
	}
	b.mu.Unlock()
	b.limiter.Forget(func(k string) bool { return keep[k] })
}

// RateLimited is how many calls a rate limit refused since New.
func (b *Broker) RateLimited() uint64 { return b.rateLimited.Load() }

// checkPins compares u's listing set (by the upstream's own names) with
// its pins and returns what it holds back. Called without b.mu: it may
// write the pins file.
func (b *Broker) checkPins(u *upstream, mode api.PinMode, set map[string]*mcp.Tool) map[string]pins.Held {
	if b.opts.Pins == nil {
		return nil
	}
	held, err := b.opts.Pins.Check(u.unit, mode, set)
	if err != nil {
		b.log.Error("broker: recording tool pins", logkey.Unit, u.unit, logkey.Err, err)
	}
	return held
}

// setHeldLocked installs held as u's held-back tools and returns the
// tools newly held, for events. Caller holds b.mu.
func (b *Broker) setHeldLocked(u *upstream, held map[string]pins.Held) []ToolChange {
	var out []ToolChange
	for _, name := range slices.Sorted(maps.Keys(held)) {
		h := held[name]
		if old, was := u.held[name]; was && old.State == h.State && slices.Equal(old.Changed, h.Changed) {
			continue
		}
		out = append(out, ToolChange{Unit: u.unit, Key: u.key, Project: u.project, Tool: name, State: h.State, Changed: h.Changed})
	}
	u.held = held
	return out
}

// announce logs and reports tools newly held back.
func (b *Broker) announce(changes []ToolChange) {
	for _, c := range changes {
		b.log.Warn("broker: upstream tool held back until approved", logkey.Unit, c.Unit, logkey.Tool, c.Tool,
			logkey.State, c.State, logkey.Note, strings.Join(c.Changed, ","))
		if b.opts.OnToolChanged != nil {
			b.opts.OnToolChanged(c)
		}
	}
}

// repin re-checks u's last listing against its pins (after a pin mode
// change or an approval) and installs the outcome.
func (b *Broker) repin(u *upstream) {
	b.mu.Lock()
	all, mode := u.own(), u.pin
	b.mu.Unlock()
	if all == nil {
		return
	}
	held := b.checkPins(u, mode, all)
	b.mu.Lock()
	changes := b.setHeldLocked(u, held)
	changed := b.installLocked(u)
	b.bump()
	b.mu.Unlock()
	b.announce(changes)
	if changed {
		b.fire()
	}
}

// own is u's last listing by the upstream's own names (nil before the
// first). Caller holds b.mu.
func (u *upstream) own() map[string]*mcp.Tool {
	if !u.listed {
		return nil
	}
	return maps.Clone(u.all)
}

// quarantined answers a call of a held-back tool. Caller holds b.mu.
func quarantined(u *upstream, tool string) error {
	h, ok := u.held[tool]
	if !ok {
		return nil
	}
	return errcode.ErrToolQuarantined.Errorf("broker: upstream %s: tool %s is quarantined: %s; the operator may run `harness mcp pins %s --diff` and `harness mcp approve %s %s`",
		u.key, tool, h.Why(), unitKey(u), unitKey(u), tool)
}

// unitKey is how the CLI names u: KEY, or PROJECT/KEY.
func unitKey(u *upstream) string {
	if u.project != "" {
		return u.project + "/" + u.key
	}
	return u.key
}

// Pins answers `mcp_pins` for unit: its pin set against its listing.
func (b *Broker) Pins(unit string, diff bool) (api.MCPPinsResult, error) {
	b.mu.Lock()
	u := b.ups[unit]
	if u == nil {
		b.mu.Unlock()
		return api.MCPPinsResult{}, errcode.Errorf(errcode.UnknownNamespace, "no upstream %s", errcode.Quote(unit))
	}
	all, held, mode := u.own(), maps.Clone(u.held), cmpPin(u.pin)
	res := api.MCPPinsResult{Key: unitKey(u), Mode: mode}
	b.mu.Unlock()
	if b.opts.Pins == nil {
		res.Pins = []api.ToolPin{}
		return res, nil
	}
	res.Warning = b.opts.Pins.Warning()
	res.Pins = b.opts.Pins.List(unit, all, held, diff)
	return res, nil
}

// Approve answers `mcp_approve`: tool ("" for every one) of unit's held
// tools is pinned as listed now and served again.
func (b *Broker) Approve(unit, tool string) (api.MCPApproveResult, error) {
	b.mu.Lock()
	u := b.ups[unit]
	if u == nil {
		b.mu.Unlock()
		return api.MCPApproveResult{}, errcode.Errorf(errcode.UnknownNamespace, "no upstream %s", errcode.Quote(unit))
	}
	all, heldNames := u.own(), slices.Sorted(maps.Keys(u.held))
	key := unitKey(u)
	b.mu.Unlock()
	names := heldNames
	if tool != "" {
		if !slices.Contains(heldNames, tool) {
			list := "none"
			if len(heldNames) > 0 {
				list = strings.Join(heldNames, ", ")
			}
			return api.MCPApproveResult{}, errcode.ErrNotFound.Errorf("upstream %s has no quarantined tool %s (quarantined: %s)", key, errcode.Quote(tool), list)
		}
		names = []string{tool}
	}
	if b.opts.Pins == nil || len(names) == 0 {
		return api.MCPApproveResult{Key: key, Approved: []string{}}, nil
	}
	if err := b.opts.Pins.Approve(unit, all, names); err != nil {
		return api.MCPApproveResult{}, fmt.Errorf("broker: approve %s: %v: %w", key, err, errcode.ErrInternal)
	}
	b.log.Info("broker: upstream tools approved", logkey.Unit, unit, logkey.Tools, strings.Join(names, ","))
	b.repin(u)
	return api.MCPApproveResult{Key: key, Approved: names}, nil
}

// cmpPin is m with the default filled in.
func cmpPin(m api.PinMode) api.PinMode {
	if m == "" {
		return api.PinChanges
	}
	return m
}
