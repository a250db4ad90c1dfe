package config

import (
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

func TestGatewayKeys(t *testing.T) {
	src := "[mcp.u]\ncmd='x'\npin='strict'\nrate='20/s'\nburst=40\ntools = { search = { rate = '2/s', burst = 2 }, slow = { rate = '30/m' } }\n" +
		"[mcp.v]\ncmd='x'\n[harness.a]\ncmd='x'\nmcp_rate='10/s'\n"
	c, err := Parse("/d/harness.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	u := c.Upstreams["u"]
	if u.Pin != api.PinStrict || u.Rate != (api.Rate{PerSecond: 20, Burst: 40}) ||
		u.ToolRates["search"] != (api.Rate{PerSecond: 2, Burst: 2}) || u.ToolRates["slow"] != (api.Rate{PerSecond: 0.5, Burst: 1}) {
		t.Errorf("upstream u: %+v", u)
	}
	if v := c.Upstreams["v"]; v.Pin != "" || v.Rate != (api.Rate{}) || v.ToolRates != nil {
		t.Errorf("upstream v has gateway settings it was not given: %+v", v)
	}
	if c.Harnesses["a"].MCPRate != (api.Rate{PerSecond: 10, Burst: 10}) {
		t.Errorf("mcp_rate: %+v", c.Harnesses["a"].MCPRate)
	}
}

func TestScenario_RateThatDoesNotParseIsAConfigErrorWithItsLine(t *testing.T) {
	src := "[mcp.u]\ncmd='x'\nrate='fast'\n[mcp.v]\ncmd='x'\ntools = { t = { rate = '2/d' } }\npin='maybe'\nburst=3\n[harness.a]\ncmd='x'\nmcp_rate='0/s'\n"
	_, err := Parse("/d/harness.toml", []byte(src))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`harness.toml:3: mcp.u.rate: rate "fast": want N/s, N/m or N/h`,
		`harness.toml:6: mcp.v.tools.t.rate: rate "2/d": unit "d" is not s, m or h`,
		`harness.toml:7: mcp.v.pin: invalid pin mode "maybe"`,
		`mcp.v.burst: burst needs a rate`,
		`harness.toml:11: harness.a.mcp_rate: rate "0/s": "0" is not a number > 0`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
