package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/agent"
)

// TestScenario_AHarnessPricesItsModels: a harness's prices table parses
// to USD per million tokens per model prefix (integers and floats, keys
// left out free), and Cost takes it over the adapter's own table.
func TestScenario_AHarnessPricesItsModels(t *testing.T) {
	cfg, err := Parse("/d/harness.toml", []byte(`
[harness.a]
cmd = "claude"
prices = { "claude-opus-5" = { input = 10, output = 50.5, cache_read = 1, cache_write = 12.5 }, "claude-haiku" = { output = 2 } }
`))
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.Harnesses["a"]
	want := map[string]agent.Price{
		"claude-opus-5": {Input: 10, Output: 50.5, CacheRead: 1, CacheWrite: 12.5},
		"claude-haiku":  {Output: 2},
	}
	if len(h.Prices) != len(want) || h.Prices["claude-opus-5"] != want["claude-opus-5"] || h.Prices["claude-haiku"] != want["claude-haiku"] {
		t.Fatalf("prices %+v", h.Prices)
	}
	ad := agent.MustLookup(h.Agent)
	cost, ok := ad.Cost("claude-opus-5-5", agent.Usage{Input: 1e6, Output: 2e6, CacheRead: 1e6, CacheWrite: 1e6}, h.Prices)
	if !ok || cost != 10+101+1+12.5 {
		t.Fatalf("cost %v %v", cost, ok)
	}
	if _, ok := ad.Cost("claude-opus-5-5", agent.Usage{Input: 1}, nil); ok {
		t.Fatal("the adapter's own table prices the scripted model: the override test proves nothing")
	}
	if cfg, err := Parse("/d/harness.toml", []byte("[harness.b]\ncmd = 'claude'\n")); err != nil || cfg.Harnesses["b"].Prices != nil {
		t.Fatalf("no prices key: %v %+v", err, cfg)
	}
}

func TestScenario_BadPricesNameFileAndLine(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"not a table", "[harness.a]\ncmd='claude'\nprices = 3\n", `harness.toml:3: harness.a.prices: must be a table, not an integer`},
		{"unknown key", "[harness.a]\ncmd='claude'\n[harness.a.prices.m]\ninput = 1\nprompt = 2\n",
			`harness.toml:5: harness.a.prices.m.prompt: unknown key (want "input", "output", "cache_read" or "cache_write", USD per million tokens)`},
		{"negative", "[harness.a]\ncmd='claude'\n[harness.a.prices.m]\noutput = -1\n",
			`harness.toml:4: harness.a.prices.m.output: -1 is not a price (want a number ≥ 0, USD per million tokens)`},
		{"a string", "[harness.a]\ncmd='claude'\n[harness.a.prices.m]\ninput = '3'\n",
			`harness.toml:4: harness.a.prices.m.input: must be a number (USD per million tokens), not a string`},
		{"empty model", "[harness.a]\ncmd='claude'\n[harness.a.prices.'']\ninput = 3\n",
			`harness.toml:3: harness.a.prices."": a model name (prefix) must not be empty`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/d/harness.toml", []byte(tt.src))
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Contains(got, tt.want) {
				t.Fatalf("errors %q lack %q", got, tt.want)
			}
		})
	}
}
