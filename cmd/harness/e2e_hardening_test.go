package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
)

// listTimes times n list calls on one connection to the daemon, as the CLI
// makes them (the CLI's own start is left out: it is what a loaded machine
// makes slow, not the daemon).
func (f *fleet) listTimes(n int) []time.Duration {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, f.socket)
	if err != nil {
		f.t.Fatal(err)
	}
	defer c.Close()
	var out []time.Duration
	for range n {
		var rows []api.UnitInfo
		start := time.Now()
		if err := c.Call(ctx, api.OpList, struct{}{}, &rows); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, time.Since(start))
	}
	slices.Sort(out)
	return out
}

// TestScenario_ACSIStormDoesNotFreezeTheDaemon: a harness that prints huge
// counts in a loop (`x\e[99999999b` froze `list`, `screen` and `stop` for
// minutes and burnt two cores, issue 36) leaves list answering within
// 100 ms, its screen readable and the unit stoppable within a second.
func TestScenario_ACSIStormDoesNotFreezeTheDaemon(t *testing.T) {
	script := `while :; do printf 'x\033[99999999b\033[99999999I\033[99999999Z\033[99999999X\033[99999999L\033[99999999S'; done`
	f := newFleet(t, fmt.Sprintf("[harness.storm]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nstop_grace = 2\n", script))
	before := f.listTimes(5)
	f.mustRun("start", "storm")
	f.waitFor("the storm to be busy", 10*time.Second, func() bool {
		var s screenJSON
		f.mustJSON(&s, "screen", "storm")
		return s.Activity == "busy"
	})
	during := f.listTimes(9)
	_, screenTook := f.runWithin(10*time.Second, "screen", "storm")
	_, stopTook := f.runWithin(10*time.Second, "stop", "storm")
	t.Logf("list before the storm %v, during %v; screen %v, stop %v (CLI runs)", before, during, screenTook, stopTook)
	// The median: a loaded machine (CI's, or 8 builds on 2 cores) stalls
	// single calls whatever the daemon does; a frozen daemon stalls them all.
	if med := during[len(during)/2]; med > 100*time.Millisecond {
		t.Errorf("list took %v (median) during the storm", med)
	}
	if stopTook > time.Second {
		t.Errorf("stop took %v", stopTook)
	}
	f.waitState("storm", "stopped")
}
