package broker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

func TestClassifyHintOverrideAndExclude(t *testing.T) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	rw := &mcp.ToolAnnotations{DestructiveHint: new(bool)}
	p := Policy{
		ReadTools:    []string{"list_*", "both"},
		WriteTools:   []string{"get_secret", "b?th"},
		ExcludeTools: []string{"delete_*"},
	}
	for _, c := range []struct {
		name      string
		ann       *mcp.ToolAnnotations
		want      api.ToolClass
		wantsWarn bool
	}{
		{"read_file", ro, api.ToolClass{Class: api.Read, Why: api.WhyHint, Rule: "readOnlyHint: true"}, false},
		{"write_file", rw, api.ToolClass{Class: api.Write, Why: api.WhyHint, Rule: "readOnlyHint: false"}, false},
		{"bare", nil, api.ToolClass{Class: api.Write, Why: api.WhyHint, Rule: "no readOnlyHint"}, false},
		{"list_repos", nil, api.ToolClass{Class: api.Read, Why: api.WhyOverride, Rule: `read_tools "list_*"`}, false},
		{"get_secret", ro, api.ToolClass{Class: api.Write, Why: api.WhyOverride, Rule: `write_tools "get_secret"`}, false},
		{"both", ro, api.ToolClass{Class: api.Write, Why: api.WhyOverride, Rule: `write_tools "b?th" (read_tools "both" matches too; write wins)`}, true},
		{"delete_repo", ro, api.ToolClass{Why: api.WhyExcluded, Rule: `exclude_tools "delete_*"`}, false},
	} {
		got, warn := classify(p, "gh", c.name, c.ann)
		c.want.Tool, c.want.Name = c.name, "gh__"+c.name
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if (warn != "") != c.wantsWarn {
			t.Errorf("%s: warning %q", c.name, warn)
		}
		if c.wantsWarn && !strings.Contains(warn, "mcp.gh: tool both matches read_tools") {
			t.Errorf("%s: warning %q does not name the upstream and tool", c.name, warn)
		}
	}
}

// Classes come from the listing and the policy; a new policy re-classifies
// at once and tells the sessions; an excluded tool is listed nowhere and
// its call is refused as unknown; Permit sees the class the call resolved.
func TestBrokerClassesFollowThePolicy(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	// Listening from before the first listing, whose own notice comes
	// from the session's goroutine after the upstream shows connected:
	// it is awaited here, so that it cannot pass for a later one.
	fired := make(chan struct{}, 4)
	defer b.OnChange(func() { fired <- struct{}{} })()
	attach(t, b, "alpha", "alpha", 1)
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the first listing fired no change listener")
	}

	classes := func() map[string]api.Class {
		out := map[string]api.Class{}
		for _, tl := range b.Tools("") {
			if tl.Key != "alpha" {
				t.Errorf("tool %s has key %q", tl.Tool.Name, tl.Key)
			}
			out[tl.Tool.Name] = tl.Class
		}
		return out
	}
	got := classes()
	if got["alpha__echo"] != api.Read || got["alpha__add_tool"] != api.Write {
		t.Fatalf("classes by hint: %v", got)
	}
	var echoAnn *mcp.ToolAnnotations
	for _, tl := range b.Tools("") {
		if tl.Tool.Name == "alpha__echo" {
			echoAnn = tl.Tool.Annotations
		}
	}
	if echoAnn == nil || !echoAnn.ReadOnlyHint || !echoAnn.IdempotentHint {
		t.Fatalf("annotations not passed through: %+v", echoAnn)
	}

	b.Configure(map[string]Upstream{"alpha": {Key: "alpha", Tools: Policy{
		WriteTools: []string{"echo"}, ReadTools: []string{"add_tool", "echo"}, ExcludeTools: []string{"env"},
	}}})
	select {
	case <-fired:
	default:
		t.Fatal("a re-classification fired no change listener")
	}
	got = classes()
	if got["alpha__echo"] != api.Write || got["alpha__add_tool"] != api.Read {
		t.Fatalf("classes after the override: %v", got)
	}
	if _, ok := got["alpha__env"]; ok {
		t.Fatal("an excluded tool is still served")
	}
	if ns, known := b.Known("", "alpha__env"); !ns || known {
		t.Errorf("Known(alpha__env) = %v, %v; want namespace known, tool not", ns, known)
	}
	if !slices.ContainsFunc(b.Warnings(), func(w string) bool {
		return strings.Contains(w, `mcp.alpha: tool echo matches read_tools "echo" and write_tools "echo"`)
	}) {
		t.Errorf("no warning for a tool matched by both: %q", b.Warnings())
	}

	var st Status
	for _, s := range b.Status() {
		st = s
	}
	byTool := map[string]api.ToolClass{}
	for _, c := range st.ToolClasses {
		byTool[c.Tool] = c
	}
	if c := byTool["env"]; c.Why != api.WhyExcluded || c.Class != "" || c.Name != "alpha__env" {
		t.Errorf("status of env: %+v", c)
	}
	if c := byTool["search"]; c.Why != api.WhyHint || c.Class != api.Read {
		t.Errorf("status of search: %+v", c)
	}
	if len(st.ToolClasses) != 11 || st.Tools != 10 {
		t.Errorf("status lists %d classes and %d tools, want 11 (all listed) and 10 (served)", len(st.ToolClasses), st.Tools)
	}

	_, err := b.Call(context.Background(), "", "alpha__env", args(t, map[string]any{"key": "HOME"}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUnknownTool) || !strings.Contains(err.Error(), "exclude_tools") {
		t.Fatalf("call of an excluded tool: %v", err)
	}

	var seen []api.Class
	refuse := errors.New("refused by the test")
	permit := func(c api.Class) error {
		seen = append(seen, c)
		if c == api.Write {
			return refuse
		}
		return nil
	}
	if _, err := b.Call(context.Background(), "", "alpha__echo", args(t, map[string]any{"text": "x"}), permit, nil, nil); !errors.Is(err, refuse) {
		t.Fatalf("permit's refusal: %v", err)
	}
	res, err := b.Call(context.Background(), "", "alpha__search", args(t, map[string]any{"query": "q"}), permit, nil, nil)
	if err != nil || text(t, res) != "alpha: results for q" {
		t.Fatalf("permitted call: %v", err)
	}
	if _, err := b.Call(context.Background(), "", "alpha__nope", nil, permit, nil, nil); !errors.Is(err, errcode.ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
	if !slices.Equal(seen, []api.Class{api.Write, api.Read, ""}) {
		t.Errorf("permit saw %v", seen)
	}

	// The same policy again changes nothing and tells nobody.
	b.Configure(map[string]Upstream{"alpha": {Key: "alpha", Tools: Policy{
		WriteTools: []string{"echo"}, ReadTools: []string{"add_tool", "echo"}, ExcludeTools: []string{"env"},
	}}})
	select {
	case <-fired:
		t.Fatal("an unchanged policy fired a change listener")
	default:
	}
}
