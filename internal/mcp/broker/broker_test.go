package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/demoupstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestSplitName(t *testing.T) {
	for _, tc := range []struct {
		in        string
		key, tool string
		ok        bool
	}{
		{"gitea__search", "gitea", "search", true},
		{"a__b__c", "a", "b__c", true},
		{"harness_list", "", "", false},
		{"__x", "", "", false},
		{"x__", "", "", false},
	} {
		key, tool, ok := SplitName(tc.in)
		if key != tc.key || tool != tc.tool || ok != tc.ok {
			t.Errorf("SplitName(%q) = %q, %q, %v; want %q, %q, %v", tc.in, key, tool, ok, tc.key, tc.tool, tc.ok)
		}
	}
}

// directTools lists the demo upstream's tools with a plain go-sdk client,
// as the reference the broker's pass-through is compared with.
func directTools(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- demoupstream.Serve(ctx, sr, sw, "direct") }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("direct demo upstream: %v", err)
		}
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

func TestToolsNamespacedWithSchemasUnchanged(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attach(t, b, "alpha", "alpha", 1)

	want := directTools(t)
	got := b.Tools("")
	if len(got) != len(want) {
		t.Fatalf("Tools = %v, want %d tools", toolNames(got), len(want))
	}
	for _, served := range got {
		tool := served.Tool
		key, name, ok := SplitName(tool.Name)
		if !ok || key != "alpha" {
			t.Fatalf("tool %q is not namespaced under alpha", tool.Name)
		}
		ref, ok := want[name]
		if !ok {
			t.Fatalf("tool %q has no upstream tool %q", tool.Name, name)
		}
		g, _ := json.Marshal(tool.InputSchema)
		w, _ := json.Marshal(ref.InputSchema)
		if string(g) != string(w) {
			t.Errorf("%s input schema\n got %s\nwant %s", tool.Name, g, w)
		}
		if tool.Description != ref.Description {
			t.Errorf("%s description %q, want %q", tool.Name, tool.Description, ref.Description)
		}
	}
	if ns, known := b.Known("", "alpha__echo"); !ns || !known {
		t.Errorf("Known(alpha__echo) = %v, %v", ns, known)
	}
	if ns, known := b.Known("", "alpha__nope"); !ns || known {
		t.Errorf("Known(alpha__nope) = %v, %v", ns, known)
	}
	if got := text(t, call(t, b, "", "alpha__echo", map[string]any{"text": "hi"})); got != "hi" {
		t.Errorf("echo = %q", got)
	}
	// Arguments left out reach the upstream as {}, not null.
	res, err := b.Call(context.Background(), "", "alpha__cancelled", nil, nil, nil, nil)
	if err != nil || res.IsError {
		t.Fatalf("call with nil args: %v %+v", err, res)
	}
	if st := b.Status(); len(st) != 1 || !st[0].Connected || st[0].Tools != len(want) || st[0].Key != "alpha" {
		t.Errorf("Status = %+v", st)
	}
}

func TestSameToolNameOnTwoUpstreams(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}, "beta": {Key: "beta"}})
	attach(t, b, "alpha", "alpha-server", 1)
	attach(t, b, "beta", "beta-server", 1)
	names := toolNames(b.Tools(""))
	if !slices.Contains(names, "alpha__search") || !slices.Contains(names, "beta__search") {
		t.Fatalf("Tools = %v", names)
	}
	for key, want := range map[string]string{"alpha": "alpha-server: results for q", "beta": "beta-server: results for q"} {
		if got := text(t, call(t, b, "", key+"__search", map[string]any{"query": "q"})); got != want {
			t.Errorf("%s__search = %q, want %q", key, got, want)
		}
	}
}

func TestProjectVisibility(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{
		"g":   {Key: "g"},
		"p/x": {Key: "x", Project: "p"},
	})
	attach(t, b, "g", "global", 1)
	attach(t, b, "p/x", "project", 1)

	hasX := func(project string) bool { return slices.Contains(toolNames(b.Tools(project)), "x__echo") }
	hasG := func(project string) bool { return slices.Contains(toolNames(b.Tools(project)), "g__echo") }
	if !hasX("p") || !hasG("p") {
		t.Errorf("project p sees %v", toolNames(b.Tools("p")))
	}
	if hasX("") || hasX("q") || !hasG("") || !hasG("q") {
		t.Errorf("global sees %v, project q sees %v", toolNames(b.Tools("")), toolNames(b.Tools("q")))
	}
	if got := text(t, call(t, b, "p", "x__search", map[string]any{"query": "a"})); got != "project: results for a" {
		t.Errorf("x__search from p = %q", got)
	}
	for _, project := range []string{"", "q"} {
		_, err := b.Call(context.Background(), project, "x__echo", args(t, map[string]any{"text": "a"}), nil, nil, nil)
		if !errors.Is(err, errcode.ErrUnknownNamespace) {
			t.Errorf("x__echo from %q: err = %v, want unknown_namespace", project, err)
		}
		if ns, _ := b.Known(project, "x__echo"); ns {
			t.Errorf("Known(%q, x__echo) says the namespace is known", project)
		}
	}
	_, err := b.Call(context.Background(), "p", "x__nope", args(t, map[string]any{}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUnknownTool) {
		t.Errorf("x__nope: err = %v, want unknown_tool", err)
	}
}

func TestKillDetachReattach(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	p1 := attach(t, b, "alpha", "first", 1)
	before := toolNames(b.Tools(""))

	p1.kill(t)
	next := time.Now().Add(90 * time.Second)
	b.Detach("alpha", 1, next, "killed by SIGKILL")
	_, err := b.Call(context.Background(), "", "alpha__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUpstreamUnavailable) {
		t.Fatalf("call while down: err = %v, want upstream_unavailable", err)
	}
	for _, want := range []string{"upstream alpha", next.Format("15:04:05"), "in 1m30s"} {
		if !strings.Contains(err.Error(), want) && !(want == "in 1m30s" && strings.Contains(err.Error(), "in 1m29s")) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if after := toolNames(b.Tools("")); !slices.Equal(before, after) {
		t.Errorf("tools while down = %v, want %v", after, before)
	}
	st := b.Status()[0]
	if st.Connected || st.LastError != "killed by SIGKILL" || !st.NextRetry.Equal(next) {
		t.Errorf("status while down = %+v", st)
	}

	// No attempt scheduled: the error says so.
	b.Detach("alpha", 1, time.Time{}, "gave up")
	_, err = b.Call(context.Background(), "", "alpha__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUpstreamUnavailable) || !strings.Contains(err.Error(), "not scheduled") {
		t.Errorf("call with no retry: err = %v", err)
	}

	attach(t, b, "alpha", "second", 2)
	if got := text(t, call(t, b, "", "alpha__search", map[string]any{"query": "z"})); got != "second: results for z" {
		t.Errorf("after re-attach: %q", got)
	}
	// A late Detach of the dead run must not take down the new one.
	b.Detach("alpha", 1, next, "stale")
	if got := text(t, call(t, b, "", "alpha__echo", map[string]any{"text": "still"})); got != "still" {
		t.Errorf("after stale detach: %q", got)
	}
}

func TestUpstreamErrorsNameTheUpstream(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attach(t, b, "alpha", "alpha", 1)

	res := call(t, b, "", "alpha__fail", map[string]any{"message": "disk full"})
	if !res.IsError || text(t, res) != "upstream alpha: disk full" {
		t.Errorf("fail = %+v (%q)", res, text(t, res))
	}
	_, err := b.Call(context.Background(), "", "alpha__boom", args(t, map[string]any{"message": "kaboom"}), nil, nil, nil)
	if err == nil || err.Error() != "broker: upstream alpha: tools/call boom: kaboom" {
		t.Fatalf("boom: err = %v", err)
	}
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Key != "alpha" || rpc.Err.Message != "kaboom" {
		t.Errorf("boom: error %#v is not an RPCError for alpha", err)
	}
	_, err = b.Call(context.Background(), "", "alpha__echo", json.RawMessage(`{"text":`), nil, nil, nil)
	if !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Errorf("invalid JSON args: err = %v", err)
	}
}

func TestSecretReachesOnlyTheChild(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attach(t, b, "alpha", "alpha", 1, "DEMO_SECRET=s3cr3t")
	if got := text(t, call(t, b, "", "alpha__env", map[string]any{"key": "DEMO_SECRET"})); got != "s3cr3t" {
		t.Errorf("env = %q", got)
	}
}

func TestConfigureRemovesUpstream(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}, "beta": {Key: "beta"}})
	attach(t, b, "alpha", "alpha", 1)
	fired := make(chan struct{}, 1)
	defer b.OnChange(func() {
		select {
		case fired <- struct{}{}:
		default:
		}
	})()
	b.Configure(map[string]Upstream{"beta": {Key: "beta"}})
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("no change event after removing alpha")
	}
	if names := toolNames(b.Tools("")); len(names) != 0 {
		t.Errorf("tools after removal = %v", names)
	}
	_, err := b.Call(context.Background(), "", "alpha__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUnknownNamespace) {
		t.Errorf("call to removed upstream: %v", err)
	}
	// beta was configured but never attached: it is starting-less and down.
	_, err = b.Call(context.Background(), "", "beta__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUpstreamUnavailable) {
		t.Errorf("call to never-attached upstream: %v", err)
	}
}

func TestNextAttempt(t *testing.T) {
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.Local)
	if got := nextAttempt(time.Time{}, now); got != "next attempt not scheduled" {
		t.Errorf("zero: %q", got)
	}
	if got := nextAttempt(now.Add(5*time.Second), now); got != "next attempt at 10:00:05 / in 5s" {
		t.Errorf("5s: %q", got)
	}
	if got := nextAttempt(now.Add(-time.Second), now); got != "next attempt at 09:59:59 / in 0s" {
		t.Errorf("past: %q", got)
	}
}

func TestWarningsAndShadowing(t *testing.T) {
	long := strings.Repeat("k", 60)
	b := newBroker(t, Options{}, map[string]Upstream{long: {Key: long}, "x": {Key: "x"}, "p/x": {Key: "x", Project: "p"}})
	attach(t, b, long, "long", 1)
	ws := b.Warnings()
	want := fmt.Sprintf("mcp.%s: tool search: namespaced name %s__search is %d characters, over 64", long, long, len(long)+8)
	if !slices.Contains(ws, want) {
		t.Errorf("Warnings = %q, want to contain %q", ws, want)
	}
	if !slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, "project p's upstream shadows") }) {
		t.Errorf("Warnings = %q, want a shadowing warning", ws)
	}
	for _, tool := range b.Tools("") {
		if len(tool.Tool.Name) > MaxNameLen {
			t.Errorf("served over-long name %s", tool.Tool.Name)
		}
	}
}
