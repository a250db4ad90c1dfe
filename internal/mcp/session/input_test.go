package session

import (
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

// TestInputIsItsOwnClass: harness_send is seen and called only by a
// session granted input; read and write together do not reach it, nor
// does --allow-control, and a refused call changes nothing.
func TestInputIsItsOwnClass(t *testing.T) {
	e := newEnv(t)
	args := `{"name":"gemini","keys":["Enter"]}`

	e.auth.SetAllowed("web", "read", "write")
	rw, _ := e.connect(t, Identity{Harness: "web"})
	if got := mcptest.ToolNames(t, rw); slices.Contains(got, "harness_send") || !slices.Equal(got, allTools) {
		t.Fatalf("read+write session lists %v", got)
	}
	res := call(t, rw, "harness_send", args)
	if code := errCode(t, res); code != errcode.NotPermitted || !strings.Contains(text(t, res), "needs harness:input") {
		t.Fatalf("send under read+write: %s %s", code, text(t, res))
	}
	control, _ := e.connect(t, Identity{AllowControl: true})
	if code := errCode(t, call(t, control, "harness_send", args)); code != errcode.NotPermitted {
		t.Fatalf("send under --allow-control: %s", code)
	}
	if calls := e.ops.Recorded(); len(calls) != 0 {
		t.Fatalf("a refused send reached control: %+v", calls)
	}

	e.auth.SetAllowed("ops", "read", "harness:input")
	in, _ := e.connect(t, Identity{Harness: "ops"})
	if got := mcptest.ToolNames(t, in); !slices.Contains(got, "harness_send") || slices.Contains(got, "harness_stop") {
		t.Fatalf("read+harness:input session lists %v", got)
	}
	if res := call(t, in, "harness_send", args); res.IsError {
		t.Fatalf("send with input: %s", text(t, res))
	}
	calls := e.ops.Recorded()
	if len(calls) != 1 || calls[0].Op != "send" || calls[0].Args != args || calls[0].Caller.Harness != "ops" {
		t.Fatalf("recorded %+v", calls)
	}
	// The schema turns a misspelt or mistyped argument into invalid_argument
	// before control.
	for _, bad := range []string{`{"name":"gemini","key":"Enter"}`, `{"name":"gemini","keys":"Enter"}`, `{"text":"x"}`} {
		if code := errCode(t, call(t, in, "harness_send", bad)); code != errcode.InvalidArgument {
			t.Errorf("send %s: %s", bad, code)
		}
	}
	if n := len(e.ops.Recorded()); n != 1 {
		t.Fatalf("invalid sends reached control: %d calls", n)
	}
}
