package config

import (
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/ratelimit"
)

// The gateway keys of [mcp.KEY] (docs/gateway.md): pin, rate, burst and
// tools (per-tool rates), and [harness.NAME] mcp_rate.

// maxBurst bounds a configured burst: a bucket is a float, but a burst in
// the millions is a typo, not a limit.
const maxBurst = 1_000_000

// gatewayKey decodes one of the gateway keys of [mcp.KEY] into u and
// reports whether k was one of them. rate and burst are combined by
// finishGateway once the table is read.
func (d *decoder) gatewayKey(k string, kp []string, val any, u *Upstream, g *gatewayRaw) bool {
	switch k {
	case "pin":
		if s, ok := d.str(kp, val); ok {
			if m := api.PinMode(s); s != "" && m.Valid() {
				u.Pin = m
			} else {
				d.add(kp, `invalid pin mode %q (want "off", "changes" or "strict")`, s)
			}
		}
	case "rate":
		g.rate, g.ratePath, _ = strOr(d, kp, val)
	case "burst":
		g.burst = d.count(kp, val, 1, maxBurst)
	case "tools":
		u.ToolRates = d.toolRates(kp, val)
	default:
		return false
	}
	return true
}

// gatewayRaw is what finishGateway combines: rate and burst come as two
// keys but make one limit.
type gatewayRaw struct {
	rate     string
	ratePath []string
	burst    int
}

// finishGateway sets u.Rate from rate and burst.
func (d *decoder) finishGateway(path []string, g gatewayRaw, u *Upstream) {
	switch {
	case g.ratePath != nil:
		u.Rate = d.rate(g.ratePath, g.rate, g.burst)
	case g.burst != 0:
		d.add(child(path, "burst"), "burst needs a rate")
	}
}

// toolRates decodes tools = { NAME = { rate = "2/s", burst = 2 } }.
func (d *decoder) toolRates(path []string, v any) map[string]api.Rate {
	out := map[string]api.Rate{}
	for name, tv := range d.subtables(path, v) {
		tp := child(path, name)
		t, ok := d.table(tp, tv)
		if !ok {
			continue
		}
		var g gatewayRaw
		for _, k := range sortedKeys(t) {
			kp := child(tp, k)
			switch k {
			case "rate":
				g.rate, g.ratePath, _ = strOr(d, kp, t[k])
			case "burst":
				g.burst = d.count(kp, t[k], 1, maxBurst)
			default:
				d.unknown(kp, t[k])
			}
		}
		if g.ratePath == nil {
			d.add(tp, "rate is required")
			continue
		}
		out[name] = d.rate(g.ratePath, g.rate, g.burst)
	}
	return out
}

// rate parses a rate string with its burst; an error names the key's
// file:line.
func (d *decoder) rate(path []string, s string, burst int) api.Rate {
	l, err := ratelimit.Parse(s, burst)
	if err != nil {
		d.add(path, "%v", err)
		return api.Rate{}
	}
	return api.Rate(l)
}

// strOr decodes a string key and returns it with its path (nil when the
// value is not a string, which is reported).
func strOr(d *decoder, kp []string, val any) (string, []string, bool) {
	s, ok := d.str(kp, val)
	if !ok {
		return "", nil, false
	}
	return s, kp, true
}
