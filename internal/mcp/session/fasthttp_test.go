package session

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestScenario_AStatelessResultNamesTheServerAsTheGoSDKWould: the fast
// path's stateless result carries the server in its _meta, beside the
// result's own _meta keys and not over a server it already names, and a
// "_meta" inside a text changes nothing else.
func TestScenario_AStatelessResultNamesTheServerAsTheGoSDKWould(t *testing.T) {
	f := &HTTPFast{l: &live{m: &Manager{version: "v9"}}}
	for _, c := range []struct{ in, want string }{
		{`{"content":[{"type":"text","text":"hi"}]}`,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"harness","version":"v9"}},"content":[{"type":"text","text":"hi"}]}`},
		{`{}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"harness","version":"v9"}}}`},
		{`{"_meta":{"x":1},"content":[]}`,
			`{"_meta":{"x":1,"io.modelcontextprotocol/serverInfo":{"name":"harness","version":"v9"}},"content":[]}`},
		{`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"content":[]}`,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"content":[]}`},
		{`{"content":[{"type":"text","text":"\"_meta\" is a key"}]}`,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"harness","version":"v9"}},"content":[{"type":"text","text":"\"_meta\" is a key"}]}`},
	} {
		got := f.stateless([]byte(c.in))
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: gave invalid JSON %s", c.in, got)
		}
		_ = json.Unmarshal([]byte(c.want), &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: gave %s, want %s", c.in, got, c.want)
		}
	}
}
