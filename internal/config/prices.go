package config

import (
	"math"
	"strings"

	"github.com/harness-dev/harness/internal/agent"
)

// prices decodes a harness's `prices` table (docs/design/agents.md: the price table
// is per adapter, overridable per harness): a model-name prefix to its
// USD per million tokens, e.g.
//
//	prices = { "claude-opus" = { input = 15, output = 75, cache_read = 1.5, cache_write = 18.75 } }
//
// A key left out of a model's table is free. The table is consulted
// before the adapter's (agent.Adapter.Cost), longest prefix first.
func (d *decoder) prices(path []string, v any) map[string]agent.Price {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	out := make(map[string]agent.Price, len(t))
	for _, model := range sortedKeys(t) {
		mp := child(path, model)
		if strings.TrimSpace(model) == "" {
			d.add(mp, "a model name (prefix) must not be empty")
			continue
		}
		mt, ok := d.table(mp, t[model])
		if !ok {
			continue
		}
		var p agent.Price
		for _, k := range sortedKeys(mt) {
			kp := child(mp, k)
			var f *float64
			switch k {
			case "input":
				f = &p.Input
			case "output":
				f = &p.Output
			case "cache_read":
				f = &p.CacheRead
			case "cache_write":
				f = &p.CacheWrite
			default:
				d.add(kp, `unknown key (want "input", "output", "cache_read" or "cache_write", USD per million tokens)`)
				continue
			}
			*f = d.usdPerMtok(kp, mt[k])
		}
		out[model] = p
	}
	return out
}

// usdPerMtok decodes a price: a non-negative finite number.
func (d *decoder) usdPerMtok(path []string, v any) float64 {
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		d.add(path, "must be a number (USD per million tokens), not %s", tomlType(v))
		return 0
	}
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		d.add(path, "%v is not a price (want a number ≥ 0, USD per million tokens)", f)
		return 0
	}
	return f
}
