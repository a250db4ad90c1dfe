package agent

import "strings"

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// Cost is what usage of model cost by the adapter's price table (the
// longest model-name prefix with a price wins), and false when the table
// has no price for model. prices, when set, overrides the adapter's.
func (a *Adapter) Cost(model string, u Usage, prices map[string]Price) (float64, bool) {
	p, ok := pick(prices, model)
	if !ok {
		p, ok = pick(a.Prices, model)
	}
	if !ok {
		return 0, false
	}
	return (float64(u.Input)*p.Input + float64(u.Output)*p.Output +
		float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite) / 1e6, true
}

func pick(prices map[string]Price, model string) (Price, bool) {
	best, bestLen, found := Price{}, -1, false
	for prefix, p := range prices {
		if strings.HasPrefix(model, prefix) && len(prefix) > bestLen {
			best, bestLen, found = p, len(prefix), true
		}
	}
	return best, found
}

// TranscriptCost is what a transcript's session cost: by prices (the
// harness's own table) when it names the model, else as the agent's own
// records say (pi and Cline write each request's cost), else by the
// adapter's price table.
func (a *Adapter) TranscriptCost(t Transcript, prices map[string]Price) (float64, bool) {
	if _, ok := pick(prices, t.Model); ok {
		return a.Cost(t.Model, t.Usage, prices)
	}
	if t.CostKnown {
		return t.CostUSD, true
	}
	return a.Cost(t.Model, t.Usage, nil)
}
