package session

import (
	"testing"

	"github.com/harness-dev/harness/internal/errcode"
)

// TestTrajectoryToolsRouteToTheirOps: the trajectory pair is served from the
// facade registry like every read tool: list wraps its array, get passes its
// arguments unchanged, and a refusal keeps its code and message.
func TestTrajectoryToolsRouteToTheirOps(t *testing.T) {
	e := newEnv(t)
	e.ops.Results["list_trajectories"] = []map[string]any{{"run": 3, "entries": 2}}
	e.ops.Results["get_trajectory"] = map[string]any{"name": "job", "run": 3, "entries": []any{}, "next_cursor": 9, "truncated": false}
	cs, _ := e.connect(t, Identity{})

	if got := text(t, call(t, cs, "harness_list_trajectories", `{"name":"job"}`)); got != `{"trajectories":[{"entries":2,"run":3}]}` {
		t.Fatalf("list: %s", got)
	}
	args := `{"name":"job","run":3,"cursor":4,"max_bytes":512}`
	if res := call(t, cs, "harness_get_trajectory", args); res.IsError {
		t.Fatalf("get: %s", text(t, res))
	}
	calls := e.ops.Recorded()
	if len(calls) != 2 || calls[0].Op != "list_trajectories" || calls[1].Op != "get_trajectory" || calls[1].Args != args {
		t.Fatalf("recorded %+v", calls)
	}

	e.ops.Errs["list_trajectories"] = errcode.Errorf(errcode.NotPermitted, "set harvest_trajectory = true in [harness.web]")
	if code := errCode(t, call(t, cs, "harness_list_trajectories", `{"name":"web"}`)); code != errcode.NotPermitted {
		t.Fatalf("code %s, want not_permitted", code)
	}
	if code := errCode(t, call(t, cs, "harness_get_trajectory", `{"name":"web"}`)); code != errcode.InvalidArgument {
		t.Fatalf("get without run: code %s, want invalid_argument", code)
	}
}
