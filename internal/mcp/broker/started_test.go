package broker

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

type startReport struct {
	unit string
	run  uint64
	err  error
}

// The supervisor learns whether each run came up (the connect timeout is
// long enough for a loaded CI machine to list a working upstream): at once for a working
// upstream, after the connect timeout for one that never answers
// initialize, and not at all for a run that was detached first.
func TestStarted_ReportsEachRunsStart(t *testing.T) {
	reports := make(chan startReport, 8)
	b := newBroker(t, Options{ConnectTimeout: 2 * time.Second}, map[string]Upstream{"mcp.good": {Key: "good"}, "mcp.mute": {Key: "mute"}, "mcp.gone": {Key: "gone"}})
	next := func() startReport {
		t.Helper()
		select {
		case r := <-reports:
			return r
		case <-time.After(15 * time.Second):
			t.Fatal("no start report")
			return startReport{}
		}
	}

	good := spawn(t, "good")
	serveRun(b, reports, "mcp.good", 1, good.stdin, good.stdout)
	if r := next(); r.unit != "mcp.good" || r.run != 1 || r.err != nil {
		t.Fatalf("report %+v, want mcp.good run 1 started", r)
	}

	// A real process that reads its stdin and never says a word.
	mute := exec.Command("sleep", "1000")
	in, _ := mute.StdinPipe()
	out, _ := mute.StdoutPipe()
	if err := mute.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Process.Kill(); mute.Wait() })
	began := time.Now()
	serveRun(b, reports, "mcp.mute", 4, in, out)
	r := next()
	if r.unit != "mcp.mute" || r.run != 4 || r.err == nil || !strings.Contains(r.err.Error(), "initialize") {
		t.Fatalf("report %+v, want mcp.mute run 4 failed in initialize", r)
	}
	if waited := time.Since(began); waited < 2*time.Second {
		t.Fatalf("failure reported after %s, before the connect timeout", waited)
	}

	gone := exec.Command("sleep", "1000")
	gin, _ := gone.StdinPipe()
	gout, _ := gone.StdoutPipe()
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gone.Process.Kill(); gone.Wait() })
	serveRun(b, reports, "mcp.gone", 2, gin, gout)
	b.Detach("mcp.gone", 2, time.Time{}, "exited")
	select {
	case r := <-reports:
		t.Fatalf("a detached run was reported: %+v", r)
	case <-time.After(600 * time.Millisecond):
	}
}
